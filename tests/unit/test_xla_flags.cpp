// Tests for src/xla_flags.cpp: where XLA will dump, and XLA_FLAGS with the dumps nanscope reads.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "xla_flags.hpp"

namespace nanscope::xla {
namespace {

TEST(XlaFlags, TheDumpDirectoryTheFlagsName) {
  EXPECT_EQ(dump_dir_in_flags(""), "");
  EXPECT_EQ(dump_dir_in_flags("--xla_gpu_autotune_level=0"), "");
  EXPECT_EQ(dump_dir_in_flags("--xla_dump_to=/tmp/d --xla_gpu_autotune_level=0"), "/tmp/d");
  EXPECT_EQ(dump_dir_in_flags("  --xla_dump_to=/a\t--xla_dump_to=/b "), "/b") << "the last one given";
  EXPECT_EQ(dump_dir_in_flags("--xla_dump_to_other=/x"), "") << "another flag";
}

TEST(XlaFlags, TheUsersFlagsAreKeptAndTheDumpsAdded) {
  const FlagsWithDumps none = flags_with_dumps("", "/tmp/nanscope-xla-1");
  EXPECT_EQ(none.flags, "--xla_dump_to=/tmp/nanscope-xla-1 --xla_dump_hlo_as_text");
  EXPECT_EQ(none.dump_dir, "/tmp/nanscope-xla-1");
  EXPECT_FALSE(none.users_dir);
  const FlagsWithDumps theirs = flags_with_dumps("--xla_gpu_autotune_level=0", "/tmp/n");
  EXPECT_EQ(theirs.flags, "--xla_gpu_autotune_level=0 --xla_dump_to=/tmp/n --xla_dump_hlo_as_text");
  // Their own dump directory is the one read; their text flag stays as they set it.
  const FlagsWithDumps own = flags_with_dumps("--xla_dump_to=/data/d --xla_dump_hlo_as_text=true", "/tmp/n");
  EXPECT_EQ(own.flags, "--xla_dump_to=/data/d --xla_dump_hlo_as_text=true");
  EXPECT_EQ(own.dump_dir, "/data/d");
  EXPECT_TRUE(own.users_dir);
  EXPECT_TRUE(own.conflict.empty());
  const FlagsWithDumps off = flags_with_dumps("--xla_dump_to=/data/d --xla_dump_hlo_as_text=false", "/tmp/n");
  EXPECT_EQ(off.flags, "--xla_dump_to=/data/d --xla_dump_hlo_as_text=false");
  EXPECT_NE(off.conflict.find("--xla_dump_hlo_as_text=false"), std::string::npos);
}

TEST(XlaFlags, XlaRuntimesAreKnownByTheirObjectsFile) {
  EXPECT_TRUE(is_xla_runtime("/usr/lib/python3/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so"));
  EXPECT_TRUE(is_xla_runtime("/venv/lib/python3.10/site-packages/jaxlib/xla_extension.so"));
  EXPECT_TRUE(is_xla_runtime("/opt/tf/libtensorflow_framework.so.2"));
  EXPECT_TRUE(is_xla_runtime("xla_cuda_plugin.so"));
  EXPECT_FALSE(is_xla_runtime("/site-packages/jaxlib/_jax.so")) << "jaxlib's CPU side: no GPU kernel of its own";
  EXPECT_FALSE(is_xla_runtime("/site-packages/torch/lib/libtorch_cuda.so"));
  EXPECT_FALSE(is_xla_runtime("/data/xla_cuda_plugin/libother.so")) << "a directory of that name is not the plugin";
  EXPECT_FALSE(is_xla_runtime(""));
}

// The loaded objects are listed again only when one was loaded since; once jaxlib's plugin is
// loaded it is the runtime found (tests/unit/fake_xla: a library of that file name).
TEST(XlaFlags, TheLoadedXlaRuntimeIsFoundOnceItIsLoaded) {
  unsigned long long seen = 0;
  const std::string already = loaded_xla_runtime(seen);
  if (!already.empty()) GTEST_SKIP() << "an XLA runtime is loaded in this process already: " << already;
  EXPECT_NE(seen, 0u);
  const unsigned long long before = seen;
  EXPECT_EQ(loaded_xla_runtime(seen), "");
  EXPECT_EQ(seen, before) << "nothing loaded since";
  void* plugin = dlopen(FAKE_XLA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  EXPECT_EQ(loaded_xla_runtime(seen), FAKE_XLA_PLUGIN);
  EXPECT_GT(seen, before);
  unsigned long long at_that_look = seen;
  EXPECT_EQ(loaded_xla_runtime(at_that_look), "") << "not listed again when nothing was loaded since";
  unsigned long long from_the_start = 0;
  EXPECT_EQ(loaded_xla_runtime(from_the_start), FAKE_XLA_PLUGIN);
}

TEST(XlaFlags, WithoutDumpsTheReasonNamesTheRuntimeAndTheVariable) {
  const std::string advice = no_dumps_reason("/sp/jax_plugins/xla_cuda13/xla_cuda_plugin.so", false);
  EXPECT_NE(advice.find("XLA runs in this process (xla_cuda_plugin.so)"), std::string::npos) << advice;
  EXPECT_NE(advice.find("XLA_FLAGS=--xla_dump_to=DIR before the program starts"), std::string::npos) << advice;
  EXPECT_NE(advice.find("nanscope --"), std::string::npos) << advice;
  const std::string off = no_dumps_reason("/sp/jax_plugins/xla_cuda13/xla_cuda_plugin.so", true);
  EXPECT_NE(off.find("NANSCOPE_XLA_DUMP=off"), std::string::npos) << off;
  EXPECT_EQ(off.find("XLA_FLAGS"), std::string::npos) << "the user turned them off: no advice to turn them on";
}

}  // namespace
}  // namespace nanscope::xla

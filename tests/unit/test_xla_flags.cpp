// Tests for src/xla_flags.cpp: where XLA will dump, and XLA_FLAGS with the dumps nanscope reads.
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

}  // namespace
}  // namespace nanscope::xla

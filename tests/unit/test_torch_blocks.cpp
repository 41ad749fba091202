// The torch block loader (hooks/torch_blocks.cpp) against a fake libc10_cuda.so and a fake
// shim: finding torch and its version, the version gate, the shim's failures, the retry while
// torch's allocator is not initialised, and the events reaching block_of.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "torch_blocks.hpp"
#include "torch_shim_abi.h"

using nanscope::TorchBlockTracker;
using State = TorchBlockTracker::State;
namespace fs = std::filesystem;

namespace {

// A private copy of the fake torch per test process, so parallel ctest runs each write their
// own version.py beside their own libc10_cuda.so.
struct FakeTorch {
  fs::path root;
  explicit FakeTorch(const std::string& version) {
    root = fs::temp_directory_path() / ("nanscope_fake_torch_" + std::to_string(getpid()));
    const fs::path lib = root / "torch" / "lib" / "libc10_cuda.so";
    fs::create_directories(lib.parent_path());
    // Loaded by an earlier test of this process: the loader knows it by path, so never rewrite
    // a mapped library; just put the directory back for version.py.
    if (!dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD)) fs::copy_file(FAKE_C10_CUDA, lib);
    set_version(version);
    EXPECT_TRUE(dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL)) << dlerror();
  }
  void set_version(const std::string& v) const {
    std::ofstream(root / "torch" / "version.py") << "from typing import Optional\n\n__all__ = ['__version__']\n"
                                                 << "__version__ = '" << v << "'\ndebug = False\n";
  }
  ~FakeTorch() { fs::remove_all(root); }
};

TorchBlockTracker::Options fake_shim() {
  TorchBlockTracker::Options o;
  o.shim_path = FAKE_TORCH_SHIM;
  o.reprobe_every = 4;
  return o;
}

void emit(int action, uint64_t addr, uint64_t size) {
  void* h = dlopen(FAKE_TORCH_SHIM, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_TRUE(h);
  auto fn = reinterpret_cast<void (*)(int, unsigned long long, unsigned long long)>(dlsym(h, "fake_shim_emit"));
  ASSERT_TRUE(fn);
  fn(action, addr, size);
  dlclose(h);
}

constexpr uint64_t kSeg = 0x7f0000000000;

}  // namespace

TEST(TorchBlockVersion, ParsesVersionPy) {
  EXPECT_EQ(nanscope::parse_torch_version("x = 1\n__version__ = '2.11.0+cu130'\n"), "2.11.0+cu130");
  EXPECT_EQ(nanscope::parse_torch_version("__version__ = \"2.9.1\""), "2.9.1");
  EXPECT_FALSE(nanscope::parse_torch_version("__all__ = ['__version__']\n"));
  EXPECT_FALSE(nanscope::parse_torch_version("__version__ = ''\n"));
  EXPECT_FALSE(nanscope::parse_torch_version(""));
}

TEST(TorchBlockVersion, PublicPartMustMatchLocalCudaPartMayDiffer) {
  using nanscope::torch_versions_compatible;
  EXPECT_TRUE(torch_versions_compatible("2.11.0+cu130", "2.11.0+cu130"));
  EXPECT_TRUE(torch_versions_compatible("2.11.0+cu130", "2.11.0+cu128"));
  EXPECT_TRUE(torch_versions_compatible("2.11.0", "2.11.0+cu126"));  // a shim from version.h alone
  EXPECT_FALSE(torch_versions_compatible("2.11.0+cu130", "2.11.1+cu130"));
  EXPECT_FALSE(torch_versions_compatible("2.11.0+cu130", "2.10.0+cu130"));
  EXPECT_FALSE(torch_versions_compatible("2.11.0", "2.11.0.dev20260101+cu130"));  // nightlies differ
  EXPECT_FALSE(torch_versions_compatible("2.11.0+cu130", "2.11.0+rocm6.4"));
  EXPECT_FALSE(torch_versions_compatible("2.11.0+cu130", "2.11.0+cpu"));
  EXPECT_FALSE(torch_versions_compatible("", "2.11.0"));
}

TEST(TorchBlockTracker, NoTorchIsCheapAndKeepsWaiting) {
  TorchBlockTracker::Options o = fake_shim();
  o.c10_cuda = "libc10_cuda_nanscope_absent.so";
  TorchBlockTracker t(o);
  EXPECT_EQ(t.state(), State::kNotTried);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(t.try_attach());
  EXPECT_EQ(t.state(), State::kWaiting);
  EXPECT_NE(t.reason().find("torch not loaded"), std::string::npos) << t.reason();
  EXPECT_FALSE(t.block_of(kSeg));
}

TEST(TorchBlockTracker, AttachesSeedsAndFollowsEvents) {
  FakeTorch torch("2.11.0+cu130");
  TorchBlockTracker t(fake_shim());
  ASSERT_TRUE(t.try_attach()) << t.reason();
  EXPECT_EQ(t.state(), State::kAttached);
  EXPECT_EQ(t.torch_version(), "2.11.0+cu130");
  EXPECT_NE(t.reason().find("attached to torch 2.11.0+cu130 (1 live blocks"), std::string::npos) << t.reason();
  ASSERT_TRUE(t.block_of(kSeg + 31));  // the seeded block
  EXPECT_EQ(t.block_of(kSeg + 31)->size, 32u);
  EXPECT_TRUE(t.segment_of(kSeg + 4096));
  emit(NANSCOPE_TORCH_ALLOC, kSeg + 512, 64);
  ASSERT_TRUE(t.block_of(kSeg + 512 + 63));
  EXPECT_FALSE(t.block_of(kSeg + 512 + 64));
  emit(NANSCOPE_TORCH_FREE_COMPLETED, kSeg + 512, 64);
  EXPECT_FALSE(t.block_of(kSeg + 512));
  EXPECT_TRUE(t.try_attach());  // decided: one atomic load
}

TEST(TorchBlockTracker, VersionMismatchFailsOnceWithBothVersions) {
  FakeTorch torch("2.10.0+cu130");
  TorchBlockTracker t(fake_shim());
  EXPECT_FALSE(t.try_attach());
  EXPECT_EQ(t.state(), State::kFailed);
  EXPECT_NE(t.reason().find("built for torch 2.11.0+cu130, running 2.10.0+cu130"), std::string::npos) << t.reason();
  torch.set_version("2.11.0+cu130");
  EXPECT_FALSE(t.try_attach());  // final: no second attempt
}

TEST(TorchBlockTracker, MissingShimOrVersionFileIsAReason) {
  FakeTorch torch("2.11.0+cu130");
  TorchBlockTracker::Options o = fake_shim();
  o.shim_path = "/nonexistent/libnanscope_torch_shim.so";
  TorchBlockTracker t(o);
  EXPECT_FALSE(t.try_attach());
  EXPECT_EQ(t.state(), State::kFailed);
  EXPECT_NE(t.reason().find("cannot load the torch shim /nonexistent/"), std::string::npos) << t.reason();
  fs::remove(torch.root / "torch" / "version.py");
  TorchBlockTracker u(fake_shim());
  EXPECT_FALSE(u.try_attach());
  EXPECT_NE(u.reason().find("cannot read torch's __version__"), std::string::npos) << u.reason();
}

TEST(TorchBlockTracker, WaitsForTorchsAllocatorThenAttaches) {
  FakeTorch torch("2.11.0+cu130");
  setenv("FAKE_SHIM_RESULT", std::to_string(NANSCOPE_TORCH_NOT_INITIALIZED).c_str(), 1);
  TorchBlockTracker t(fake_shim());
  EXPECT_FALSE(t.try_attach());
  EXPECT_EQ(t.state(), State::kWaiting);
  EXPECT_NE(t.reason().find("not initialised"), std::string::npos) << t.reason();
  unsetenv("FAKE_SHIM_RESULT");
  bool attached = false;
  for (int i = 0; i < 8 && !attached; ++i) attached = t.try_attach();  // reprobe_every = 4
  EXPECT_TRUE(attached) << t.reason();
}

TEST(TorchBlockTracker, OtherBackendFailsWithItsReason) {
  FakeTorch torch("2.11.0+cu128");  // another CUDA build of the same release is accepted
  setenv("FAKE_SHIM_RESULT", std::to_string(NANSCOPE_TORCH_OTHER_BACKEND).c_str(), 1);
  TorchBlockTracker t(fake_shim());
  EXPECT_FALSE(t.try_attach());
  unsetenv("FAKE_SHIM_RESULT");
  EXPECT_EQ(t.state(), State::kFailed);
  EXPECT_NE(t.reason().find("cudaMallocAsync"), std::string::npos) << t.reason();
}

TEST(TorchBlockTracker, EventsAfterDestructionAreHarmless) {
  FakeTorch torch("2.11.0+cu130");
  {
    TorchBlockTracker t(fake_shim());
    ASSERT_TRUE(t.try_attach()) << t.reason();
  }
  emit(NANSCOPE_TORCH_ALLOC, kSeg + 4096, 64);  // torch still holds the tracker
}

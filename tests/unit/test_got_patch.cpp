// GOT patching on small libraries: libgot_caller_{lazy,now,noplt}.so import got_target_add
// from libgot_target.so (as libtorch_cuda.so imports cublasGemmEx from libcublas.so.13).
#include "got_patch.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

extern "C" int got_caller_lazy(int, int);
extern "C" int got_caller_now(int, int);
extern "C" int got_caller_noplt(int, int);
extern "C" int got_target_add(int, int);

namespace {

using AddFn = int (*)(int, int);
std::atomic<void*> g_original{nullptr};
std::atomic<int> g_calls{0};

int wrap_add(int a, int b) {
  ++g_calls;
  return reinterpret_cast<AddFn>(g_original.load())(a, b);  // calls through, result unchanged
}

const nanscope::got::Hook kHook[] = {{"got_target_add", reinterpret_cast<void*>(&wrap_add), &g_original}};

void* real_target() {
  void* lib = dlopen("libgot_target.so", RTLD_LAZY | RTLD_NOLOAD);
  void* fn = lib ? dlsym(lib, "got_target_add") : nullptr;
  if (lib) dlclose(lib);
  return fn;
}

nanscope::got::Options force() {
  nanscope::got::Options o;
  o.force = true;
  return o;
}

}  // namespace

// Each test patches and unpatches on its own (ctest runs every test in a fresh process). In a
// fresh process the lazy caller has never called, so its slot still points at its own PLT
// stub and the original comes from the library its symbol version names.
TEST(GotPatch, PatchesAllThreeSlotKindsAndCallsThrough) {
  const auto r = nanscope::got::patch_all(kHook, 1, force());
  EXPECT_TRUE(r.walked);
  EXPECT_EQ(r.patched, 3u);  // lazy JUMP_SLOT, -z now JUMP_SLOT (RELRO), -fno-plt GLOB_DAT (RELRO)
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(r.other_target, 0u);
  ASSERT_NE(real_target(), nullptr);
  EXPECT_EQ(g_original.load(), real_target());
  g_calls = 0;
  EXPECT_EQ(got_caller_lazy(2, 3), 5);
  EXPECT_EQ(got_caller_now(20, 3), 23);
  EXPECT_EQ(got_caller_noplt(200, 3), 203);
  EXPECT_EQ(g_calls.load(), 3);
  EXPECT_EQ(nanscope::got::unpatch_all(kHook, 1), 3u);
}

TEST(GotPatch, IdempotentAndCheapWhenNothingLoaded) {
  EXPECT_EQ(nanscope::got::patch_all(kHook, 1, force()).patched, 3u);
  auto r = nanscope::got::patch_all(kHook, 1, force());
  EXPECT_EQ(r.patched, 0u);
  EXPECT_EQ(r.already, 3u);
  r = nanscope::got::patch_all(kHook, 1);  // nothing loaded since: no walk at all
  EXPECT_FALSE(r.walked);
  EXPECT_EQ(r.objects, 0u);
  EXPECT_EQ(nanscope::got::unpatch_all(kHook, 1), 3u);
}

TEST(GotPatch, OwnObjectIsNeverPatched) {
  // This test executable holds got_patch.cpp (as libnanscope does) and calls the target
  // directly: its own slot must stay on the real function.
  nanscope::got::patch_all(kHook, 1, force());
  g_calls = 0;
  EXPECT_EQ(got_target_add(1, 1), 2);
  EXPECT_EQ(g_calls.load(), 0);
  nanscope::got::unpatch_all(kHook, 1);
}

TEST(GotPatch, UnpatchRestoresAndRepatchWorks) {
  EXPECT_EQ(nanscope::got::patch_all(kHook, 1, force()).patched, 3u);
  EXPECT_EQ(nanscope::got::unpatch_all(kHook, 1), 3u);
  g_calls = 0;
  EXPECT_EQ(got_caller_lazy(2, 3), 5);  // an unbound slot goes back to the lazy resolver
  EXPECT_EQ(got_caller_now(2, 3), 5);
  EXPECT_EQ(got_caller_noplt(2, 3), 5);
  EXPECT_EQ(g_calls.load(), 0);
  EXPECT_EQ(nanscope::got::patch_all(kHook, 1).patched, 3u);  // unpatch forgot the last walk
  EXPECT_EQ(got_caller_lazy(2, 3), 5);  // now a bound slot: the same original is kept
  EXPECT_EQ(g_calls.load(), 1);
  EXPECT_EQ(nanscope::got::unpatch_all(kHook, 1), 3u);
}

TEST(GotPatch, SkipNamesLeaveThoseLibrariesAlone) {
  nanscope::got::Options o = force();
  o.skip_names = {"got_caller_now", "got_caller_noplt"};
  EXPECT_EQ(nanscope::got::patch_all(kHook, 1, o).patched, 1u);
  g_calls = 0;
  got_caller_now(1, 2);
  got_caller_noplt(1, 2);
  EXPECT_EQ(g_calls.load(), 0);
  got_caller_lazy(1, 2);
  EXPECT_EQ(g_calls.load(), 1);
  EXPECT_EQ(nanscope::got::unpatch_all(kHook, 1), 1u);
}

TEST(GotPatch, NoHooksNoChange) {
  const auto r = nanscope::got::patch_all(nullptr, 0, force());
  EXPECT_EQ(r.patched, 0u);
  EXPECT_GT(r.objects, 3u);
}

namespace {

// Page -> permissions ("r--p", "rw-p", ...) of the test callers' mappings, from /proc/self/maps.
std::map<uintptr_t, std::string> caller_page_perms() {
  std::map<uintptr_t, std::string> pages;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("libgot_caller") == std::string::npos) continue;
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    const uintptr_t begin = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    for (uintptr_t p = begin; p < end; p += 4096) pages[p] = perms;
  }
  return pages;
}

}  // namespace

// The RELRO pages written through go back to read-only, and no writable page is left
// read-only (glibc leaves a partial last RELRO page writable).
TEST(GotPatch, PageProtectionsUnchanged) {
  const auto before = caller_page_perms();
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(nanscope::got::patch_all(kHook, 1, force()).patched, 3u);
  EXPECT_EQ(caller_page_perms(), before);
  EXPECT_EQ(nanscope::got::unpatch_all(kHook, 1), 3u);
  EXPECT_EQ(caller_page_perms(), before);
}

// The helpers both interceptors use: a hook by name, and a symbol from the library that defines
// an original (cudnnGetStream beside cudnnBackendExecute), never from another one.
TEST(GotPatch, FindHookAndSiblingSymbol) {
  EXPECT_EQ(nanscope::got::find_hook(kHook, 1, "got_target_add"), &kHook[0]);
  EXPECT_EQ(nanscope::got::find_hook(kHook, 1, "got_target_sub"), nullptr);
  EXPECT_EQ(nanscope::got::find_hook(kHook, 1, nullptr), nullptr);
  void* target = real_target();
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(nanscope::got::sibling_symbol(target, "got_target_add"), target);
  EXPECT_EQ(nanscope::got::sibling_symbol(target, "got_caller_lazy"), nullptr);  // another library's
  EXPECT_EQ(nanscope::got::sibling_symbol(nullptr, "got_target_add"), nullptr);
  int on_the_stack = 0;
  EXPECT_EQ(nanscope::got::sibling_symbol(&on_the_stack, "got_target_add"), nullptr);
}

// Run-time lookups (hooks/dlsym_intercept.hpp): the adoption rule on its own, then the whole path
// on a library that calls dlsym (tests/unit/got/dlsym_caller.cpp) and the real libcublasLt.
#include "dlsym_intercept.hpp"

#include <cublasLt.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "gemm_intercept.hpp"
#include "got_library.hpp"

namespace nanscope {
namespace {

// A one-function library interceptor, as gemm/cudnn/nccl are (got_library.hpp).
int g_after_walks = 0;
int w_cublasNsTest(int a) { return a; }
struct TestTraits {
  static constexpr std::size_t kCount = 1;
  using Sink = int;
  static const got::Hook* table();
  static void after_walk() { ++g_after_walks; }
};
using Lib = got::Library<TestTraits>;
const got::Hook kTestHooks[] = {{"cublasNsTest", reinterpret_cast<void*>(&w_cublasNsTest), &Lib::originals[0]}};
const got::Hook* TestTraits::table() { return kTestHooks; }

int first_copy(int a) { return a + 1; }
int second_copy(int a) { return a + 2; }

void* fn(int (*f)(int)) { return reinterpret_cast<void*>(f); }

TEST(DlsymHook, OnlyTheFirstCopyFoundIsAdopted) {
  const dlsym_hook::Adopt adopters[] = {&Lib::adopt};
  void* wrapper = fn(&w_cublasNsTest);
  EXPECT_EQ(dlsym_hook::adopted(adopters, "cublasNsTest", fn(&first_copy)), wrapper);
  EXPECT_EQ(Lib::originals[0].load(), fn(&first_copy));
  EXPECT_EQ(g_after_walks, 1);  // the helpers beside the new original are looked for once
  EXPECT_EQ(dlsym_hook::adopted(adopters, "cublasNsTest", fn(&first_copy)), wrapper);  // again: same
  EXPECT_EQ(g_after_walks, 1);
  // A second copy of the library: its caller keeps it (the wrapper would call the first).
  EXPECT_EQ(dlsym_hook::adopted(adopters, "cublasNsTest", fn(&second_copy)), fn(&second_copy));
  EXPECT_EQ(Lib::originals[0].load(), fn(&first_copy));
  // Nothing found, a name nobody hooks, the wrapper itself: passed on as found.
  EXPECT_EQ(dlsym_hook::adopted(adopters, "cublasNsTest", nullptr), nullptr);
  EXPECT_EQ(dlsym_hook::adopted(adopters, "cublasOther", fn(&first_copy)), fn(&first_copy));
  EXPECT_EQ(dlsym_hook::adopted(adopters, "PyInit_x", fn(&first_copy)), fn(&first_copy));
  EXPECT_EQ(dlsym_hook::adopted(adopters, "cublasNsTest", wrapper), wrapper);
  EXPECT_EQ(dlsym_hook::adopted(adopters, nullptr, fn(&first_copy)), fn(&first_copy));
}

#if defined(__x86_64__) && defined(__linux__)
using LookupFn = void* (*)(void*, const char*);
using LtMatmulFn = decltype(&cublasLtMatmul);

std::vector<GemmCall> g_seen;
void record(void*, const GemmCall& c) { g_seen.push_back(c); }

cublasStatus_t fake_lt_matmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                              cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*, const void*,
                              cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*,
                              void*, size_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}

// XLA's plugin asks dlsym(handle, "cublasLtMatmul") at its first GEMM: once the dlsym slots are
// patched it gets the GEMM wrapper, whose original is the function dlsym found and whose layout
// getter is found beside it. RTLD_DEFAULT and RTLD_NEXT lookups still resolve for the caller.
TEST(DlsymHook, ALookupOfCublasLtMatmulGetsTheGemmWrapper) {
  void* caller = dlopen(NANSCOPE_GOT_DLSYM_CALLER, RTLD_NOW | RTLD_LOCAL);
  void* lt = dlopen(NANSCOPE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(caller, nullptr) << dlerror();
  if (!lt) GTEST_SKIP() << "libcublasLt.so.13 not loadable";
  auto lookup = reinterpret_cast<LookupFn>(dlsym(caller, "dlsym_caller_lookup"));
  ASSERT_NE(lookup, nullptr);
  void* real = dlsym(lt, "cublasLtMatmul");
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(lookup(lt, "cublasLtMatmul"), real);
  void* next = lookup(RTLD_NEXT, "ns_probe");  // the probe library's, after the caller
  void* local = lookup(RTLD_DEFAULT, "ns_probe_next");  // in the caller's own scope only
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next, dlsym(caller, "ns_probe"));
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "ns_probe_next"), nullptr);  // not ours to see: RTLD_LOCAL

  gemm::set_original("cublasLtMatmul", nullptr);
  gemm::set_helpers(nullptr, nullptr);
  const got::Report r = dlsym_hook::patch_all(true);
  EXPECT_GE(r.patched, 1u);
  EXPECT_EQ(r.failed, 0u);
  void* got = lookup(lt, "cublasLtMatmul");
  EXPECT_EQ(got, gemm::wrapper("cublasLtMatmul"));
  EXPECT_EQ(lookup(lt, "cublasLtMatrixLayoutCreate"), dlsym(lt, "cublasLtMatrixLayoutCreate"));  // not hooked
  EXPECT_EQ(lookup(RTLD_NEXT, "ns_probe"), next);
  EXPECT_EQ(lookup(RTLD_DEFAULT, "ns_probe_next"), local);
  EXPECT_EQ(lookup(lt, "no_such_function"), nullptr);

  // Through the wrapper, the real function's own error (a null handle: no GPU needed) is unchanged.
  auto wrapped = reinterpret_cast<LtMatmulFn>(got);
  auto direct = reinterpret_cast<LtMatmulFn>(real);
  EXPECT_EQ(wrapped(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr, nullptr, nullptr, 0, nullptr),
            direct(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                   nullptr, nullptr, nullptr, 0, nullptr));
  // A successful call reports D's layout, read through the getter found beside the adopted original.
  auto create = reinterpret_cast<decltype(&cublasLtMatrixLayoutCreate)>(dlsym(lt, "cublasLtMatrixLayoutCreate"));
  auto destroy = reinterpret_cast<decltype(&cublasLtMatrixLayoutDestroy)>(dlsym(lt, "cublasLtMatrixLayoutDestroy"));
  cublasLtMatrixLayout_t d = nullptr;
  ASSERT_EQ(create(&d, CUDA_R_32F, 1024, 4096, 1024), CUBLAS_STATUS_SUCCESS);
  gemm::set_gemm_sink(&record, nullptr);
  gemm::set_original("cublasLtMatmul", reinterpret_cast<void*>(&fake_lt_matmul));
  float dbuf = 0;
  EXPECT_EQ(wrapped(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &dbuf, d,
                    nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  gemm::set_gemm_sink(nullptr, nullptr);
  ASSERT_EQ(g_seen.size(), 1u);
  EXPECT_EQ(g_seen[0].d_ptr, reinterpret_cast<uint64_t>(&dbuf));
  EXPECT_EQ(g_seen[0].rows, 1024u);
  EXPECT_EQ(g_seen[0].cols, 4096u);
  destroy(d);

  std::size_t n = 0;
  const got::Hook* hooks = dlsym_hook::hooks(&n);
  EXPECT_GE(got::unpatch_all(hooks, n), 1u);
  EXPECT_EQ(lookup(lt, "cublasLtMatmul"), real);  // glibc's dlsym again
}
#endif

}  // namespace
}  // namespace nanscope

// The GEMM wrappers with fake originals (no GPU, no GOT): arguments and status pass through
// unchanged, the thread marker covers exactly the call, the sink gets D's layout. The
// cublasLt layout decoding runs against the real libcublasLt.so.13 when it can be loaded.
#include "gemm_intercept.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include <cublasLt.h>
#include <cublas_api.h>

using namespace nanscope;

namespace {

std::vector<GemmCall> g_seen;
void record(void*, const GemmCall& c) { g_seen.push_back(c); }
void discard(void*, const GemmCall&) {}

cudaStream_t const kStream = reinterpret_cast<cudaStream_t>(0x5150);
cublasStatus_t fake_get_stream(cublasHandle_t, cudaStream_t* s) { return *s = kStream, CUBLAS_STATUS_SUCCESS; }

cublasStatus_t g_status = CUBLAS_STATUS_SUCCESS;
int g_kernels = 0;           // kernels the fake "launches" (as the launch callback would count)
const void* g_seen_c = nullptr;
const char* g_api_inside = nullptr;

using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*,
                                    void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t fake_gemm_ex(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void* C,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) {
  g_seen_c = C;
  const libcall::LibraryCall* call = libcall::current();
  g_api_inside = call ? call->api : nullptr;
  for (int i = 0; i < g_kernels; ++i) libcall::note_kernel_launch();
  return g_status;
}

using StridedFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                     const __half*, const __half*, int, long long, const __half*, int, long long,
                                     const __half*, __half*, int, long long, int);
cublasStatus_t fake_hgemm_strided(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int, int, int,
                                  const __half*, const __half*, int, long long, const __half*, int, long long,
                                  const __half*, __half*, int, long long, int) {
  // Nested: a library call made from inside another is the outer call's, never reported twice.
  auto inner = reinterpret_cast<GemmExFn>(gemm::wrapper("cublasGemmEx"));
  inner(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, nullptr, nullptr, CUDA_R_32F, 1, nullptr, CUDA_R_32F, 1, nullptr,
        nullptr, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return CUBLAS_STATUS_SUCCESS;
}

using LtMatmulFn = cublasStatus_t (*)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                                      cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,
                                      const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                      const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
libcall::LibraryCall g_call_inside{};  // the marker as the call's kernels see it
cublasStatus_t fake_lt_matmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                              cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*, const void*,
                              cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*,
                              void*, size_t, cudaStream_t) {
  libcall::note_kernel_launch();
  if (const libcall::LibraryCall* call = libcall::current()) g_call_inside = *call;
  return CUBLAS_STATUS_SUCCESS;
}

GemmExFn gemm_ex() {
  gemm::set_original("cublasGemmEx", reinterpret_cast<void*>(&fake_gemm_ex));
  gemm::set_helpers(reinterpret_cast<void*>(&fake_get_stream), nullptr);
  return reinterpret_cast<GemmExFn>(gemm::wrapper("cublasGemmEx"));
}

cublasStatus_t call_gemm_ex(GemmExFn fn, void* c, int m = 64, int n = 32, int ldc = 80) {
  return fn(nullptr, CUBLAS_OP_N, CUBLAS_OP_T, m, n, 16, nullptr, nullptr, CUDA_R_16F, 64, nullptr, CUDA_R_16F, 32,
            nullptr, c, CUDA_R_16F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

struct SinkGuard {
  explicit SinkGuard(gemm::GemmSink fn = &record) { g_seen.clear(), gemm::set_gemm_sink(fn, nullptr); }
  ~SinkGuard() { gemm::set_gemm_sink(nullptr, nullptr), g_status = CUBLAS_STATUS_SUCCESS, g_kernels = 0; }
};

}  // namespace

TEST(GemmIntercept, EveryHookHasAWrapperAndAName) {
  std::size_t count = 0;
  const got::Hook* hooks = gemm::hooks(&count);
  EXPECT_EQ(count, 39u);  // Lt, 6 Ex, 2 SgemmEx, 30 typed (5 types x 3 families x int/int64)
  for (std::size_t i = 0; i < count; ++i) {
    EXPECT_NE(hooks[i].wrapper, nullptr);
    EXPECT_EQ(gemm::wrapper(hooks[i].name), hooks[i].wrapper);
  }
  EXPECT_EQ(gemm::wrapper("cublasNotAGemm"), nullptr);
}

TEST(GemmIntercept, NoSinkJustCallsThrough) {
  GemmExFn fn = gemm_ex();
  int c = 0;
  EXPECT_EQ(call_gemm_ex(fn, &c), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(g_seen_c, &c);
  EXPECT_EQ(g_api_inside, nullptr);  // no marker without an observer
}

TEST(GemmIntercept, SuccessReportsDAfterTheMarkerIsCleared) {
  SinkGuard sink;
  GemmExFn fn = gemm_ex();
  g_kernels = 3;
  int c = 0;
  EXPECT_EQ(call_gemm_ex(fn, &c), CUBLAS_STATUS_SUCCESS);
  EXPECT_STREQ(g_api_inside, "cublasGemmEx");
  EXPECT_EQ(libcall::current(), nullptr);
  EXPECT_EQ(libcall::note_kernel_launch(), 0u);
  ASSERT_EQ(g_seen.size(), 1u);
  const GemmCall& g = g_seen[0];
  EXPECT_STREQ(g.api, "cublasGemmEx");
  EXPECT_NE(g.call_id, 0u);
  EXPECT_EQ(g.stream, reinterpret_cast<uint64_t>(kStream));
  EXPECT_EQ(g.d_ptr, reinterpret_cast<uint64_t>(&c));
  EXPECT_TRUE(g.c_is_d);
  EXPECT_EQ(g.dtype, static_cast<int>(DType::f16));
  EXPECT_EQ(g.rows, 64u);
  EXPECT_EQ(g.cols, 32u);
  EXPECT_EQ(g.ld, 80u);
  EXPECT_EQ(g.kernels_launched, 3u);
  const GemmExtent e = gemm_extent(g);
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.span, 31u * 80u + 64u);
}

TEST(GemmIntercept, ErrorsPassThroughUnreported) {
  SinkGuard sink;
  GemmExFn fn = gemm_ex();
  g_status = CUBLAS_STATUS_INVALID_VALUE;
  int c = 0;
  EXPECT_EQ(call_gemm_ex(fn, &c, -1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_TRUE(g_seen.empty());
  EXPECT_EQ(libcall::current(), nullptr);
}

TEST(GemmIntercept, CallIdsDiffer) {
  SinkGuard sink;
  GemmExFn fn = gemm_ex();
  int c = 0;
  call_gemm_ex(fn, &c);
  call_gemm_ex(fn, &c);
  ASSERT_EQ(g_seen.size(), 2u);
  EXPECT_NE(g_seen[0].call_id, g_seen[1].call_id);
}

TEST(GemmIntercept, NestedCallBelongsToTheOuterOne) {
  SinkGuard sink;
  gemm_ex();
  gemm::set_original("cublasHgemmStridedBatched", reinterpret_cast<void*>(&fake_hgemm_strided));
  auto fn = reinterpret_cast<StridedFn>(gemm::wrapper("cublasHgemmStridedBatched"));
  __half c[1];
  g_api_inside = nullptr;
  EXPECT_EQ(fn(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 4, nullptr, nullptr, 16, 64, nullptr, 4, 32, nullptr, c,
               16, 128, 6),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_STREQ(g_api_inside, "cublasHgemmStridedBatched");  // the inner saw the outer's marker
  ASSERT_EQ(g_seen.size(), 1u);
  EXPECT_STREQ(g_seen[0].api, "cublasHgemmStridedBatched");
  EXPECT_EQ(g_seen[0].batch, 6u);
  EXPECT_EQ(g_seen[0].batch_stride, 128);
  EXPECT_EQ(g_seen[0].cuda_type, CUDA_R_16F);
}

namespace {

struct RealLt {
  void* lib = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) create = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) set = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) destroy = nullptr;
  void* get = nullptr;
  RealLt() {
    lib = dlopen(NANSCOPE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasLtMatrixLayoutCreate"));
    set = reinterpret_cast<decltype(set)>(dlsym(lib, "cublasLtMatrixLayoutSetAttribute"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasLtMatrixLayoutDestroy"));
    get = dlsym(lib, "cublasLtMatrixLayoutGetAttribute");
  }
  bool ok() const { return create && set && destroy && get; }
};

RealLt& real_lt() {
  static RealLt lt;
  return lt;
}

LtMatmulFn lt_matmul_with_real_layouts() {
  gemm::set_original("cublasLtMatmul", reinterpret_cast<void*>(&fake_lt_matmul));
  gemm::set_helpers(nullptr, real_lt().get);
  return reinterpret_cast<LtMatmulFn>(gemm::wrapper("cublasLtMatmul"));
}

}  // namespace

TEST(GemmInterceptLt, LayoutReadBackFromTheRealLibrary) {
  RealLt& lt = real_lt();
  if (!lt.ok()) GTEST_SKIP() << "libcublasLt.so.13 not loadable: " << dlerror();
  cublasLtMatrixLayout_t d = nullptr;
  ASSERT_EQ(lt.create(&d, CUDA_R_16BF, 100, 3, 128), CUBLAS_STATUS_SUCCESS);  // no GPU needed
  const int32_t order = CUBLASLT_ORDER_ROW, batch = 4;
  const int64_t stride = 100 * 128;  // row-major: 100 rows of ld 128 per batch
  lt.set(d, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order));
  lt.set(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
  lt.set(d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
  SinkGuard sink;
  LtMatmulFn fn = lt_matmul_with_real_layouts();
  int dbuf = 0, cbuf = 0;
  EXPECT_EQ(fn(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &cbuf, d, &dbuf, d, nullptr,
               nullptr, 0, kStream),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(g_seen.size(), 1u);
  const GemmCall& g = g_seen[0];
  EXPECT_EQ(g.stream, reinterpret_cast<uint64_t>(kStream));  // the call's own argument
  EXPECT_EQ(g.cuda_type, CUDA_R_16BF);
  EXPECT_EQ(g.dtype, static_cast<int>(DType::bf16));
  EXPECT_EQ(g.rows, 100u);
  EXPECT_EQ(g.cols, 3u);
  EXPECT_EQ(g.ld, 128u);
  EXPECT_EQ(g.order, kGemmOrderRow);
  EXPECT_EQ(g.batch, 4u);
  EXPECT_EQ(g.batch_stride, stride);
  EXPECT_FALSE(g.pointer_array);
  EXPECT_FALSE(g.c_is_d);
  EXPECT_EQ(g.c_ptr, reinterpret_cast<uint64_t>(&cbuf));
  EXPECT_EQ(g.kernels_launched, 1u);
  const GemmExtent e = gemm_extent(g);  // row-major 100 x 3, ld 128: 100 lines of 3
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_EQ(e.inner, 3u);
  EXPECT_EQ(e.lines, 100u);
  EXPECT_EQ(e.written, 4u * 300u);
  lt.destroy(d);
}

// While the call runs, its kernels' enter sites know what it writes: D over its layout's span
// (a bf16 100 x 3 column-major D, ld 128: two full columns and 100 rows of the third) and the
// workspace; a word inside either is an interior pointer, one just past them is not.
TEST(GemmInterceptLt, TheCallsWritesAreDsSpanAndItsWorkspace) {
  RealLt& lt = real_lt();
  if (!lt.ok()) GTEST_SKIP() << "libcublasLt.so.13 not loadable: " << dlerror();
  cublasLtMatrixLayout_t d = nullptr;
  ASSERT_EQ(lt.create(&d, CUDA_R_16BF, 100, 3, 128), CUBLAS_STATUS_SUCCESS);
  SinkGuard sink;
  LtMatmulFn fn = lt_matmul_with_real_layouts();
  struct Memory {  // D, then the workspace, each followed by memory the call does not write
    uint16_t d[3 * 128];
    char gap[64];
    char ws[4096];
    char after[64];
  };
  alignas(16) static Memory m;
  uint16_t* dbuf = m.d;
  char* ws = m.ws;
  g_call_inside = {};
  EXPECT_EQ(fn(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, d, dbuf, d, nullptr,
               ws, sizeof(m.ws), kStream),
            CUBLAS_STATUS_SUCCESS);
  const auto base = reinterpret_cast<uint64_t>(dbuf), work = reinterpret_cast<uint64_t>(ws);
  ASSERT_EQ(g_call_inside.write_count, 2u);
  EXPECT_EQ(g_call_inside.writes[0].ptr, base);
  EXPECT_EQ(g_call_inside.writes[0].bytes, (2 * 128 + 100) * 2u);
  EXPECT_EQ(g_call_inside.writes[1].ptr, work);
  EXPECT_EQ(g_call_inside.writes[1].bytes, sizeof(m.ws));
  EXPECT_TRUE(g_call_inside.writes_bounded);
  EXPECT_TRUE(g_call_inside.writes_within(base + 2 * 128 * 2));  // the third column's start
  EXPECT_FALSE(g_call_inside.writes_within(base + (2 * 128 + 100) * 2));
  EXPECT_TRUE(g_call_inside.writes_within(work + 4095));
  EXPECT_FALSE(g_call_inside.writes_within(work + 4096));
  // No workspace: D alone.
  EXPECT_EQ(fn(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, d, dbuf, d, nullptr,
               nullptr, 4096, kStream),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(g_call_inside.write_count, 1u);
  lt.destroy(d);
}

TEST(GemmInterceptLt, PointerArrayModeAndDefaults) {
  RealLt& lt = real_lt();
  if (!lt.ok()) GTEST_SKIP() << "libcublasLt.so.13 not loadable";
  cublasLtMatrixLayout_t d = nullptr;
  ASSERT_EQ(lt.create(&d, CUDA_R_32F, 64, 64, 64), CUBLAS_STATUS_SUCCESS);
  const uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
  const bool has_mode = lt.set(d, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof(mode)) == CUBLAS_STATUS_SUCCESS;
  SinkGuard sink;
  LtMatmulFn fn = lt_matmul_with_real_layouts();
  int dbuf = 0;
  fn(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &dbuf, d, &dbuf, d, nullptr, nullptr, 0,
     nullptr);
  ASSERT_EQ(g_seen.size(), 1u);
  EXPECT_EQ(g_seen[0].order, kGemmOrderCol);
  EXPECT_EQ(g_seen[0].batch, 1u);
  EXPECT_TRUE(g_seen[0].c_is_d);
  EXPECT_EQ(g_seen[0].pointer_array, has_mode);
  lt.destroy(d);
}

TEST(GemmInterceptLt, UnreadableLayoutIsReportedUnknown) {
  SinkGuard sink;
  gemm::set_original("cublasLtMatmul", reinterpret_cast<void*>(&fake_lt_matmul));
  gemm::set_helpers(nullptr, nullptr);  // libcublasLt's getter not found
  auto fn = reinterpret_cast<LtMatmulFn>(gemm::wrapper("cublasLtMatmul"));
  int dbuf = 0;
  fn(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &dbuf, nullptr, nullptr,
     nullptr, 0, nullptr);
  ASSERT_EQ(g_seen.size(), 1u);
  EXPECT_EQ(g_seen[0].cuda_type, -1);
  EXPECT_FALSE(gemm_extent(g_seen[0]).ok);
}

namespace {

template <class Fn>
double ns_per_call(Fn&& fn, int n = 200000) {
  for (int i = 0; i < 1000; ++i) fn();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}

}  // namespace

// The wrapper's host cost per call against calling the fake original directly. Printed for
// docs/library-calls.md; the bound is loose (a shared CI core), the figure is what counts.
TEST(GemmInterceptCost, NanosecondsPerCall) {
  int c = 0;
  GemmExFn fn = gemm_ex();
  GemmExFn direct = &fake_gemm_ex;
  const double base = ns_per_call([&] { call_gemm_ex(direct, &c); });
  const double off = ns_per_call([&] { call_gemm_ex(fn, &c); });
  double on = 0, lt_on = 0;
  {
    SinkGuard sink(&discard);
    on = ns_per_call([&] { call_gemm_ex(fn, &c); });
    if (real_lt().ok()) {
      cublasLtMatrixLayout_t d = nullptr;
      real_lt().create(&d, CUDA_R_16F, 4096, 4096, 4096);
      LtMatmulFn lt = lt_matmul_with_real_layouts();
      lt_on = ns_per_call([&] {
        lt(nullptr, nullptr, nullptr, nullptr, d, nullptr, d, nullptr, &c, d, &c, d, nullptr, nullptr, 0, nullptr);
      });
      real_lt().destroy(d);
    }
  }
  std::printf("gemm wrapper ns/call: direct %.1f, no sink %.1f, GemmEx with sink %.1f, LtMatmul with sink "
              "(8 real layout reads) %.1f\n",
              base, off, on, lt_on);
  EXPECT_LT(on - base, 5000.0);
}

#ifdef NANSCOPE_GOT_LT_CALLER
// The whole path on a real importer: gemm::patch_all() patches its cublasLtMatmul slot, finds
// the layout getter in the libcublasLt it resolved to, and the call reports D's layout.
TEST(GemmInterceptLt, PatchAllPatchesARealImporter) {
  RealLt& lt = real_lt();
  void* caller = dlopen(NANSCOPE_GOT_LT_CALLER, RTLD_NOW | RTLD_LOCAL);
  if (!lt.ok() || !caller) GTEST_SKIP() << "libcublasLt.so.13 or the test importer not loadable";
  using CallFn = cublasStatus_t (*)(void*, cublasLtMatrixLayout_t, cudaStream_t);
  auto call = reinterpret_cast<CallFn>(dlsym(caller, "got_lt_call"));
  ASSERT_NE(call, nullptr);
  cublasLtMatrixLayout_t d = nullptr;
  ASSERT_EQ(lt.create(&d, CUDA_R_16F, 8, 4, 8), CUBLAS_STATUS_SUCCESS);
  const cublasStatus_t unpatched = call(nullptr, d, nullptr);  // a null handle: an error, no GPU needed
  gemm::set_original("cublasLtMatmul", nullptr);  // forget the fakes of the tests above
  gemm::set_helpers(nullptr, nullptr);
  // libcublas.so.13 imports cublasLtMatmul too; loaded, it must be skipped (one GEMM, one report).
  void* cublas = dlopen(NANSCOPE_CUBLAS, RTLD_NOW | RTLD_LOCAL);
  const got::Report r = gemm::patch_all(true);
  EXPECT_EQ(r.patched, 1u) << (cublas ? "with libcublas loaded" : "libcublas not loadable");
  EXPECT_EQ(r.other_target, 0u);
  SinkGuard sink;
  EXPECT_EQ(call(nullptr, d, nullptr), unpatched);  // the real error, unchanged, unreported
  EXPECT_TRUE(g_seen.empty());
  gemm::set_original("cublasLtMatmul", reinterpret_cast<void*>(&fake_lt_matmul));  // now "succeed"
  int dbuf = 0;
  EXPECT_EQ(call(&dbuf, d, kStream), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(g_seen.size(), 1u);
  EXPECT_EQ(g_seen[0].d_ptr, reinterpret_cast<uint64_t>(&dbuf));
  EXPECT_EQ(g_seen[0].cuda_type, CUDA_R_16F);  // read through the getter patch_all found
  EXPECT_EQ(g_seen[0].rows, 8u);
  std::size_t n = 0;
  const got::Hook* hooks = gemm::hooks(&n);
  EXPECT_EQ(got::unpatch_all(hooks, n), 1u);
  lt.destroy(d);
}
#endif

// What the lead pays to call patch_all() often: nothing new loaded (the common case) against
// a forced walk of every loaded object's relocations.
TEST(GemmInterceptCost, PatchAllWhenNothingNew) {
  gemm::patch_all(true);
  const double idle = ns_per_call([] { gemm::patch_all(); }, 20000);
  const double walk = ns_per_call([] { gemm::patch_all(true); }, 200);
  std::printf("gemm::patch_all ns/call: nothing new %.0f, forced walk %.0f\n", idle, walk);
  std::size_t n = 0;
  const got::Hook* hooks = gemm::hooks(&n);
  got::unpatch_all(hooks, n);
  EXPECT_LT(idle, 20000.0);
}

#include "gemm_intercept.hpp"

#include <atomic>
#include <type_traits>

#include "got_library.hpp"
#include "signature.hpp"

// Headers only, for the exact prototypes: nothing here links against cuBLAS.
#include <cublasLt.h>
#include <cublas_api.h>

namespace nanscope::gemm {
namespace {

// Every intercepted function, one list. Those PyTorch 2.11's libtorch_cuda.so imports are
// cublasLtMatmul, cublasGemmEx, cublasGemmStridedBatchedEx, cublasSgemmEx and the S/D/C/Z
// gemm_v2 and gemmStridedBatched forms; libtorch_cuda_linalg.so adds the S/D/C/Z
// gemmBatched. The rest (_64 forms, Hgemm*, GemmBatchedEx) are cheap to cover.
#define NS_GEMM_HOOKS(X)                                                                         \
  X(cublasLtMatmul)                                                                              \
  X(cublasGemmEx) X(cublasGemmEx_64) X(cublasGemmStridedBatchedEx)                              \
  X(cublasGemmStridedBatchedEx_64) X(cublasGemmBatchedEx) X(cublasGemmBatchedEx_64)             \
  X(cublasSgemmEx) X(cublasSgemmEx_64)                                                           \
  X(cublasSgemm_v2) X(cublasSgemm_v2_64) X(cublasDgemm_v2) X(cublasDgemm_v2_64)                  \
  X(cublasCgemm_v2) X(cublasCgemm_v2_64) X(cublasZgemm_v2) X(cublasZgemm_v2_64)                  \
  X(cublasHgemm) X(cublasHgemm_64)                                                               \
  X(cublasSgemmStridedBatched) X(cublasSgemmStridedBatched_64) X(cublasDgemmStridedBatched)      \
  X(cublasDgemmStridedBatched_64) X(cublasCgemmStridedBatched) X(cublasCgemmStridedBatched_64)   \
  X(cublasZgemmStridedBatched) X(cublasZgemmStridedBatched_64) X(cublasHgemmStridedBatched)      \
  X(cublasHgemmStridedBatched_64)                                                                \
  X(cublasSgemmBatched) X(cublasSgemmBatched_64) X(cublasDgemmBatched) X(cublasDgemmBatched_64)  \
  X(cublasCgemmBatched) X(cublasCgemmBatched_64) X(cublasZgemmBatched) X(cublasZgemmBatched_64)  \
  X(cublasHgemmBatched) X(cublasHgemmBatched_64)

enum Id : int { NS_GEMM_HOOKS(NS_GOT_ID) kHookCount };
constexpr const char* kNames[] = {NS_GEMM_HOOKS(NS_GOT_NAME)};

using GetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t*);
using LayoutGetFn = cublasStatus_t (*)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*, size_t,
                                       size_t*);
std::atomic<GetStreamFn> g_get_stream{nullptr};
std::atomic<LayoutGetFn> g_layout_get{nullptr};

struct Sink {
  GemmSink fn;
  void* ctx;
};

struct Traits {
  static constexpr std::size_t kCount = kHookCount;
  using Sink = gemm::Sink;
  static const got::Hook* table();
  // The providers calling each other (libcublas calls cublasLtMatmul) are never patched.
  static got::Options options(bool force) { return got::options_skipping(force, {"libcublas.so", "libcublasLt.so", "libnanscope"}); }
  static void after_walk();
};
using Lib = got::Library<Traits>;


uint64_t stream_of(cublasHandle_t handle) {
  cudaStream_t stream = nullptr;
  GetStreamFn get = g_get_stream.load(std::memory_order_relaxed);
  if (!get || get(handle, &stream) != CUBLAS_STATUS_SUCCESS) return 0;
  return reinterpret_cast<uint64_t>(stream);
}

// The bytes D's layout spans from D (a strided D is written inside them), or nothing when the
// layout is not decoded: the call's kernels then may write through D's word to its allocation's end.
libcall::LibraryCall::Span d_span(const GemmCall& c) {
  const GemmExtent e = gemm_extent(c);
  if (!e.ok || !c.d_ptr) return {0, 0};
  return {c.d_ptr, e.total_span * dtype_size(e.dtype)};
}

// The common path: mark the thread, describe the call, call through, unmark, report on success.
// An unobserved call (no sink) pays nothing.
// `stream` is a callable too: cublasGetStream_v2 is only asked when someone observes.
template <class Stream, class Call, class Describe>
cublasStatus_t intercept(Id id, Stream&& stream_of_call, Call&& call, Describe&& describe) {
  const Sink* sink = Lib::observer();
  if (!sink || libcall::current()) return call();  // no observer, or nested: the outer call owns it
  const uint64_t stream = stream_of_call();
  libcall::enter(kNames[id], stream);
  // Described before the call (its arguments and descriptors only), so the call's kernels know
  // what it only reads.
  GemmCall c;
  bool described = false;
  try {
    c = describe();
    described = true;
    if (!c.pointer_array) {
      const uint64_t reads[] = {c.a.ptr, c.b.ptr, c.c_is_d ? 0 : c.c_ptr};
      libcall::set_reads(reads, 3);
      const libcall::LibraryCall::Span writes[] = {d_span(c), {c.workspace, c.workspace_bytes}};
      libcall::set_writes(writes, 2);
    }
  } catch (...) {  // described after the call, then
  }
  const cublasStatus_t status = call();
  const libcall::LibraryCall done = libcall::leave();
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  try {
    if (!described) c = describe();
    c.api = kNames[id], c.call_id = done.call_id, c.stream = stream;
    c.kernels_launched = done.kernels;
    sink->fn(sink->ctx, c);
  } catch (...) {  // never into the host application
  }
  return status;
}

// D of a legacy cuBLAS call: C, column-major, written in place (C is D).
GemmCall legacy_call(const void* c, int cuda_type, int64_t m, int64_t n, int64_t ldc, int64_t batch,
                     long long stride, bool pointer_array) {
  GemmCall g;
  g.d_ptr = g.c_ptr = reinterpret_cast<uint64_t>(c);
  g.c_is_d = true;
  g.cuda_type = cuda_type;
  g.dtype = static_cast<int>(gemm_scalar_dtype(cuda_type));
  g.rows = static_cast<uint64_t>(m), g.cols = static_cast<uint64_t>(n), g.ld = static_cast<uint64_t>(ldc);
  g.batch = static_cast<uint64_t>(batch), g.batch_stride = stride;
  g.pointer_array = pointer_array;
  g.order = kGemmOrderCol;
  return g;
}

GemmCall with_ab(GemmCall g, const GemmOperand& a, const GemmOperand& b) {
  g.a = a, g.b = b;
  return g;
}
// A column-major cuBLAS call's report, inside a wrapper (its parameter names): D is C, op(A)
// is m x k and op(B) k x n, each with its type, batch and stride.
#define NS_COLUMN_CALL(AT, BT, CT, BATCH, SA, SB, SC)                                          \
  with_ab(legacy_call(C, CT, m, n, ldc, BATCH, SC, false),                                     \
          column_operand(A, AT, ta != CUBLAS_OP_N, m, k, lda, BATCH, SA),                      \
          column_operand(B, BT, tb != CUBLAS_OP_N, k, n, ldb, BATCH, SB))

template <class T>
bool layout_attr(LayoutGetFn get, cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, T* out) {
  size_t written = 0;
  return get(layout, attr, out, sizeof(T), &written) == CUBLAS_STATUS_SUCCESS && written == sizeof(T);
}

// One matrix of a cublasLtMatmul call, from its layout descriptor. An attribute that cannot be
// read leaves its field unknown (cuda_type -1, rows 0), which gemm_extent() refuses; false then.
bool lt_layout(cublasLtMatrixLayout_t desc, GemmOperand& o, bool& pointer_array) {
  LayoutGetFn get = g_layout_get.load(std::memory_order_relaxed);
  if (!get || !desc) return false;
  uint32_t type = 0, mode = 0;
  int32_t order = CUBLASLT_ORDER_COL, batch = 1;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, stride = 0;
  if (!layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_TYPE, &type) ||
      !layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows) ||
      !layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_COLS, &cols) ||
      !layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_LD, &ld))
    return false;
  layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_ORDER, &order);  // defaults when unreadable
  layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch);
  layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride);
  layout_attr(get, desc, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode);  // cuBLAS 13: may be absent
  o.cuda_type = static_cast<int>(type);
  o.rows = rows, o.cols = cols, o.ld = ld < 0 ? 0 : static_cast<uint64_t>(ld);
  o.batch = batch < 1 ? 1 : static_cast<uint64_t>(batch), o.batch_stride = stride;
  o.order = static_cast<uint8_t>(order);
  pointer_array = mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY;
  return true;
}

GemmCall lt_call(const void* a, cublasLtMatrixLayout_t adesc, const void* b, cublasLtMatrixLayout_t bdesc,
                 const void* c, void* d, cublasLtMatrixLayout_t ddesc, void* ws, size_t ws_size) {
  GemmCall g;
  g.workspace = reinterpret_cast<uint64_t>(ws), g.workspace_bytes = ws ? ws_size : 0;
  g.d_ptr = reinterpret_cast<uint64_t>(d), g.c_ptr = reinterpret_cast<uint64_t>(c);
  g.c_is_d = c != nullptr && c == d;
  GemmOperand dm;
  if (!lt_layout(ddesc, dm, g.pointer_array)) return g;
  g.cuda_type = dm.cuda_type, g.dtype = static_cast<int>(gemm_scalar_dtype(g.cuda_type));
  g.rows = dm.rows, g.cols = dm.cols, g.ld = dm.ld, g.batch = dm.batch, g.batch_stride = dm.batch_stride;
  g.order = dm.order;
  bool a_array = false, b_array = false;
  if (lt_layout(adesc, g.a, a_array) && !a_array) g.a.ptr = reinterpret_cast<uint64_t>(a);
  if (lt_layout(bdesc, g.b, b_array) && !b_array) g.b.ptr = reinterpret_cast<uint64_t>(b);
  return g;
}

// ---- the wrappers: prototypes exactly as in CUDA 13's cublas_api.h / cublasLt.h ----

cublasStatus_t w_cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void* alpha, const void* A,
                                cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                                const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* ws,
                                size_t ws_size, cudaStream_t stream) {
  return intercept(
      k_cublasLtMatmul, [&] { return reinterpret_cast<uint64_t>(stream); },
      [&] {
        return Lib::original<decltype(&w_cublasLtMatmul)>(k_cublasLtMatmul)(h, op, alpha, A, Adesc, B, Bdesc, beta, C,
                                                                      Cdesc, D, Ddesc, algo, ws, ws_size, stream);
      },
      [&] { return lt_call(A, Adesc, B, Bdesc, C, D, Ddesc, ws, ws_size); });
}

// cublasGemmEx / _64: C is D, type Ctype.
#define NS_GEMM_EX(NAME, IDX)                                                                                  \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const void* alpha, const void* A, cudaDataType At, IDX lda, const void* B,           \
                          cudaDataType Bt, IDX ldb, const void* beta, void* C, cudaDataType Ct, IDX ldc,       \
                          cublasComputeType_t ct, cublasGemmAlgo_t algo) {                                     \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, At, lda, B, Bt, ldb,   \
                                                         beta, C, Ct, ldc, ct, algo);                          \
        },                                                                                                     \
        [&] { return NS_COLUMN_CALL(At, Bt, Ct, 1, 0, 0, 0); });                                               \
  }
NS_GEMM_EX(cublasGemmEx, int)
NS_GEMM_EX(cublasGemmEx_64, int64_t)

#define NS_GEMM_STRIDED_EX(NAME, IDX)                                                                          \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const void* alpha, const void* A, cudaDataType At, IDX lda, long long sa,            \
                          const void* B, cudaDataType Bt, IDX ldb, long long sb, const void* beta, void* C,    \
                          cudaDataType Ct, IDX ldc, long long sc, IDX batch, cublasComputeType_t ct,           \
                          cublasGemmAlgo_t algo) {                                                             \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, At, lda, sa, B, Bt,    \
                                                         ldb, sb, beta, C, Ct, ldc, sc, batch, ct, algo);     \
        },                                                                                                     \
        [&] { return NS_COLUMN_CALL(At, Bt, Ct, batch, sa, sb, sc); });                                        \
  }
NS_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
NS_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

#define NS_GEMM_BATCHED_EX(NAME, IDX)                                                                          \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const void* alpha, const void* const A[], cudaDataType At, IDX lda,                  \
                          const void* const B[], cudaDataType Bt, IDX ldb, const void* beta, void* const C[],  \
                          cudaDataType Ct, IDX ldc, IDX batch, cublasComputeType_t ct, cublasGemmAlgo_t algo) { \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, At, lda, B, Bt, ldb,   \
                                                         beta, C, Ct, ldc, batch, ct, algo);                   \
        },                                                                                                     \
        [&] { return legacy_call(C, Ct, m, n, ldc, batch, 0, true); });                                        \
  }
NS_GEMM_BATCHED_EX(cublasGemmBatchedEx, int)
NS_GEMM_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)

#define NS_SGEMM_EX(NAME, IDX)                                                                                 \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const float* alpha, const void* A, cudaDataType At, IDX lda, const void* B,          \
                          cudaDataType Bt, IDX ldb, const float* beta, void* C, cudaDataType Ct, IDX ldc) {    \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, At, lda, B, Bt, ldb,   \
                                                         beta, C, Ct, ldc);                                    \
        },                                                                                                     \
        [&] { return NS_COLUMN_CALL(At, Bt, Ct, 1, 0, 0, 0); });                                               \
  }
NS_SGEMM_EX(cublasSgemmEx, int)
NS_SGEMM_EX(cublasSgemmEx_64, int64_t)

// The typed forms: T and its cudaDataType are fixed by the name's letter.
#define NS_TYPED_GEMM(NAME, T, IDX, CT)                                                                        \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const T* alpha, const T* A, IDX lda, const T* B, IDX ldb, const T* beta, T* C,       \
                          IDX ldc) {                                                                           \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C,  \
                                                         ldc);                                                 \
        },                                                                                                     \
        [&] { return NS_COLUMN_CALL(CT, CT, CT, 1, 0, 0, 0); });                                               \
  }
#define NS_TYPED_STRIDED(NAME, T, IDX, CT)                                                                     \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const T* alpha, const T* A, IDX lda, long long sa, const T* B, IDX ldb,              \
                          long long sb, const T* beta, T* C, IDX ldc, long long sc, IDX batch) {               \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,   \
                                                         beta, C, ldc, sc, batch);                             \
        },                                                                                                     \
        [&] { return NS_COLUMN_CALL(CT, CT, CT, batch, sa, sb, sc); });                                        \
  }
#define NS_TYPED_BATCHED(NAME, T, IDX, CT)                                                                     \
  cublasStatus_t w_##NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, IDX m, IDX n, IDX k,   \
                          const T* alpha, const T* const A[], IDX lda, const T* const B[], IDX ldb,            \
                          const T* beta, T* const C[], IDX ldc, IDX batch) {                                   \
    return intercept(                                                                                          \
        k_##NAME, [&] { return stream_of(h); },                                                                                \
        [&] {                                                                                                  \
          return Lib::original<decltype(&w_##NAME)>(k_##NAME)(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C,  \
                                                         ldc, batch);                                          \
        },                                                                                                     \
        [&] { return legacy_call(C, CT, m, n, ldc, batch, 0, true); });                                        \
  }
// Each family in its int and int64_t forms, for the five types.
#define NS_TYPED_FAMILY(MACRO, PREFIX, SUFFIX)                               \
  MACRO(cublasS##PREFIX##SUFFIX, float, int, CUDA_R_32F)                     \
  MACRO(cublasS##PREFIX##SUFFIX##_64, float, int64_t, CUDA_R_32F)            \
  MACRO(cublasD##PREFIX##SUFFIX, double, int, CUDA_R_64F)                    \
  MACRO(cublasD##PREFIX##SUFFIX##_64, double, int64_t, CUDA_R_64F)           \
  MACRO(cublasC##PREFIX##SUFFIX, cuComplex, int, CUDA_C_32F)                 \
  MACRO(cublasC##PREFIX##SUFFIX##_64, cuComplex, int64_t, CUDA_C_32F)        \
  MACRO(cublasZ##PREFIX##SUFFIX, cuDoubleComplex, int, CUDA_C_64F)           \
  MACRO(cublasZ##PREFIX##SUFFIX##_64, cuDoubleComplex, int64_t, CUDA_C_64F)
NS_TYPED_FAMILY(NS_TYPED_GEMM, gemm, _v2)
NS_TYPED_GEMM(cublasHgemm, __half, int, CUDA_R_16F)
NS_TYPED_GEMM(cublasHgemm_64, __half, int64_t, CUDA_R_16F)
NS_TYPED_FAMILY(NS_TYPED_STRIDED, gemm, StridedBatched)
NS_TYPED_STRIDED(cublasHgemmStridedBatched, __half, int, CUDA_R_16F)
NS_TYPED_STRIDED(cublasHgemmStridedBatched_64, __half, int64_t, CUDA_R_16F)
NS_TYPED_FAMILY(NS_TYPED_BATCHED, gemm, Batched)
NS_TYPED_BATCHED(cublasHgemmBatched, __half, int, CUDA_R_16F)
NS_TYPED_BATCHED(cublasHgemmBatched_64, __half, int64_t, CUDA_R_16F)

// Every wrapper has the header's exact type: a static_cast between different function
// pointer types would not compile (unevaluated: nothing is linked).
#define NS_SAME_TYPE_(name) \
  static_assert(sizeof(static_cast<decltype(&w_##name)>(&::name)) == sizeof(void*), #name);
NS_GEMM_HOOKS(NS_SAME_TYPE_)
#undef NS_SAME_TYPE_

const got::Hook kHooks[] = {NS_GEMM_HOOKS(NS_GOT_HOOK)};
const got::Hook* Traits::table() { return kHooks; }

// The helpers come from the libraries the originals live in, once those are known.
void Traits::after_walk() {
  if (!g_get_stream.load())
    for (int i = k_cublasGemmEx; i < kHookCount && !g_get_stream.load(); ++i)
      if (void* fn = got::sibling_symbol(Lib::originals[i].load(), "cublasGetStream_v2"))
        g_get_stream.store(reinterpret_cast<GetStreamFn>(fn));
  if (!g_layout_get.load())
    if (void* fn = got::sibling_symbol(Lib::originals[k_cublasLtMatmul].load(), "cublasLtMatrixLayoutGetAttribute"))
      g_layout_get.store(reinterpret_cast<LayoutGetFn>(fn));
}

}  // namespace

void set_gemm_sink(GemmSink fn, void* ctx) { Lib::observe(fn ? new Sink{fn, ctx} : nullptr); }

const got::Hook* hooks(std::size_t* count) { return Lib::hooks(count); }

got::Report patch_all(bool force) { return Lib::patch_all(force); }

bool set_original(const char* name, void* fn) { return Lib::set_original(name, fn); }

void set_helpers(void* cublas_get_stream, void* lt_layout_get_attribute) {
  g_get_stream.store(reinterpret_cast<GetStreamFn>(cublas_get_stream));
  g_layout_get.store(reinterpret_cast<LayoutGetFn>(lt_layout_get_attribute));
}

void* wrapper(const char* name) { return Lib::wrapper(name); }

void* adopt(const char* name, void* fn) { return Lib::adopt(name, fn); }

}  // namespace nanscope::gemm

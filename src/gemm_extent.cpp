#include "gemm_extent.hpp"

namespace nanscope {
namespace {

struct CudaTypeRow {
  int cuda_type;
  DType scalar;
  bool complex;
};
// The float cudaDataType_t values (library_types.h). CUDA_R_8F_UE4M3 aliases CUDA_R_8F_E4M3.
constexpr CudaTypeRow kCudaTypes[] = {
    {kCudaR32F, DType::f32, false},     {kCudaR64F, DType::f64, false},
    {kCudaR16F, DType::f16, false},     {kCudaR16BF, DType::bf16, false},
    {kCudaR8FE4M3, DType::f8e4m3, false}, {kCudaR8FE5M2, DType::f8e5m2, false},
    {kCudaC32F, DType::f32, true},      {kCudaC64F, DType::f64, true},
    {kCudaC16F, DType::f16, true},      {kCudaC16BF, DType::bf16, true},
};

// a * b, false on 64-bit overflow.
bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

GemmExtent refuse(const char* why) {
  GemmExtent e;
  e.why = why;
  return e;
}

// One batch: lines runs of inner scalars, ld apart.
bool one_batch(GemmExtent& e) {
  uint64_t head = 0;
  if (!mul(e.ld, e.lines - 1, &head) || !add(head, e.inner, &e.span)) return false;
  e.dense = e.lines == 1 || e.ld == e.inner;
  return mul(e.inner, e.lines, &e.written);
}

// All batches: total extent, and whether they tile into one row layout or one range.
bool all_batches(GemmExtent& e) {
  if (e.batch <= 1) {
    e.batch = 1, e.batch_stride = 0, e.total_span = e.span;
    e.rows_fold = true, e.contiguous = e.dense;
    return true;
  }
  if (e.batch_stride < e.span) return false;  // batches overlap: undefined output
  uint64_t head = 0;
  if (!mul(e.batch_stride, e.batch - 1, &head) || !add(head, e.span, &e.total_span)) return false;
  if (!mul(e.written, e.batch, &e.written)) return false;
  uint64_t per_batch_lines = 0;  // a batch stride of lines * ld continues the line pattern
  e.rows_fold = mul(e.ld, e.lines, &per_batch_lines) && per_batch_lines == e.batch_stride;
  e.contiguous = e.dense && e.batch_stride == e.span;
  return true;
}

}  // namespace

DType gemm_scalar_dtype(int cuda_type, bool* is_complex) {
  for (const CudaTypeRow& row : kCudaTypes) {
    if (row.cuda_type != cuda_type) continue;
    if (is_complex) *is_complex = row.complex;
    return row.scalar;
  }
  if (is_complex) *is_complex = false;
  return DType::none;
}

namespace {

// Why a call's layout cannot be decoded, before any arithmetic; nullptr when it can.
const char* refusal(const GemmCall& call, DType dtype) {
  if (call.pointer_array) return "pointer-array batch";
  if (call.order != kGemmOrderCol && call.order != kGemmOrderRow) return "tiled order";
  if (dtype == DType::none) return "not a float type";
  if (call.rows == 0 || call.cols == 0 || call.batch == 0) return "empty";
  if (call.batch > 1 && call.batch_stride < 0) return "negative batch stride";
  return nullptr;
}

}  // namespace

GemmExtent gemm_extent(const GemmCall& call) {
  bool complex = false;
  const DType dtype = gemm_scalar_dtype(call.cuda_type, &complex);
  if (const char* why = refusal(call, dtype)) return refuse(why);
  GemmExtent e;
  e.dtype = dtype;
  const bool col = call.order == kGemmOrderCol;
  e.inner = col ? call.rows : call.cols;
  e.lines = col ? call.cols : call.rows;
  e.ld = call.ld;
  e.batch = call.batch;
  e.batch_stride = static_cast<uint64_t>(call.batch > 1 ? call.batch_stride : 0);
  const uint64_t scalars = complex ? 2 : 1;  // complex: real and imaginary scalars interleave
  if (!mul(e.inner, scalars, &e.inner) || !mul(e.ld, scalars, &e.ld) ||
      !mul(e.batch_stride, scalars, &e.batch_stride))
    return refuse("size overflow");
  if (e.lines > 1 && e.ld < e.inner) return refuse("ld below the contiguous run");
  if (!one_batch(e)) return refuse("size overflow");
  if (!all_batches(e)) return refuse(e.batch_stride < e.span ? "overlapping batches" : "size overflow");
  e.ok = true;
  return e;
}

GemmExtent operand_extent(const GemmOperand& m) {
  if (!m.ptr) return refuse("operand unknown");
  GemmCall as_d;  // the same layout arithmetic as D's
  as_d.cuda_type = m.cuda_type;
  as_d.rows = m.rows, as_d.cols = m.cols, as_d.ld = m.ld;
  as_d.batch = m.batch, as_d.batch_stride = m.batch_stride, as_d.order = m.order;
  return gemm_extent(as_d);
}

GemmOperand column_operand(const void* ptr, int cuda_type, bool trans, int64_t rows, int64_t cols, int64_t ld,
                           int64_t batch, long long stride) {
  GemmOperand o;
  if (rows < 0 || cols < 0 || ld < 0 || batch < 1) return o;
  o.ptr = reinterpret_cast<uint64_t>(ptr);
  o.cuda_type = cuda_type;
  o.rows = static_cast<uint64_t>(trans ? cols : rows);
  o.cols = static_cast<uint64_t>(trans ? rows : cols);
  o.ld = static_cast<uint64_t>(ld);
  o.batch = static_cast<uint64_t>(batch);
  o.batch_stride = stride;
  return o;
}

}  // namespace nanscope

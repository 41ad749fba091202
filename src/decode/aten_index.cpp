// index_elementwise_kernel<nt, vt, lambda>(int64_t N, lambda) for index_copy_ (IndexKernel.cu),
// the KV-cache update of Hugging Face's static caches. The lambda captures, by value,
//   OffsetCalculator<3> offset_calc (strides in bytes; self restrided with stride 0 along dim),
//   char* self_ptr, char* idx_ptr, char* source_ptr, int64_t self_dim_size, self_dim_stride,
// and stores source[i] at self_data[idx * self_dim_stride]. Capture order is the compiler's:
// the calculator first (pointers at 608) or the pointers first (calculator at 24) give the same
// 648 bytes, so both are checked and exactly one must be a valid calculator over N elements.
// Which rows the indices pick is on the device, so the write is all of self: the iteration's
// self dims plus dim, and only when that packs densely. The element type is the source's.
#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

constexpr uint32_t kClosureBytes = 648;
constexpr uint32_t kCalcFirstPtrs = 608;  // offset_calc_size(3) = 604, 8-aligned
constexpr uint32_t kPtrsFirstCalc = 24;
constexpr uint32_t kDimSize = 632, kDimStride = 640;

bool calc_over(const char* calc, int64_t n) {
  CalcExtent e;
  return offset_calc_extent(calc, 3, 0, e) && n >= 0 && e.numel == static_cast<uint64_t>(n);
}

}  // namespace

Decoded decode_index_copy(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const int64_t n = load<int64_t>(v.params[0], 0);
  const char* c = v.params[1];
  const bool calc_first = calc_over(c, n);
  const bool ptrs_first = calc_over(c + kPtrsFirstCalc, n);
  if (calc_first == ptrs_first) return Decoded::mismatch("index_copy closure not recognised");
  const char* calc = calc_first ? c : c + kPtrsFirstCalc;
  const uint32_t ptrs = calc_first ? kCalcFirstPtrs : 0;
  const uint64_t self = load<uint64_t>(c, ptrs), source = load<uint64_t>(c, ptrs + 16);
  const int64_t dim_size = load<int64_t>(c, kDimSize), dim_stride = load<int64_t>(c, kDimStride);
  if (dim_size < 0 || dim_stride < 0) return Decoded::mismatch("index_copy closure not recognised");
  Decoded d;
  const uint32_t es = m.elem_bytes;
  DimList src;
  add_calc_dims(calc, 3, 2, src);
  d.add_read(source, DType::none, dense_elements(src, es));
  if (n == 0 || dim_size == 0) return d;
  DimList dst;
  add_calc_dims(calc, 3, 0, dst);  // dim has stride 0 here: DimList skips it
  dst.add(static_cast<uint64_t>(dim_size), static_cast<uint64_t>(dim_stride) * es);
  const uint64_t elements = dense_elements(dst, es);
  if (elements == 0) {
    d.reason = "index_copy destination not dense";
    return d;
  }
  Write w = make_write(self, elements, (elements - 1) * es, DType::none, es, 1);
  w.dtype_from = source;
  d.add_write(w);
  return d;
}

}  // namespace nanscope::decode::aten

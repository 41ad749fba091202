// decode_aten's dispatch and the struct arithmetic shared by the ATen families.
#include "decode/aten.hpp"

#include <array>
#include <utility>

#include "decode/aten_internal.hpp"

namespace nanscope::decode {

using namespace aten;

namespace {

constexpr std::array<const char*, static_cast<std::size_t>(AtenFamily::count_)> kNames{
    "none",          "vectorized_elementwise", "unrolled_elementwise", "multi_output_elementwise",
    "elementwise",   "reduce",                 "vectorized_layer_norm", "rowwise_moments",
    "layer_norm_fwd", "softmax_warp_forward",  "cunn_softmax_forward",  "index_select",
    "vectorized_gather", "cat",                "index_elementwise",     "flash_fwd",
    "flash_fwd_splitkv", "mem_eff_attention",      "elementwise_cast",      "elementwise_with_index",
    "grouped_gemm_setup"};

// Indexed by AtenFamily; null: the family never reaches `matched`.
constexpr std::array<DecodeFn, static_cast<std::size_t>(AtenFamily::count_)> kDecoders{
    nullptr,          decode_vectorized,     decode_unrolled,        decode_multi_output,
    decode_legacy,    decode_reduce,         decode_layer_norm_vec,  decode_rowwise_moments,
    decode_layer_norm_fwd, decode_softmax_warp, decode_softmax_block, decode_index_select,
    decode_gather,    decode_cat,            decode_index_copy,      decode_flash_fwd,
    nullptr,          decode_mem_eff,        decode_legacy_cast,     decode_with_index,
    decode_grouped_gemm_setup};

}  // namespace

const char* aten_family_name(AtenFamily f) {
  const auto i = static_cast<std::size_t>(f);
  return i < kNames.size() ? kNames[i] : "?";
}

Decoded decode_aten(const FamilyMatch& m, const LaunchView& v, const AddressQuery& live) {
  if (m.kind != MatchKind::matched) return Decoded::mismatch(m.reason);
  if (v.count != m.param_count || !v.params) return Decoded::mismatch("layout mismatch");
  for (uint32_t i = 0; i < v.count; ++i)
    if (!v.params[i]) return Decoded::mismatch("parameter bytes missing");
  const DecodeFn fn = kDecoders[static_cast<std::size_t>(m.family)];
  return fn ? fn(m, v, live) : Decoded::mismatch("layout mismatch");
}

namespace aten {

namespace {

// IntDivider<unsigned int>'s constructor (IntegerDivider.cuh) fixes m1 and shift from the
// divisor; recomputing them tells a real calculator from other bytes.
bool divider_ok(uint32_t d, uint32_t m1, uint32_t shift) {
  if (d < 1 || d > 0x7fffffffu) return false;
  uint32_t s = 0;
  while (s < 32 && (1u << s) < d) ++s;
  const uint64_t magic = ((uint64_t{1} << 32) * ((uint64_t{1} << s) - d)) / d + 1;
  return s == shift && magic == m1;
}

}  // namespace

bool offset_calc_extent(const char* oc, uint32_t nargs, uint32_t k, CalcExtent& out) {
  const int32_t dims = load<int32_t>(oc, 0);
  if (dims < 0 || dims > static_cast<int32_t>(kMaxDims) || k >= nargs) return false;
  out = CalcExtent{1, 1, 0};
  for (int32_t d = 0; d < dims; ++d) {
    const uint32_t at = 4 + kDividerBytes * static_cast<uint32_t>(d);
    const uint32_t div = load<uint32_t>(oc, at);
    if (!divider_ok(div, load<uint32_t>(oc, at + 4), load<uint32_t>(oc, at + 8))) return false;
    const uint32_t stride = load<uint32_t>(oc, kStridesAt + 4 * (static_cast<uint32_t>(d) * nargs + k));
    out.numel *= div;
    if (stride) out.distinct *= div;
    out.max_off += uint64_t{div - 1} * stride;
  }
  return true;
}

void add_calc_dims(const char* oc, uint32_t nargs, uint32_t k, DimList& d) {
  const int32_t dims = load<int32_t>(oc, 0);
  for (int32_t i = 0; i < dims; ++i) {
    const uint32_t at = 4 + kDividerBytes * static_cast<uint32_t>(i);
    d.add(load<uint32_t>(oc, at), load<uint32_t>(oc, kStridesAt + 4 * (static_cast<uint32_t>(i) * nargs + k)));
  }
}

uint64_t dense_elements(DimList& d, uint64_t unit) {
  if (d.empty || d.overflow || unit == 0) return 0;
  for (uint32_t i = 1; i < d.n; ++i)  // insertion sort by stride: a few dims
    for (uint32_t j = i; j > 0 && d.stride[j - 1] > d.stride[j]; --j) {
      std::swap(d.stride[j - 1], d.stride[j]);
      std::swap(d.size[j - 1], d.size[j]);
    }
  uint64_t next = unit, elements = 1;
  for (uint32_t i = 0; i < d.n; ++i) {
    if (d.stride[i] != next) return 0;
    next *= d.size[i];
    elements *= d.size[i];
  }
  return elements;
}

uint64_t dense_4d(uint64_t n0, int64_t s0, uint64_t n1, int64_t s1, uint64_t n2, int64_t s2, uint64_t n3) {
  if (s0 < 0 || s1 < 0 || s2 < 0) return 0;
  DimList d;
  d.add(n0, uint64_t(s0));
  d.add(n1, uint64_t(s1));
  d.add(n2, uint64_t(s2));
  d.add(n3, 1);
  return dense_elements(d, 1);
}

Write make_write(uint64_t ptr, uint64_t numel, uint64_t last_byte, DType dt, uint32_t esize,
                 uint32_t arg) {
  Write w;
  w.ptr = ptr;
  w.elements = numel;
  w.span_bytes = numel ? last_byte + esize : 0;
  w.elem_size = esize;
  w.dtype = dt;
  w.arg = arg;
  return w;
}

}  // namespace aten

}  // namespace nanscope::decode

// Classification of one 16-byte vector at a time (kernels/scan.cu, through scan_buffer.cuh): the
// NaN / +Inf / -Inf elements of a vector as bit masks, from integer tests on packed lanes (the
// exponent all ones, the mantissa zero or not, the sign), so a vector full of NaN costs a few
// dozen integer operations and three popcounts, not a branchy loop per element. The scan must
// cost the same at every NaN density (issue 18): a thread never walks a vector element by element
// unless the vector straddles a row boundary of a row-aware buffer.
#pragma once

#include <stdint.h>

#include "scan_abi.h"

namespace {

// Bytes of one element of a dtype known at compile time (scan_abi.h's table).
template <uint32_t dt>
constexpr uint32_t kElementBytes = [] {
  switch (dt) {
#define NS_DTYPE_BYTES_C_(suffix, name, code, bytes) \
  case NS_##suffix: return bytes;
    NANSCOPE_SCAN_DTYPES(NS_DTYPE_BYTES_C_)
#undef NS_DTYPE_BYTES_C_
    default: return 0;
  }
}();

// The non-finite elements of one vector. A bit stands for one element; which element is
// elem_of_bit's business (the layout is whatever is cheapest to build for the dtype).
struct VecMasks {
  uint32_t nan = 0, pinf = 0, ninf = 0;
  __device__ __forceinline__ uint32_t bad() const { return nan | pinf | ninf; }
};

// Lane constants of the cheap "any non-finite" test, per dtype: a lane's exponent field (EXP)
// plus its lowest bit (LSB) carries into the lane's top bit (TOP) exactly when the exponent is all
// ones. f64 is tested on its high words only; e4m3 has no exponent-only test (S.1111.111 is NaN).
template <uint32_t dt> struct LaneBits;
template <> struct LaneBits<NS_F64> { static constexpr uint32_t EXP = 0x7ff00000u, LSB = 0x00100000u, TOP = 0x80000000u; };
template <> struct LaneBits<NS_F32> { static constexpr uint32_t EXP = 0x7f800000u, LSB = 0x00800000u, TOP = 0x80000000u; };
template <> struct LaneBits<NS_F16> { static constexpr uint32_t EXP = 0x7c007c00u, LSB = 0x04000400u, TOP = 0x80008000u; };
template <> struct LaneBits<NS_BF16> { static constexpr uint32_t EXP = 0x7f807f80u, LSB = 0x00800080u, TOP = 0x80008000u; };
template <> struct LaneBits<NS_F8E4M3> { static constexpr uint32_t EXP = 0x7f7f7f7fu, LSB = 0x01010101u, TOP = 0x80808080u; };
template <> struct LaneBits<NS_F8E5M2> { static constexpr uint32_t EXP = 0x7c7c7c7cu, LSB = 0x04040404u, TOP = 0x80808080u; };

// Non-zero when some element of the vector is non-finite: two integer operations a word.
template <uint32_t dt>
__device__ __forceinline__ uint32_t vec_suspect_bits(const uint4& v) {
  using L = LaneBits<dt>;
  auto lane = [](uint32_t w) { return (w & L::EXP) + L::LSB; };  // TOP set iff the exponent is all ones
  if constexpr (dt == NS_F64) return (lane(v.y) | lane(v.w)) & L::TOP;
  else return (lane(v.x) | lane(v.y) | lane(v.z) | lane(v.w)) & L::TOP;
}

// Byte lanes: bit 7 of each byte set where the byte's low seven bits are non-zero.
__device__ __forceinline__ uint32_t bytes_low7_nonzero(uint32_t x) { return (x & 0x7f7f7f7fu) + 0x7f7f7f7fu; }

// Four elements as byte lanes (bit 7 of byte j stands for element j): NaN, +Inf, -Inf.
__device__ __forceinline__ VecMasks quad_masks(uint32_t exp_all_ones, uint32_t mant_nonzero, uint32_t sign) {
  VecMasks m;
  m.nan = exp_all_ones & mant_nonzero & 0x80808080u;
  const uint32_t inf = exp_all_ones & ~mant_nonzero & 0x80808080u;
  m.ninf = inf & sign;
  m.pinf = inf & ~sign;
  return m;
}

// Two 16-bit words (four elements) regrouped as byte lanes: H holds each element's high byte,
// L its low byte, element j in byte j.
template <uint32_t dt>
__device__ __forceinline__ VecMasks half_quad(uint32_t w0, uint32_t w1) {
  const uint32_t H = __byte_perm(w0, w1, 0x7531), L = __byte_perm(w0, w1, 0x6420);
  if constexpr (dt == NS_BF16) {  // H = s.eeeeeee, L = e.mmmmmmm
    const uint32_t e = ((H & 0x7f7f7f7fu) + 0x01010101u) & L;
    return quad_masks(e, bytes_low7_nonzero(L), H);
  } else {  // f16: H = s.eeeee.mm, L = mmmmmmmm
    const uint32_t e = (H & 0x7c7c7c7cu) + 0x04040404u;
    const uint32_t m = (H & 0x03030303u) | L;
    return quad_masks(e, bytes_low7_nonzero(m) | m, H);
  }
}

// A word of four 8-bit elements.
template <uint32_t dt>
__device__ __forceinline__ VecMasks byte_quad(uint32_t w) {
  if constexpr (dt == NS_F8E4M3) {  // no infinities; S.1111.111 is NaN
    VecMasks m;
    m.nan = ((w & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u;
    return m;
  } else {  // e5m2: s.eeeee.mm
    return quad_masks((w & 0x7c7c7c7cu) + 0x04040404u, (w & 0x03030303u) + 0x7f7f7f7fu, w);
  }
}

__device__ __forceinline__ VecMasks merge_shifted(VecMasks a, const VecMasks& b, int shift) {
  a.nan |= b.nan >> shift, a.pinf |= b.pinf >> shift, a.ninf |= b.ninf >> shift;
  return a;
}

// One 32- or 64-bit element as bit `k` of the masks.
__device__ __forceinline__ void wide_element(VecMasks& m, int k, bool exp_all_ones, bool mant_nonzero, bool neg) {
  m.nan |= (uint32_t)(exp_all_ones && mant_nonzero) << k;
  m.pinf |= (uint32_t)(exp_all_ones && !mant_nonzero && !neg) << k;
  m.ninf |= (uint32_t)(exp_all_ones && !mant_nonzero && neg) << k;
}

// The masks of one vector. Layouts (see elem_of_bit): f64 / f32: element k is bit k. f16 / bf16:
// elements 0-3 are bits 8j+7, elements 4-7 bits 8j+6. f8: element 4k+j is bit 8j+7-k.
template <uint32_t dt>
__device__ __forceinline__ VecMasks classify_vec(const uint4& v) {
  VecMasks m;
  if constexpr (dt == NS_F64) {
    const uint32_t hi[2] = {v.y, v.w}, lo[2] = {v.x, v.z};
#pragma unroll
    for (int k = 0; k < 2; ++k)
      wide_element(m, k, (hi[k] & 0x7ff00000u) == 0x7ff00000u, ((hi[k] & 0x000fffffu) | lo[k]) != 0, hi[k] >> 31);
  } else if constexpr (dt == NS_F32) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) wide_element(m, k, (w[k] & 0x7f800000u) == 0x7f800000u, (w[k] & 0x007fffffu) != 0, w[k] >> 31);
  } else if constexpr (dt == NS_F16 || dt == NS_BF16) {
    m = merge_shifted(half_quad<dt>(v.x, v.y), half_quad<dt>(v.z, v.w), 1);
  } else {
    m = merge_shifted(merge_shifted(merge_shifted(byte_quad<dt>(v.x), byte_quad<dt>(v.y), 1), byte_quad<dt>(v.z), 2),
                      byte_quad<dt>(v.w), 3);
  }
  return m;
}

// Element (within its vector) of bit p of a classify_vec mask.
template <uint32_t dt>
__device__ __forceinline__ uint32_t elem_of_bit(uint32_t p) {
  if constexpr (dt == NS_F64 || dt == NS_F32) return p;
  else return (7 - (p & 7)) * 4 + (p >> 3);  // bit 8j+7-k: element 4k+j (f16 / bf16: k is 0 or 1)
}

// Lowest and highest element of a non-empty mask (once per thread and buffer, not per vector).
template <uint32_t dt>
__device__ __forceinline__ void mask_bounds(uint32_t mask, uint32_t& lo, uint32_t& hi) {
  lo = 31, hi = 0;
  while (mask) {
    const uint32_t e = elem_of_bit<dt>(__ffs(mask) - 1);
    mask &= mask - 1;
    lo = e < lo ? e : lo;
    hi = e > hi ? e : hi;
  }
}

}  // namespace

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
// elem_of_bit's business (the layout is whatever is cheapest to build for the dtype). The
// infinities are split by sign (sign_mask) only when a step holds one (ThreadCounts::add_step):
// a vector of NaN costs two masks and one popcount.
struct VecMasks {
  uint32_t nan = 0, all = 0;  // NaN; NaN or +-Inf
  __device__ __forceinline__ uint32_t bad() const { return all; }
  __device__ __forceinline__ uint32_t inf() const { return all & ~nan; }
};

// The cheap "any non-finite" test of a step of vectors, on the FMA pipe where the dtype allows it:
// x * 0 + acc stays +-0 for finite x and turns NaN for an infinity or a NaN (IEEE, no fast math),
// so a word costs one FMA and the integer pipe (half as wide, and busy with the classification
// once anything is found) is left alone. A superset is enough: classify_vec decides exactly.
//  - f32: one fma.f32 a word. f64: the same on the high words: the top 8 exponent bits of an f64
//    are the f32 view's exponent, so every non-finite f64 (and finite ones of magnitude >= 2^1017) trips it.
//  - f16 / bf16: one fma.f16x2 / fma.bf16x2 a word.
//  - f8 stays on integer lanes: a byte's exponent field plus its lowest bit carries into bit 7
//    exactly when the field is all ones (e4m3: the low seven bits, S.1111.111 being NaN; its f16
//    view would trip on the common finite 256..448). e5m2 masks the exponent alone rather than
//    reuse byte_vec's carries: keeping those live across the vote spilled in nanscope_scan.
#ifdef __CUDACC__  // the rest of the file is plain integer code, which tests/unit runs on the host
__device__ __forceinline__ uint32_t fma0_f16x2(uint32_t x, uint32_t acc) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(0u), "r"(acc));
  return d;
}
__device__ __forceinline__ uint32_t fma0_bf16x2(uint32_t x, uint32_t acc) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(0u), "r"(acc));
  return d;
}
__device__ __forceinline__ float fma0_f32(uint32_t x, float acc) { return __fmaf_rn(__uint_as_float(x), 0.0f, acc); }

// Non-zero when some element of the N vectors may be non-finite.
template <uint32_t dt, int N>
__device__ __forceinline__ uint32_t step_suspect_bits(const uint4 (&x)[N]) {
  if constexpr (dt == NS_F32 || dt == NS_F64) {
    float a = 0.0f, b = 0.0f;  // two chains: half the FMA latency on the vote's path
#pragma unroll
    for (int u = 0; u < N; ++u) {
      if constexpr (dt == NS_F32) a = fma0_f32(x[u].x, fma0_f32(x[u].y, a)), b = fma0_f32(x[u].z, fma0_f32(x[u].w, b));
      else a = fma0_f32(x[u].y, a), b = fma0_f32(x[u].w, b);
    }
    return (__float_as_uint(a) | __float_as_uint(b)) & 0x7fffffffu;  // +-0 unless a NaN went in
  } else if constexpr (dt == NS_F16 || dt == NS_BF16) {
    uint32_t a = 0, b = 0;
#pragma unroll
    for (int u = 0; u < N; ++u) {
      if constexpr (dt == NS_BF16) a = fma0_bf16x2(x[u].x, fma0_bf16x2(x[u].y, a)), b = fma0_bf16x2(x[u].z, fma0_bf16x2(x[u].w, b));
      else a = fma0_f16x2(x[u].x, fma0_f16x2(x[u].y, a)), b = fma0_f16x2(x[u].z, fma0_f16x2(x[u].w, b));
    }
    return (a | b) & 0x7fff7fffu;
  } else {
    constexpr uint32_t exp = dt == NS_F8E4M3 ? 0x7f7f7f7fu : 0x7c7c7c7cu, lsb = dt == NS_F8E4M3 ? 0x01010101u : 0x04040404u;
    auto lane = [](uint32_t w) { return (w & exp) + lsb; };
    uint32_t any = 0;
#pragma unroll
    for (int u = 0; u < N; ++u) any |= lane(x[u].x) | lane(x[u].y) | lane(x[u].z) | lane(x[u].w);
    return any & 0x80808080u;
  }
}

#endif  // __CUDACC__

// Byte lanes: bit 7 of each byte set where the byte's low seven bits are non-zero.
__device__ __forceinline__ uint32_t bytes_low7_nonzero(uint32_t x) { return (x & 0x7f7f7f7fu) + 0x7f7f7f7fu; }

// Four elements as byte lanes (bit 7 of byte j stands for element j): NaN, non-finite.
__device__ __forceinline__ VecMasks quad_masks(uint32_t exp_all_ones, uint32_t mant_nonzero) {
  VecMasks m;
  m.nan = exp_all_ones & mant_nonzero & 0x80808080u;
  m.all = exp_all_ones & 0x80808080u;
  return m;
}

// Two 16-bit words (four elements) regrouped as byte lanes: H holds each element's high byte,
// L its low byte, element j in byte j.
template <uint32_t dt>
__device__ __forceinline__ VecMasks half_quad(uint32_t w0, uint32_t w1) {
  const uint32_t H = __byte_perm(w0, w1, 0x7531), L = __byte_perm(w0, w1, 0x6420);
  if constexpr (dt == NS_BF16) {  // H = s.eeeeeee, L = e.mmmmmmm
    const uint32_t e = ((H & 0x7f7f7f7fu) + 0x01010101u) & L;
    return quad_masks(e, bytes_low7_nonzero(L));
  } else {  // f16: H = s.eeeee.mm, L = mmmmmmmm
    const uint32_t e = (H & 0x7c7c7c7cu) + 0x04040404u;
    const uint32_t m = (H & 0x03030303u) | L;
    return quad_masks(e, bytes_low7_nonzero(m) | m);
  }
}

// The four words of a vector of 8-bit elements merged into one word per mask: bit 7 of byte j
// of word k lands on bit 8j+7-k. Each word's bit-7 lanes are masked first (the bits below are
// not zero), then shifted into place.
__device__ __forceinline__ uint32_t merge_byte_lanes(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return (a & 0x80808080u) | ((b >> 1) & 0x40404040u) | ((c >> 2) & 0x20202020u) | ((d >> 3) & 0x10101010u);
}

// Sixteen 8-bit elements. The low seven bits of a byte plus a constant carry into bit 7 exactly
// when they reach the constant's complement: e4m3 is NaN at S.1111.111 and has no infinities;
// e5m2 (s.eeeee.mm) is non-finite from .11111.00 up and NaN from .11111.01 up.
template <uint32_t dt>
__device__ __forceinline__ VecMasks byte_vec(const uint4& v) {
  auto carry = [](uint32_t w, uint32_t add) { return (w & 0x7f7f7f7fu) + add; };
  VecMasks m;
  if constexpr (dt == NS_F8E4M3) {
    m.nan = merge_byte_lanes(carry(v.x, 0x01010101u), carry(v.y, 0x01010101u), carry(v.z, 0x01010101u),
                             carry(v.w, 0x01010101u));
    m.all = m.nan;
  } else {
    m.nan = merge_byte_lanes(carry(v.x, 0x03030303u), carry(v.y, 0x03030303u), carry(v.z, 0x03030303u),
                             carry(v.w, 0x03030303u));
    m.all = merge_byte_lanes(carry(v.x, 0x04040404u), carry(v.y, 0x04040404u), carry(v.z, 0x04040404u),
                             carry(v.w, 0x04040404u));
  }
  return m;
}

// Four f32 elements as byte lanes (element k in byte k). The high half of an f32 is a bf16 with
// the same sign and exponent; it is NaN when that bf16 is, or when its exponent is all ones and
// only the low 16 mantissa bits are set. Eight byte permutes and a dozen integer operations,
// against four ISETP / SEL chains an element.
__device__ __forceinline__ VecMasks f32_quad(const uint4& v) {
  const uint32_t A = __byte_perm(v.x, v.y, 0x7632), B = __byte_perm(v.z, v.w, 0x7632);  // high halves
  const uint32_t H = __byte_perm(A, B, 0x7531), L = __byte_perm(A, B, 0x6420);  // s.eeeeeee, e.mmmmmmm
  const uint32_t C = __byte_perm(v.x, v.y, 0x5410), D = __byte_perm(v.z, v.w, 0x5410);  // low halves
  // Bit 15 of each 16-bit lane: the lane is non-zero (its low 15 bits plus 0x7fff carry into it).
  const uint32_t c = ((C & 0x7fff7fffu) + 0x7fff7fffu) | C, d = ((D & 0x7fff7fffu) + 0x7fff7fffu) | D;
  const uint32_t low_nonzero = __byte_perm(c, d, 0x7531);  // bit 7 of byte k: element k's low half
  const uint32_t e = ((H & 0x7f7f7f7fu) + 0x01010101u) & L;
  return quad_masks(e, bytes_low7_nonzero(L) | low_nonzero);
}

__device__ __forceinline__ VecMasks merge_shifted(VecMasks a, const VecMasks& b, int shift) {
  a.nan |= b.nan >> shift, a.all |= b.all >> shift;
  return a;
}

// One 64-bit element as bit `k` of the masks.
__device__ __forceinline__ void wide_element(VecMasks& m, int k, bool exp_all_ones, bool mant_nonzero) {
  m.nan |= (uint32_t)(exp_all_ones && mant_nonzero) << k;
  m.all |= (uint32_t)exp_all_ones << k;
}

// The masks of one vector. Layouts (see elem_of_bit): f64: element k is bit k. f32: element k is
// bit 8k+7. f16 / bf16:
// elements 0-3 are bits 8j+7, elements 4-7 bits 8j+6. f8: element 4k+j is bit 8j+7-k.
template <uint32_t dt>
__device__ __forceinline__ VecMasks classify_vec(const uint4& v) {
  VecMasks m;
  if constexpr (dt == NS_F64) {
    const uint32_t hi[2] = {v.y, v.w}, lo[2] = {v.x, v.z};
#pragma unroll
    for (int k = 0; k < 2; ++k)
      wide_element(m, k, (hi[k] & 0x7ff00000u) == 0x7ff00000u, ((hi[k] & 0x000fffffu) | lo[k]) != 0);
  } else if constexpr (dt == NS_F32) {
    m = f32_quad(v);
  } else if constexpr (dt == NS_F16 || dt == NS_BF16) {
    m = merge_shifted(half_quad<dt>(v.x, v.y), half_quad<dt>(v.z, v.w), 1);
  } else {
    m = byte_vec<dt>(v);
  }
  return m;
}

// The sign bits of a vector's elements in classify_vec's layout (only where a mask bit is set
// do they mean anything): what splits its infinities into +Inf and -Inf.
template <uint32_t dt>
__device__ __forceinline__ uint32_t sign_mask(const uint4& v) {
  if constexpr (dt == NS_F64) {
    return (v.y >> 31) | (v.w >> 31) << 1;
  } else if constexpr (dt == NS_F32) {
    return __byte_perm(__byte_perm(v.x, v.y, 0x7632), __byte_perm(v.z, v.w, 0x7632), 0x7531) & 0x80808080u;
  } else if constexpr (dt == NS_F16 || dt == NS_BF16) {
    return (__byte_perm(v.x, v.y, 0x7531) & 0x80808080u) | (__byte_perm(v.z, v.w, 0x7531) & 0x80808080u) >> 1;
  } else {
    return merge_byte_lanes(v.x, v.y, v.z, v.w);
  }
}

// Element (within its vector) of bit p of a classify_vec mask.
template <uint32_t dt>
__device__ __forceinline__ uint32_t elem_of_bit(uint32_t p) {
  if constexpr (dt == NS_F64) return p;
  else if constexpr (dt == NS_F32) return p >> 3;  // bit 8k+7
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

// kernels/scan_classify.cuh on the host: the whole-vector classification of the scan kernels
// (NaN and non-finite masks from packed byte lanes, the sign split of the infinities, the
// element of each mask bit, a mask's first and last element) against an element-by-element
// reference, for every dtype, on random vectors dense in NaN, infinities and the edge payloads
// (f32 NaN with only the low 16 mantissa bits set, one-bit payloads, e4m3 1111.0xx). The
// kernels' integer code is plain C++ once the CUDA keywords and intrinsics below stand in;
// the FMA-pipe suspect test (inline PTX) stays device-only (tests/gpu/scan_density_test.cu).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

#define __device__
#define __forceinline__ inline
struct uint4 {
  uint32_t x, y, z, w;
};
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t v = uint64_t{y} << 32 | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline int __popc(uint32_t x) { return __builtin_popcount(x); }
inline int __ffs(uint32_t x) { return __builtin_ffs(static_cast<int>(x)); }

#include "../../kernels/scan_classify.cuh"

namespace {

// 0 finite, 1 NaN, 2 +Inf, 3 -Inf: the per-element rule of kernels/scan_buffer.cuh's classify.
int reference_kind(uint32_t dt, uint64_t bits) {
  struct Rule { uint64_t exp, mant, sign; };
  const Rule r = dt == NS_F64    ? Rule{0x7ff0000000000000ull, 0x000fffffffffffffull, 1ull << 63}
                 : dt == NS_F32  ? Rule{0x7f800000u, 0x007fffffu, 1u << 31}
                 : dt == NS_F16  ? Rule{0x7c00u, 0x03ffu, 1u << 15}
                 : dt == NS_BF16 ? Rule{0x7f80u, 0x007fu, 1u << 15}
                                 : Rule{0x7cu, 0x03u, 0x80u};
  if (dt == NS_F8E4M3) return (bits & 0x7f) == 0x7f ? 1 : 0;
  if ((bits & r.exp) != r.exp) return 0;
  if (bits & r.mant) return 1;
  return (bits & r.sign) ? 3 : 2;
}

// A random element, non-finite three times in four, often with a zero or one-bit mantissa.
uint64_t random_element(uint32_t dt, std::mt19937_64& rng) {
  uint64_t bits = rng();
  const int mode = static_cast<int>(rng() % 4);
  const uint64_t low = rng() & 1 ? rng() & 0xffff : rng() & 1;
  switch (dt) {
    case NS_F64: bits |= mode ? 0x7ff0000000000000ull : 0; if (mode == 2) bits = (bits & 0xfff0000000000000ull) | low; break;
    case NS_F32: bits |= mode ? 0x7f800000u : 0; if (mode == 2) bits = (bits & 0xff800000u) | low; break;
    case NS_F16: bits |= mode ? 0x7c00u : 0; if (mode == 2) bits = (bits & 0xfc00u) | (low & 1); break;
    case NS_BF16: bits |= mode ? 0x7f80u : 0; if (mode == 2) bits = (bits & 0xff80u) | (low & 1); break;
    case NS_F8E4M3: bits |= mode ? (rng() & 1 ? 0x7f : 0x78) : 0; break;
    default: bits |= mode ? 0x7c : 0; if (mode == 2) bits = (bits & 0xfc) | (low & 1); break;
  }
  return bits;
}

template <uint32_t dt>
void check_dtype(int vectors) {
  constexpr int eb = kElementBytes<dt>, per_vec = 16 / eb;
  std::mt19937_64 rng(dt * 7919 + 1);
  for (int it = 0; it < vectors; ++it) {
    uint8_t bytes[16];
    int want[16] = {};
    for (int e = 0; e < per_vec; ++e) {
      const uint64_t bits = random_element(dt, rng);
      std::memcpy(bytes + e * eb, &bits, eb);  // little endian, as on the device
      want[e] = reference_kind(dt, bits);
    }
    uint4 v;
    std::memcpy(&v, bytes, 16);
    const VecMasks m = classify_vec<dt>(v);
    const uint32_t neg = sign_mask<dt>(v);
    ASSERT_EQ(m.nan & ~m.all, 0u) << "dtype " << dt;
    int got[16] = {}, first = -1, last = -1;
    for (uint32_t p = 0; p < 32; ++p) {
      if (!((m.all >> p) & 1u)) continue;
      const uint32_t e = elem_of_bit<dt>(p);
      ASSERT_LT(e, static_cast<uint32_t>(per_vec)) << "dtype " << dt << " bit " << p;
      got[e] = ((m.nan >> p) & 1u) ? 1 : ((neg >> p) & 1u) ? 3 : 2;
    }
    for (int e = 0; e < per_vec; ++e) {
      ASSERT_EQ(got[e], want[e]) << "dtype " << dt << " element " << e << " of vector " << it;
      if (want[e]) last = e, first = first < 0 ? e : first;
    }
    EXPECT_EQ(__popc(m.all), __popc(m.nan) + __popc(m.inf() & ~neg) + __popc(m.inf() & neg));
    if (!m.all) continue;
    uint32_t lo, hi;
    mask_bounds<dt>(m.all, lo, hi);
    ASSERT_EQ(static_cast<int>(lo), first) << "dtype " << dt;
    ASSERT_EQ(static_cast<int>(hi), last) << "dtype " << dt;
  }
}

TEST(ScanClassify, F64) { check_dtype<NS_F64>(50000); }
TEST(ScanClassify, F32) { check_dtype<NS_F32>(50000); }
TEST(ScanClassify, F16) { check_dtype<NS_F16>(50000); }
TEST(ScanClassify, BF16) { check_dtype<NS_BF16>(50000); }
TEST(ScanClassify, F8E4M3) { check_dtype<NS_F8E4M3>(50000); }
TEST(ScanClassify, F8E5M2) { check_dtype<NS_F8E5M2>(50000); }

}  // namespace

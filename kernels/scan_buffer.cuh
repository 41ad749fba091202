// Per-thread element code of the scan kernels (kernels/scan.cu, its only includer): the
// classification of each dtype's bits, the padding status of a row, a thread's counters and the
// grid-stride walk over one buffer, with the fix mode's zeroing of padding rows.
#pragma once

#include <stdint.h>

#include "scan_abi.h"

namespace {

constexpr int kThreads = NANSCOPE_SCAN_THREADS;  // ScanPolicy::threads launches this many
constexpr int kUnroll = NANSCOPE_SCAN_UNROLL;    // 16-byte loads in flight per thread

__device__ __forceinline__ int element_bytes(uint32_t dt) { return static_cast<int>(nanscope_scan_dtype_bytes(dt)); }

// 0 finite, 1 NaN, 2 +Inf, 3 -Inf for one element's bits.
__device__ __forceinline__ int classify(uint32_t dt, uint64_t bits) {
  switch (dt) {
    case NS_F64: {
      if ((bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull) return 0;
      if (bits & 0x000fffffffffffffull) return 1;
      return (bits >> 63) ? 3 : 2;
    }
    case NS_F32: {
      uint32_t b = (uint32_t)bits;
      if ((b & 0x7f800000u) != 0x7f800000u) return 0;
      if (b & 0x007fffffu) return 1;
      return (b >> 31) ? 3 : 2;
    }
    case NS_F16: {
      uint32_t b = (uint32_t)bits & 0xffffu;
      if ((b & 0x7c00u) != 0x7c00u) return 0;
      if (b & 0x03ffu) return 1;
      return (b >> 15) ? 3 : 2;
    }
    case NS_BF16: {
      uint32_t b = (uint32_t)bits & 0xffffu;
      if ((b & 0x7f80u) != 0x7f80u) return 0;
      if (b & 0x007fu) return 1;
      return (b >> 15) ? 3 : 2;
    }
    case NS_F8E4M3: {  // e4m3fn has no infinities; S.1111.111 is NaN
      return (((uint32_t)bits & 0x7fu) == 0x7fu) ? 1 : 0;
    }
    default: {  // NS_F8E5M2: IEEE-like, exponent 11111
      uint32_t b = (uint32_t)bits & 0xffu;
      if ((b & 0x7cu) != 0x7cu) return 0;
      if (b & 0x03u) return 1;
      return (b >> 7) ? 3 : 2;
    }
  }
}

// Non-zero if any element packed in the 32-bit word is non-finite. Per-lane SIMD compares.
__device__ __forceinline__ uint32_t word_suspect(uint32_t dt, uint32_t w) {
  switch (dt) {
    case NS_F32: return (w & 0x7f800000u) == 0x7f800000u;
    case NS_F16: return __vcmpeq2(w & 0x7c007c00u, 0x7c007c00u);
    case NS_BF16: return __vcmpeq2(w & 0x7f807f80u, 0x7f807f80u);
    case NS_F8E4M3: return __vcmpeq4(w & 0x7f7f7f7fu, 0x7f7f7f7fu);
    case NS_F8E5M2: return __vcmpeq4(w & 0x7c7c7c7cu, 0x7c7c7c7cu);
    default: return 0;  // f64 is checked on its high words by vec_suspect
  }
}

__device__ __forceinline__ uint32_t vec_suspect(uint32_t dt, const uint4& v) {
  if (dt == NS_F64)
    return ((v.y & 0x7ff00000u) == 0x7ff00000u) | ((v.w & 0x7ff00000u) == 0x7ff00000u);
  return word_suspect(dt, v.x) | word_suspect(dt, v.y) | word_suspect(dt, v.z) | word_suspect(dt, v.w);
}

// Padding status of row r, read on the device at scan time (so graph replays see new values).
__device__ __forceinline__ bool row_is_padding(const nanscope_row_spec& s, uint64_t r) {
  switch (s.source) {
    case NS_PAD_SEQ_LENS: {
      const int64_t v = s.index_i64 ? reinterpret_cast<const int64_t*>(s.source_ptr)[r]
                                    : reinterpret_cast<const int32_t*>(s.source_ptr)[r];
      return v == s.pad_value;
    }
    case NS_PAD_COUNT_DEVICE: {
      const int64_t n = s.index_i64 ? *reinterpret_cast<const int64_t*>(s.source_ptr)
                                    : *reinterpret_cast<const int32_t*>(s.source_ptr);
      return n < 0 || r >= static_cast<uint64_t>(n);
    }
    case NS_PAD_COUNT_HOST: return r >= s.host_count;
    case NS_PAD_MASK: return reinterpret_cast<const unsigned char*>(s.source_ptr)[r] != 0;
    default: return false;
  }
}

// Row of element i. Hot in fix mode: a double multiply by the reciprocal, corrected to exact.
__device__ __forceinline__ uint64_t row_of(uint64_t i, const nanscope_row_spec& s) {
  uint64_t r = static_cast<uint64_t>(static_cast<double>(i) * s.inv_row_stride);
  while (r > 0 && r * s.row_stride > i) --r;
  while ((r + 1) * s.row_stride <= i) ++r;
  return r;
}

struct ThreadCounts {
  uint32_t nan = 0, pos_inf = 0, neg_inf = 0, padding = 0;
  unsigned long long first = ~0ull, last = 0;
  unsigned long long flagged_row = ~0ull;  // last row this thread marked in the row bitmap
  bool flagged_padding = false;            // and its padding status: one lookup per row

  // `rows` is null for buffers scanned without a row spec.
  __device__ __forceinline__ void add(int kind, unsigned long long index, const nanscope_row_spec* rows) {
    if (kind == 0) return;
    if (rows) {
      const uint64_t r = row_of(index, *rows);
      if (index - r * rows->row_stride >= rows->row_elements) return;  // gap between rows
      if (r != flagged_row) {
        flagged_padding = row_is_padding(*rows, r);
        atomicOr(&rows->row_bitmap[r >> 5], 1u << (r & 31));
        flagged_row = r;
      }
      padding += flagged_padding;
    }
    nan += kind == 1;
    pos_inf += kind == 2;
    neg_inf += kind == 3;
    first = index < first ? index : first;
    last = index > last ? index : last;
  }
  __device__ __forceinline__ bool any() const { return (nan | pos_inf | neg_inf) != 0; }
};

__device__ __forceinline__ uint64_t load_bits(const unsigned char* base, uint32_t dt, uint64_t i) {
  switch (element_bytes(dt)) {
    case 8: return *reinterpret_cast<const uint64_t*>(base + i * 8);
    case 4: return *reinterpret_cast<const uint32_t*>(base + i * 4);
    case 2: return *reinterpret_cast<const uint16_t*>(base + i * 2);
    default: return base[i];
  }
}

// Slow path: a 16-byte vector that holds at least one suspect element.
template <bool kRows>
__device__ __noinline__ void count_vector(uint32_t dt, const uint4 v, unsigned long long first_elem,
                                          ThreadCounts& c, const nanscope_row_spec* rows) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
  const int eb = element_bytes(dt);
  const int per_vec = 16 / eb;
  for (int e = 0; e < per_vec; ++e) {
    const int byte = e * eb;
    uint64_t bits;
    if (eb == 8) bits = (uint64_t)words[byte / 4] | ((uint64_t)words[byte / 4 + 1] << 32);
    else bits = words[byte / 4] >> ((byte % 4) * 8);
    c.add(classify(dt, bits), first_elem + e, kRows ? rows : nullptr);
  }
}

// Fix mode: zeroes the elements of a padding row, leaving real rows and gaps untouched.
// A thread remembers the last row it looked up, so a vector costs one division.
struct PaddingCursor {
  uint64_t row = ~0ull;
  bool padding = false;
  __device__ __forceinline__ bool is_padding(const nanscope_row_spec& s, uint64_t r) {
    if (r != row) row = r, padding = row_is_padding(s, r);
    return padding;
  }
};

__device__ __forceinline__ void store_zero(unsigned char* base, uint32_t eb, uint64_t i) {
  switch (eb) {
    case 8: reinterpret_cast<uint64_t*>(base)[i] = 0; break;
    case 4: reinterpret_cast<uint32_t*>(base)[i] = 0; break;
    case 2: reinterpret_cast<uint16_t*>(base)[i] = 0; break;
    default: base[i] = 0; break;
  }
}

__device__ void zero_if_padding(unsigned char* base, uint32_t eb, uint64_t i, const nanscope_row_spec& s,
                                PaddingCursor& cur) {
  const uint64_t r = row_of(i, s);
  if (i - r * s.row_stride < s.row_elements && cur.is_padding(s, r)) store_zero(base, eb, i);
}

// A whole 16-byte vector starting at element e0: one store when it sits inside one row.
__device__ __forceinline__ void zero_vector_if_padding(unsigned char* base, uint32_t eb, uint64_t e0,
                                                       uint32_t per_vec, const nanscope_row_spec& s,
                                                       PaddingCursor& cur) {
  const uint64_t r = row_of(e0, s);
  const uint64_t col = e0 - r * s.row_stride;
  if (col + per_vec <= s.row_elements) {
    if (cur.is_padding(s, r)) *reinterpret_cast<uint4*>(base + e0 * eb) = make_uint4(0, 0, 0, 0);
    return;
  }
  for (uint32_t j = 0; j < per_vec; ++j) zero_if_padding(base, eb, e0 + j, s, cur);
}

// Counts the non-finite elements of one buffer that this thread owns (grid-stride).
// The dtype is a template parameter so the hot loop carries no dtype switch.
template <uint32_t dt, bool kRows, bool kFix>
__device__ void scan_buffer_typed(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  unsigned char* base = reinterpret_cast<unsigned char*>(b.ptr);
  PaddingCursor cursor;
  const uint64_t eb = element_bytes(dt);
  const uint64_t n = b.elements;
  const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;

  // Scalar head up to 16-byte alignment, then 16-byte vectors, then a scalar tail.
  uint64_t head = ((16 - (b.ptr & 15)) & 15) / eb;
  if (head > n) head = n;
  const uint64_t per_vec = 16 / eb;
  const uint64_t vecs = (n - head) / per_vec;
  const uint64_t tail_start = head + vecs * per_vec;

  if (!kRows) rows = nullptr;  // lets the plain instantiation drop every row-aware branch
  for (uint64_t i = tid; i < head; i += stride) {
    c.add(classify(dt, load_bits(base, dt, i)), i, rows);
    if (kFix) zero_if_padding(base, eb, i, *rows, cursor);
  }
  for (uint64_t i = tail_start + tid; i < n; i += stride) {
    c.add(classify(dt, load_bits(base, dt, i)), i, rows);
    if (kFix) zero_if_padding(base, eb, i, *rows, cursor);
  }

  const uint4* vbase = reinterpret_cast<const uint4*>(base + head * eb);
  (void)cursor;
  uint64_t v = tid;
  for (; v + (kUnroll - 1) * stride < vecs; v += kUnroll * stride) {
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = __ldcs(vbase + v + u * stride);
    uint32_t suspect = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) suspect |= vec_suspect(dt, x[u]);
    if (suspect) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (vec_suspect(dt, x[u])) count_vector<kRows>(dt, x[u], head + (v + u * stride) * per_vec, c, rows);
    }
    if (kFix) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        zero_vector_if_padding(base, eb, head + (v + u * stride) * per_vec, per_vec, *rows, cursor);
    }
  }
  for (; v < vecs; v += stride) {
    const uint4 x = __ldcs(vbase + v);
    if (vec_suspect(dt, x)) count_vector<kRows>(dt, x, head + v * per_vec, c, rows);
    if (kFix) zero_vector_if_padding(base, eb, head + v * per_vec, per_vec, *rows, cursor);
  }
}

template <bool kRows, bool kFix>
__device__ void scan_buffer_dispatch(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  switch (b.dtype) {
#define NS_SCAN_TYPED_(suffix, name, code, bytes) \
  case NS_##suffix: scan_buffer_typed<NS_##suffix, kRows, kFix>(b, c, rows); break;
    NANSCOPE_SCAN_DTYPES(NS_SCAN_TYPED_)
#undef NS_SCAN_TYPED_
    default: break;
  }
}

}  // namespace

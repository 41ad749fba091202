// Per-thread element code of the scan kernels (kernels/scan.cu, its only includer): the
// classification of one element's bits, the padding status of a row, a thread's counters, the
// marking of rows with non-finite values, and the walk over one buffer (each block a contiguous
// share of it), with the fix mode's zeroing of padding rows. Whole vectors are classified by
// scan_classify.cuh; only vectors across a row boundary are looked at element by element.
#pragma once

#include <stdint.h>

#include "scan_abi.h"
#include "scan_classify.cuh"

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

// Where a row-aware scan marks the rows that hold non-finite values: a block's own window of the
// row bitmap in shared memory when its share of the buffer spans few enough bitmap words (flushed
// into the device bitmap once, at the end of the buffer), else the device bitmap itself.
// It also carries the padding status of the rows the block's share spans, staged in shared
// memory before the walk (scan_rows.cuh: stage_row_padding), so a walk that enters a row does not
// wait on a dependent load of the row's status; rows outside it are looked up as before.
struct RowFlags {
  unsigned* window = nullptr;
  uint64_t window_word = 0;  // bitmap word of window[0]
  uint64_t window_words = 0;
  unsigned* bitmap = nullptr;
  const unsigned* pad_bits = nullptr;  // bit k: row pad_row0 + k is padding
  uint64_t pad_row0 = 0, pad_rows = 0;
  __device__ __forceinline__ unsigned* word(uint64_t w) const {
    return w - window_word < window_words ? window + (w - window_word) : bitmap + w;
  }
  __device__ __forceinline__ bool padding(const nanscope_row_spec& s, uint64_t r) const {
    const uint64_t k = r - pad_row0;
    return k < pad_rows ? (pad_bits[k >> 5] >> (k & 31)) & 1u : row_is_padding(s, r);
  }
};

struct ThreadCounts {
  uint32_t nan = 0, pos_inf = 0, neg_inf = 0, padding = 0;
  unsigned long long first = ~0ull, last = 0;  // of the elements counted one by one
  // The last step of vectors counted whole that found something: its first element and the
  // masks of its non-finite elements, vector u starting kThreads vectors after vector u - 1. A
  // thread visits its elements in index order, so the last element is found once, in settle(),
  // and the first when the first whole step finds something (`first` still empty), rather than
  // for every vector.
  unsigned long long last_e0 = 0;
  uint32_t last_masks[kUnroll] = {};
  unsigned long long flagged_row = ~0ull;  // last row this thread marked in the row bitmap
  unsigned long long flagged_row_start = 0;  // its first element
  bool flagged_padding = false;            // and its padding status: one lookup per row

  __device__ __forceinline__ void note_row(uint64_t r, const nanscope_row_spec& s, const RowFlags& flags) {
    flagged_padding = flags.padding(s, r);
    flagged_row = r;
    flagged_row_start = r * s.row_stride;
  }
  // `rows` is null for buffers scanned without a row spec.
  __device__ __forceinline__ void add(int kind, unsigned long long index, const nanscope_row_spec* rows,
                                      const RowFlags& flags) {
    if (kind == 0) return;
    if (rows) {
      const uint64_t r = row_of(index, *rows);
      if (index - r * rows->row_stride >= rows->row_elements) return;  // gap between rows
      if (r != flagged_row) {
        note_row(r, *rows, flags);
        atomicOr(flags.word(r >> 5), 1u << (r & 31));
      }
      padding += flagged_padding;
    }
    add_known_row(kind, index, false);
  }
  // An element whose row is already marked (the row-chunked walks).
  __device__ __forceinline__ void add_known_row(int kind, unsigned long long index, bool in_padding) {
    if (kind == 0) return;
    padding += in_padding;
    nan += kind == 1;
    pos_inf += kind == 2;
    neg_inf += kind == 3;
    first = index < first ? index : first;
    last = index > last ? index : last;
  }
  // What an element-by-element walk of one vector found (count_vector_split).
  template <class Split>
  __device__ __forceinline__ void add_split(const Split& p) {
    nan += p.nan, pos_inf += p.pos_inf, neg_inf += p.neg_inf, padding += p.padding;
    first = p.first < first ? p.first : first;
    last = p.last > last ? p.last : last;
  }
  // A whole vector x (masks m) starting at element e0.
  template <uint32_t dt>
  __device__ __forceinline__ void add_vec(const uint4& x, const VecMasks& m, unsigned long long e0) {
    uint4 xs[kUnroll];
    VecMasks ms[kUnroll];
    xs[0] = x, ms[0] = m;
#pragma unroll
    for (int u = 1; u < kUnroll; ++u) xs[u] = make_uint4(0, 0, 0, 0);
    add_step<dt>(xs, ms, e0);
  }
  // kUnroll whole vectors x (masks m; vector u starts at e0 + u * kThreads vectors): counts them,
  // and keeps their masks when they hold something. Returns how many non-finite elements they hold.
  template <uint32_t dt>
  __device__ __forceinline__ uint32_t add_step(const uint4 (&x)[kUnroll], const VecMasks (&m)[kUnroll],
                                               unsigned long long e0) {
    uint32_t found = 0, any = 0, inf = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      found += __popc(m[u].nan);
      any |= m[u].bad(), inf |= m[u].inf();
    }
    nan += found;
    if (inf) {  // rarer than NaN: split by sign only here
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint32_t neg = sign_mask<dt>(x[u]);
        const uint32_t p = __popc(m[u].inf() & ~neg), q = __popc(m[u].inf() & neg);
        pos_inf += p, neg_inf += q, found += p + q;
      }
    }
    if (any) {
      last_e0 = e0;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) last_masks[u] = m[u].bad();
      if (first == ~0ull) first = first_of_step<dt>(e0);  // once per thread
    }
    return found;
  }
  // The first non-finite element of the step last_masks holds (one of them is non-zero).
  template <uint32_t dt>
  __device__ __forceinline__ unsigned long long first_of_step(unsigned long long e0) const {
    constexpr uint64_t lane_stride = uint64_t{kThreads} * (16 / kElementBytes<dt>);
    uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!last_masks[u]) continue;
      mask_bounds<dt>(last_masks[u], lo, hi);
      return e0 + u * lane_stride + lo;
    }
    return ~0ull;
  }
  // Folds the last step counted whole into `last`; once, at the end of a buffer.
  template <uint32_t dt>
  __device__ __forceinline__ void settle() {
    constexpr uint64_t lane_stride = uint64_t{kThreads} * (16 / kElementBytes<dt>);
#pragma unroll
    for (int u = kUnroll - 1; u >= 0; --u) {
      if (!last_masks[u]) continue;
      uint32_t lo, hi;
      mask_bounds<dt>(last_masks[u], lo, hi);
      const unsigned long long e = last_e0 + u * lane_stride + hi;
      last = e > last ? e : last;
      break;
    }
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

// What count_vector_split found, returned by value: a ThreadCounts passed to a non-inlined
// function by reference would live in local memory for the whole walk (its address is taken),
// turning every count of the hot loop into a local load and store.
struct SplitCounts {
  uint32_t nan = 0, pos_inf = 0, neg_inf = 0, padding = 0;
  unsigned long long first = ~0ull, last = 0;
};

// A vector across a row boundary (or a gap) of a row-aware buffer: element by element, as the
// rows of its elements differ. Marks the rows it finds non-finite values in.
template <uint32_t dt>
__device__ __noinline__ SplitCounts count_vector_split(const uint4 v, unsigned long long first_elem,
                                                       const nanscope_row_spec* rows, const RowFlags flags) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
  constexpr int eb = (int)kElementBytes<dt>;
  SplitCounts out;
  uint64_t seen_row = ~0ull;
  bool seen_padding = false;
  for (int e = 0; e < 16 / eb; ++e) {
    const int byte = e * eb;
    uint64_t bits;
    if (eb == 8) bits = (uint64_t)words[byte / 4] | ((uint64_t)words[byte / 4 + 1] << 32);
    else bits = words[byte / 4] >> ((byte % 4) * 8);
    const int kind = classify(dt, bits);
    if (kind == 0) continue;
    const unsigned long long index = first_elem + e;
    const uint64_t r = row_of(index, *rows);
    if (index - r * rows->row_stride >= rows->row_elements) continue;  // gap between rows
    if (r != seen_row) {
      seen_row = r, seen_padding = flags.padding(*rows, r);
      atomicOr(flags.word(r >> 5), 1u << (r & 31));
    }
    out.padding += seen_padding;
    out.nan += kind == 1, out.pos_inf += kind == 2, out.neg_inf += kind == 3;
    out.first = index < out.first ? index : out.first;
    out.last = index > out.last ? index : out.last;
  }
  return out;
}

// Marks the rows in `row` (~0: none) in the row bitmap, one atomic per bitmap word a warp
// touches, not one per lane. Every lane of the warp calls it.
__device__ __forceinline__ void flag_rows_warp(unsigned long long row, const RowFlags& flags) {
  unsigned need = __ballot_sync(0xffffffffu, row != ~0ull);
  while (need) {
    const int leader = __ffs(need) - 1;
    const unsigned long long word = __shfl_sync(0xffffffffu, row >> 5, leader);
    const bool mine = row != ~0ull && (row >> 5) == word;
    const unsigned bits = __reduce_or_sync(0xffffffffu, mine ? 1u << (row & 31) : 0u);
    if ((int)(threadIdx.x & 31) == leader) atomicOr(flags.word(word), bits);
    need &= ~__ballot_sync(0xffffffffu, mine);
  }
}

// One vector of a row-aware buffer, starting at element e0. A vector inside one row (the common
// case) is counted whole, and its row looked up only when it is not the row this lane saw last.
// Every lane of the warp calls it.
template <uint32_t dt>
__device__ __forceinline__ void count_row_vector(const uint4& x, unsigned long long e0, ThreadCounts& c,
                                                 const nanscope_row_spec& s, const RowFlags& flags) {
  constexpr uint32_t per_vec = 16 / kElementBytes<dt>;
  const VecMasks m = classify_vec<dt>(x);
  const uint32_t bad = m.bad();
  unsigned long long to_flag = ~0ull;
  if (bad) {
    bool whole = c.flagged_row != ~0ull && e0 >= c.flagged_row_start && e0 + per_vec <= c.flagged_row_start + s.row_elements;
    if (!whole) {
      const uint64_t r = row_of(e0, s);
      whole = e0 + per_vec <= r * s.row_stride + s.row_elements;
      if (whole) c.note_row(r, s, flags), to_flag = r;
    }
    if (whole) {
      c.add_vec<dt>(x, m, e0);
      c.padding += c.flagged_padding ? __popc(bad) : 0u;
    } else {
      c.add_split(count_vector_split<dt>(x, e0, &s, flags));
    }
  }
  flag_rows_warp(to_flag, flags);
}

// One step of a row-aware walk: this thread's kUnroll vectors, kThreads vectors apart, the first
// starting at element e_first. When every lane's vectors lie in one row each (the common case:
// a row spans many steps), they are counted whole with that row's padding status, so a step
// full of NaN costs about what the plain walk's does: a lane in the row it marked last marks
// nothing; a lane that entered another row finds it with one division for the step (not one
// per vector) and marks it when the step holds something there. Otherwise (some lane's vectors
// straddle a row boundary or a gap) vector by vector. Every lane of the warp calls it.
template <uint32_t dt>
__device__ __forceinline__ void count_row_step(const uint4 (&x)[kUnroll], unsigned long long e_first, ThreadCounts& c,
                                               const nanscope_row_spec& s, const RowFlags& flags) {
  constexpr uint64_t per_vec = 16 / kElementBytes<dt>, lane_stride = uint64_t{kThreads} * per_vec;
  constexpr uint64_t span = uint64_t{kUnroll - 1} * lane_stride + per_vec;
  const bool in_row = c.flagged_row != ~0ull && e_first >= c.flagged_row_start &&
                      e_first + span <= c.flagged_row_start + s.row_elements;
  uint64_t entered = ~0ull;  // the row this lane's whole step lies in, when not the marked one
  if (!in_row) {
    const uint64_t r = row_of(e_first, s);
    if (e_first + span <= r * s.row_stride + s.row_elements) entered = r;
  }
  if (__all_sync(0xffffffffu, in_row || entered != ~0ull)) {
    VecMasks m[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) m[u] = classify_vec<dt>(x[u]);
    const uint32_t found = c.add_step<dt>(x, m, e_first);
    unsigned long long to_flag = ~0ull;
    if (!in_row && found) c.note_row(entered, s, flags), to_flag = entered;
    c.padding += c.flagged_padding ? found : 0u;
    flag_rows_warp(to_flag, flags);
    return;
  }
  // Vector by vector in a rolled loop (the vectors move down a register array, so no index is
  // dynamic): this path runs only where a step holds bad values and crosses a row, and unrolled
  // its code was fetched cold by every decode-sized scan with findings.
  uint4 v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) v[u] = x[u];
#pragma unroll 1
  for (int u = 0; u < kUnroll; ++u) {
    count_row_vector<dt>(v[0], e_first + u * lane_stride, c, s, flags);
#pragma unroll
    for (int k = 0; k + 1 < kUnroll; ++k) v[k] = v[k + 1];
  }
}

// Fix mode: zeroes the elements of a padding row, leaving real rows and gaps untouched.
// A thread remembers the last row it found and that row's first element, so a vector in the same
// row costs a subtraction and a compare, not a division and a status lookup.
struct PaddingCursor {
  uint64_t row = ~0ull, row_start = 0;
  bool padding = false;
  // Moves to the row of element i; returns i's column in it.
  __device__ __forceinline__ uint64_t locate(const nanscope_row_spec& s, const RowFlags& flags, uint64_t i) {
    if (row != ~0ull && i - row_start < s.row_stride) return i - row_start;  // i >= row_start: same row
    row = row_of(i, s), row_start = row * s.row_stride;
    padding = row < s.rows && flags.padding(s, row);  // (a gap's row is looked up too: never past the spec)
    return i - row_start;
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
                                const RowFlags& flags, PaddingCursor& cur) {
  if (cur.locate(s, flags, i) < s.row_elements && cur.padding) store_zero(base, eb, i);
}

// A whole 16-byte vector starting at element e0: one store when it sits inside one row.
__device__ __forceinline__ void zero_vector_if_padding(unsigned char* base, uint32_t eb, uint64_t e0,
                                                       uint32_t per_vec, const nanscope_row_spec& s,
                                                       const RowFlags& flags, PaddingCursor& cur) {
  if (cur.locate(s, flags, e0) + per_vec <= s.row_elements) {
    if (cur.padding) *reinterpret_cast<uint4*>(base + e0 * eb) = make_uint4(0, 0, 0, 0);
    return;
  }
  for (uint32_t j = 0; j < per_vec; ++j) zero_if_padding(base, eb, e0 + j, s, flags, cur);
}

// This block's share of a buffer: a scalar head up to 16-byte alignment (block 0), whole vectors
// [v_lo, v_hi), a scalar tail (the last block). Contiguous shares keep the rows a block marks
// together, so its marks fit a small shared window and blocks rarely touch the same bitmap word.
struct BlockShare {
  uint64_t head, vecs, tail_start, v_lo, v_hi;
  uint64_t e_lo, e_hi;  // the elements of the share, [e_lo, e_hi)
};

// Which part of a buffer a block walks: `index` of `count` equal parts. Every block of the grid
// takes a part of every buffer, except in a merged node of small buffers, whose blocks each walk
// one part of one buffer (nanscope_group_part_blocks in scan_abi.h).
struct SharePart {
  uint32_t index, count;
};

__device__ __forceinline__ SharePart whole_grid() { return {blockIdx.x, gridDim.x}; }

__device__ __forceinline__ BlockShare block_share(uint64_t ptr, uint64_t n, uint32_t eb, SharePart part = whole_grid()) {
  BlockShare w;
  w.head = ((16 - (ptr & 15)) & 15) / eb;
  if (w.head > n) w.head = n;
  const uint64_t per_vec = 16 / eb;
  w.vecs = (n - w.head) / per_vec;
  w.tail_start = w.head + w.vecs * per_vec;
  // Whole warps of vectors; a block alone on its buffer (most graph nodes) skips the 64-bit division.
  const uint64_t share = part.count == 1 ? (w.vecs + 31) & ~31ull : ((w.vecs + part.count - 1) / part.count + 31) & ~31ull;
  w.v_lo = (uint64_t)part.index * share < w.vecs ? (uint64_t)part.index * share : w.vecs;
  w.v_hi = w.v_lo + share < w.vecs ? w.v_lo + share : w.vecs;
  w.e_lo = part.index == 0 ? 0 : w.head + w.v_lo * per_vec;
  w.e_hi = part.index == part.count - 1 ? n : w.head + w.v_hi * per_vec;
  return w;
}

// This thread's kUnroll vectors of a step, vector u at index i + u * kThreads of vbase: every one
// when the step is whole (block-uniform: no bounds test and no zero fill per vector, the common
// case), else those below `end` (vectors past the share read as zeros, which are finite).
__device__ __forceinline__ void load_step(uint4 (&x)[kUnroll], const uint4* vbase, uint64_t i, bool whole, uint64_t end) {
  if (whole) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = __ldcs(vbase + i + u * kThreads);
  } else {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = i + u * kThreads < end ? __ldcs(vbase + i + u * kThreads) : make_uint4(0, 0, 0, 0);
  }
}

// Counts the non-finite elements of this block's share of one buffer. The dtype is a template
// parameter so the hot loop carries no dtype switch. Loop trip counts are the same for every
// thread of the block, so warps stay converged for the ballots.
template <uint32_t dt, bool kRows, bool kFix>
__device__ void scan_buffer_typed(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows,
                                  const RowFlags& flags, SharePart part) {
  unsigned char* base = reinterpret_cast<unsigned char*>(b.ptr);
  PaddingCursor cursor;
  constexpr uint32_t eb = kElementBytes<dt>, per_vec = 16 / eb;
  const uint64_t n = b.elements;
  const BlockShare w = block_share(b.ptr, n, eb, part);
  if (!kRows) rows = nullptr;  // lets the plain instantiation drop every row-aware branch
  auto scalar = [&](uint64_t i) {
    c.add(classify(dt, load_bits(base, dt, i)), i, rows, flags);
    if (kFix) zero_if_padding(base, eb, i, *rows, flags, cursor);
  };
  if (part.index == 0)
    for (uint64_t i = threadIdx.x; i < w.head; i += kThreads) scalar(i);

  const uint4* vbase = reinterpret_cast<const uint4*>(base + w.head * eb);
  (void)cursor;
  constexpr uint64_t step_vecs = uint64_t{kThreads} * kUnroll;
  for (uint64_t s = w.v_lo; s < w.v_hi; s += step_vecs) {
    uint4 x[kUnroll];
    load_step(x, vbase, s + threadIdx.x, s + step_vecs <= w.v_hi, w.v_hi);
    if (__any_sync(0xffffffffu, step_suspect_bits<dt>(x))) {  // the whole warp classifies: its lanes' rows are marked together
      if constexpr (kRows) {
        count_row_step<dt>(x, w.head + (s + threadIdx.x) * per_vec, c, *rows, flags);
      } else {
        VecMasks m[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) m[u] = classify_vec<dt>(x[u]);
        c.add_step<dt>(x, m, w.head + (s + threadIdx.x) * per_vec);
      }
    }
    if (kFix) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint64_t i = s + u * kThreads + threadIdx.x;
        if (i < w.v_hi) zero_vector_if_padding(base, eb, w.head + i * per_vec, per_vec, *rows, flags, cursor);
      }
    }
  }
  if (part.index == part.count - 1)
    for (uint64_t i = w.tail_start + threadIdx.x; i < n; i += kThreads) scalar(i);
  c.settle<dt>();
}

template <bool kRows, bool kFix>
__device__ void scan_buffer_dispatch(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows,
                                     const RowFlags& flags, SharePart part = whole_grid()) {
  switch (b.dtype) {
#define NS_SCAN_TYPED_(suffix, name, code, bytes) \
  case NS_##suffix: scan_buffer_typed<NS_##suffix, kRows, kFix>(b, c, rows, flags, part); break;
    NANSCOPE_SCAN_DTYPES(NS_SCAN_TYPED_)
#undef NS_SCAN_TYPED_
    default: break;
  }
}

}  // namespace

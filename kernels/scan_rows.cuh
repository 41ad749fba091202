// Row-aware scans (kernels/scan.cu): the row-chunked walk that fix mode takes on row-aligned
// buffers, the shared window of the row bitmap the other walks mark rows in, and scan_buffer,
// which picks the walk for one buffer.
#pragma once

#include <stdint.h>

#include "scan_abi.h"
#include "scan_buffer.cuh"

namespace {

// Bitmap words a block keeps in shared memory while it walks its share of a buffer (16384 rows).
constexpr int kRowWindowWords = 512;

__device__ __forceinline__ unsigned* row_window() {
  __shared__ unsigned s_window[kRowWindowWords];
  return s_window;
}

// Once per block, before its first row-aware buffer: the window starts empty, and every flush
// leaves it empty again.
__device__ __forceinline__ void clear_row_window() {
  for (int i = threadIdx.x; i < kRowWindowWords; i += kThreads) row_window()[i] = 0;
}

// Where this block marks the rows of buffer `b`: its window when the rows of its share span at
// most kRowWindowWords bitmap words, else the device bitmap (the row-chunked walks mark rows per
// chunk and need no window).
__device__ __forceinline__ RowFlags row_flags_for(const nanscope_scan_buffer& b, const nanscope_row_spec& s,
                                                  bool chunked_walk) {
  RowFlags f;
  f.bitmap = s.row_bitmap;
  const uint32_t eb = element_bytes(b.dtype);
  if (chunked_walk || eb == 0) return f;
  const BlockShare w = block_share(b.ptr, b.elements, eb);
  if (w.e_lo >= w.e_hi) return f;
  const uint64_t first_word = row_of(w.e_lo, s) >> 5, last_word = row_of(w.e_hi - 1, s) >> 5;
  if (last_word - first_word >= (uint64_t)kRowWindowWords) return f;
  f.window = row_window();
  f.window_word = first_word;
  f.window_words = last_word - first_word + 1;
  return f;
}

// Rows whose padding status a block stages for its walk (one bit each, in shared memory).
constexpr int kStagedRowWords = 32;
// Shares spanning fewer rows are not staged: the walk then looks a row up only when it finds a
// bad value there, and a clean scan pays no round trip before its walk (staging the 8 rows of a
// decode-sized [8,256] node cost it 1.0 us clean and 1.2 us with NaN, run S12-4).
constexpr uint64_t kMinStagedRows = 33;

__device__ __forceinline__ unsigned* staged_padding() {
  __shared__ unsigned s_pad[kStagedRowWords];
  return s_pad;
}

// Before the element walk of a row-aware buffer (every thread calls it; a barrier unless it
// stages nothing): the padding status of the rows of this block's share, looked up all at once
// (one round trip for the block) instead of one dependent load each time a lane enters a row.
// Shares spanning more rows than fit, or too few to pay, keep looking rows up one by one.
__device__ __forceinline__ void stage_row_padding(const nanscope_scan_buffer& b, const nanscope_row_spec& s,
                                                  RowFlags& f) {
  const uint32_t eb = element_bytes(b.dtype);
  if (s.source == NS_PAD_NONE || eb == 0) return;
  const BlockShare w = block_share(b.ptr, b.elements, eb);
  if (w.e_lo >= w.e_hi) return;
  const uint64_t r0 = row_of(w.e_lo, s), r1 = row_of(w.e_hi - 1, s);
  if (r0 >= s.rows) return;
  const uint64_t n = (r1 < s.rows ? r1 + 1 : s.rows) - r0;  // rows past the spec keep their old lookup
  if (n > uint64_t{kStagedRowWords} * 32 || n < kMinStagedRows) return;
  unsigned* bits = staged_padding();
  for (uint64_t k0 = 0; k0 < n; k0 += kThreads) {
    const uint64_t k = k0 + threadIdx.x;
    const unsigned ballot = __ballot_sync(0xffffffffu, k < n && row_is_padding(s, r0 + k));
    if ((threadIdx.x & 31) == 0 && k < uint64_t{kStagedRowWords} * 32) bits[k >> 5] = ballot;
  }
  __syncthreads();
  f.pad_bits = bits, f.pad_row0 = r0, f.pad_rows = n;
}

// After the walk of a buffer (every thread calls it: it is a barrier): the window's marks go to
// the device bitmap, one atomic per non-empty word, and the window is left empty.
__device__ __forceinline__ void flush_row_window(const RowFlags& f, bool marked) {
  if (!__syncthreads_or(marked) || !f.window) return;
  for (uint64_t i = threadIdx.x; i < f.window_words; i += kThreads) {
    const unsigned bits = f.window[i];
    if (!bits) continue;
    f.window[i] = 0;
    atomicOr(f.bitmap + f.window_word + i, bits);
  }
}

// The row-chunked walks visit (row, chunk) items gridDim.x apart, in batches of kThreads items:
// slot k of a batch is item first + k * gridDim.x. A warp that finds a non-finite value in its
// part of an item sets the item's slot bit; after the batch one thread per flagged item marks its
// row in the device bitmap (one atomic per item, not one per warp or lane).
__device__ __forceinline__ void flag_item(unsigned* slots, uint32_t slot, uint32_t found) {
  if (__ballot_sync(0xffffffffu, found != 0) && (threadIdx.x & 31) == 0) atomicOr(&slots[slot >> 5], 1u << (slot & 31));
}

// After a batch's barrier: marks the rows of the flagged items, and empties the other parity's
// slots for the next batch (nobody reads them until after the next batch's first barrier).
__device__ __forceinline__ void flush_item_flags(const unsigned* slots, unsigned* next_slots, uint64_t first,
                                                 uint64_t chunks_per_row, unsigned* bitmap) {
  if ((slots[threadIdx.x >> 5] >> (threadIdx.x & 31)) & 1u) {
    const uint64_t r = (first + uint64_t{threadIdx.x} * gridDim.x) / chunks_per_row;
    atomicOr(&bitmap[r >> 5], 1u << (r & 31));
  }
  if (threadIdx.x < kThreads / 32) next_slots[threadIdx.x] = 0;
}

// How a row-aligned buffer is cut into (row, chunk) items: a chunk is one block's step of
// kThreads x kUnroll 16-byte vectors.
struct RowChunks {
  uint64_t row_vecs, chunks_per_row, items;
};

template <uint32_t dt>
__device__ __forceinline__ RowChunks row_chunks(const nanscope_row_spec& s) {
  constexpr uint64_t per_vec = 16 / kElementBytes<dt>, chunk_vecs = uint64_t{kThreads} * kUnroll;
  RowChunks g;
  g.row_vecs = s.row_elements / per_vec;
  g.chunks_per_row = g.row_vecs ? (g.row_vecs + chunk_vecs - 1) / chunk_vecs : 1;
  g.items = s.rows * g.chunks_per_row;
  return g;
}

// Chunk `ch` of row `r` of a row-aligned buffer: scan it, and zero it when the row is padding.
// `known_padding`: the caller already knows the row is padding; otherwise (fix) its status is
// looked up after the chunk's loads are issued, so the two round trips overlap. Every thread of
// the block calls it.
template <uint32_t dt, bool kFix>
__device__ __forceinline__ void scan_row_chunk(const nanscope_scan_buffer& b, ThreadCounts& c, const nanscope_row_spec* rows,
                                               const RowChunks& g, uint64_t r, uint64_t ch, bool known_padding,
                                               unsigned* slots, uint32_t slot) {
  unsigned char* base = reinterpret_cast<unsigned char*>(b.ptr);
  constexpr uint32_t eb = kElementBytes<dt>, per_vec = 16 / eb;
  const uint64_t row_vecs = g.row_vecs, chunk_vecs = uint64_t{kThreads} * kUnroll;
  const uint64_t row_start = r * rows->row_stride;
  uint4* vrow = reinterpret_cast<uint4*>(base + row_start * eb);
  const uint64_t v0 = ch * chunk_vecs;
  const uint64_t v1 = v0 + chunk_vecs < row_vecs ? v0 + chunk_vecs : row_vecs;
  uint4 x[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint64_t i = v0 + threadIdx.x + u * kThreads;
    x[u] = i < v1 ? __ldcs(vrow + i) : make_uint4(0, 0, 0, 0);
  }
  const bool pad = known_padding || (kFix && row_is_padding(*rows, r));
  uint32_t found = 0;
  if (__any_sync(0xffffffffu, step_suspect_bits<dt>(x))) {
    VecMasks m[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) m[u] = classify_vec<dt>(x[u]);
    found = c.add_step<dt>(x, m, row_start + (v0 + threadIdx.x) * per_vec);
    c.padding += pad ? found : 0u;
  }
  if (kFix && pad) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (v0 + threadIdx.x + u * kThreads < v1) vrow[v0 + threadIdx.x + u * kThreads] = make_uint4(0, 0, 0, 0);
  }
  if (ch == g.chunks_per_row - 1) {  // elements past the last full vector of the row
    for (uint64_t j = row_vecs * per_vec + threadIdx.x; j < rows->row_elements; j += kThreads) {
      const int kind = classify(dt, load_bits(base, dt, row_start + j));
      c.add_known_row(kind, row_start + j, pad);
      found |= kind;
      if (kFix && pad) store_zero(base, eb, row_start + j);
    }
  }
  flag_item(slots, slot, found);
}

// Plain scans never see a row spec; row-aware scans (watches, rules) run in their own entry
// point so the plain kernel keeps its registers and occupancy.
// Row-aligned buffers (16-byte aligned rows) are walked in chunks of one row, so a block looks
// a row's padding status up once per chunk. With kZeroOnly, real rows are not read at all:
// padding rows are scanned (for the report) and zeroed.
template <uint32_t dt, bool kFix, bool kZeroOnly>
__device__ void scan_rows_chunked(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  __shared__ unsigned s_slots[2][kThreads / 32];  // flagged items of this batch and the next
  const RowChunks g = row_chunks<dt>(*rows);
  const uint64_t chunks_per_row = g.chunks_per_row, items = g.items, batch = uint64_t{gridDim.x} * kThreads;
  if (threadIdx.x < 2 * (kThreads / 32)) s_slots[threadIdx.x / (kThreads / 32)][threadIdx.x % (kThreads / 32)] = 0;
  uint32_t parity = 0;
  if constexpr (kZeroOnly) {
    // Real rows are never read. The block looks up the status of up to kThreads of its items
    // at once (one round trip, not one per item), then works on the padding ones only.
    __shared__ unsigned int s_pad_bits[kThreads / 32];
    for (uint64_t first = blockIdx.x; first < items; first += batch, parity ^= 1) {
      const uint64_t mine = first + uint64_t{threadIdx.x} * gridDim.x;
      const bool pad = mine < items && row_is_padding(*rows, mine / chunks_per_row);
      const unsigned int ballot = __ballot_sync(0xffffffffu, pad);
      if ((threadIdx.x & 31) == 0) s_pad_bits[threadIdx.x / 32] = ballot;
      __syncthreads();
      for (int w = 0; w < kThreads / 32; ++w) {
        unsigned int bits = s_pad_bits[w];
        while (bits) {
          const int lane = __ffs(bits) - 1;
          bits &= bits - 1;
          const uint64_t item = first + uint64_t(w * 32 + lane) * gridDim.x, r = item / chunks_per_row;
          scan_row_chunk<dt, kFix>(b, c, rows, g, r, item - r * chunks_per_row, true, s_slots[parity], w * 32 + lane);
        }
      }
      __syncthreads();
      flush_item_flags(s_slots[parity], s_slots[parity ^ 1], first, chunks_per_row, rows->row_bitmap);
    }
  } else {
    // Items are visited gridDim.x apart: step (row, chunk) by the same amount instead of
    // dividing every item (a 64-bit division costs more than the chunk's status check).
    const uint64_t step_r = gridDim.x / chunks_per_row, step_c = gridDim.x - step_r * chunks_per_row;
    uint64_t r = blockIdx.x / chunks_per_row, ch = blockIdx.x - r * chunks_per_row;
    for (uint64_t first = blockIdx.x; first < items; first += batch, parity ^= 1) {
      __syncthreads();  // the slots were emptied
      for (uint32_t k = 0; k < (uint32_t)kThreads && first + uint64_t{k} * gridDim.x < items; ++k) {
        scan_row_chunk<dt, kFix>(b, c, rows, g, r, ch, false, s_slots[parity], k);
        r += step_r;
        ch += step_c;
        if (ch >= chunks_per_row) ch -= chunks_per_row, ++r;
      }
      __syncthreads();
      flush_item_flags(s_slots[parity], s_slots[parity ^ 1], first, chunks_per_row, rows->row_bitmap);
    }
  }
  c.settle<dt>();
}

template <bool kFix, bool kZeroOnly>
__device__ void scan_rows_chunked_dispatch(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  switch (b.dtype) {
#define NS_SCAN_CHUNKED_(suffix, name, code, bytes) \
  case NS_##suffix: scan_rows_chunked<NS_##suffix, kFix, kZeroOnly>(b, c, rows); break;
    NANSCOPE_SCAN_DTYPES(NS_SCAN_CHUNKED_)
#undef NS_SCAN_CHUNKED_
    default: break;
  }
}

// Whether a row-aware buffer takes the row-chunked walk: only the fix does, where each chunk's
// padding status is looked up once (detection alone looks rows up only for bad values).
__device__ __forceinline__ bool chunked_walk(const nanscope_row_spec& s) {
  return s.fix && s.source != NS_PAD_NONE && s.chunked;
}

// kFixCode false: the detection-only entry point, which carries none of the fix walks (their
// registers made the general row kernel spill in its detection loop).
template <bool kRows, bool kFixCode = true>
__device__ void scan_buffer(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows,
                            const RowFlags& flags, SharePart part = whole_grid()) {
  if (!kRows || !rows) {
    scan_buffer_dispatch<false, false>(b, c, nullptr, flags, part);
    return;
  }
  if constexpr (!kFixCode) {
    scan_buffer_dispatch<true, false>(b, c, rows, flags);
    return;
  }
  const bool fix = rows->fix && rows->source != NS_PAD_NONE;
  if (chunked_walk(*rows)) {
    if (rows->zero_only) scan_rows_chunked_dispatch<true, true>(b, c, rows);
    else scan_rows_chunked_dispatch<true, false>(b, c, rows);
  } else if (fix) {
    scan_buffer_dispatch<true, true>(b, c, rows, flags);
  } else {
    scan_buffer_dispatch<true, false>(b, c, rows, flags);
  }
}

}  // namespace

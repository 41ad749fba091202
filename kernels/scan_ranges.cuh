// The row verdicts of a record (kernels/scan.cu, the last block of a scan): the row bitmap of a
// row-aware buffer turned into ranges of consecutive rows with the same padding status, by every
// thread of the block at once (a thread per bitmap word, a block-wide prefix count to number the
// ranges), and the bitmap cleared for the next run. One thread looking rows up one after another
// cost a dependent load per flagged row: hundreds of microseconds when every row holds NaN.
#pragma once

#include <stdint.h>

#include "scan_abi.h"
#include "scan_buffer.cuh"

namespace {

struct RowRanges {
  uint32_t first[NANSCOPE_MAX_ROW_RANGES], last[NANSCOPE_MAX_ROW_RANGES];
  uint8_t padding[NANSCOPE_MAX_ROW_RANGES];  // range i is made of padding rows
  uint32_t count;
  bool truncated;
};

// Padding status of the rows 32w + j of bitmap word w whose bit j is set in `flagged`.
__device__ __forceinline__ unsigned padding_mask(const nanscope_row_spec& s, uint64_t w, unsigned flagged) {
  if (!flagged || s.source == NS_PAD_NONE) return 0;
  unsigned mask = 0;
  if (s.source == NS_PAD_COUNT_DEVICE || s.source == NS_PAD_COUNT_HOST) {
    const uint64_t first_row = w * 32;
    for (int j = 0; j < 32; ++j) mask |= (unsigned)row_is_padding(s, first_row + j) << j;  // arithmetic, no loads
    return mask & flagged;
  }
#pragma unroll 16
  for (int j = 0; j < 32; ++j)
    if ((flagged >> j) & 1u) mask |= (unsigned)row_is_padding(s, w * 32 + j) << j;
  return mask;
}

// Block-wide exclusive prefix sum of `v` (every thread calls it; two barriers); `total` gets the sum.
__device__ __forceinline__ uint32_t block_exclusive_sum(uint32_t v, uint32_t& total) {
  __shared__ uint32_t s_warp[kThreads / 32 + 1];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= (unsigned)o) x += y;
  }
  if (lane == 31) s_warp[warp] = x;
  __syncthreads();
  if (warp == 0) {
    uint32_t t = lane < kThreads / 32 ? s_warp[lane] : 0, inc = t;
#pragma unroll
    for (int o = 1; o < kThreads / 32; o <<= 1) {
      const uint32_t y = __shfl_up_sync(0xffffffffu, inc, o);
      if (lane >= (unsigned)o) inc += y;
    }
    if (lane < kThreads / 32) s_warp[lane] = inc - t;
    if (lane == kThreads / 32 - 1) s_warp[kThreads / 32] = inc;
  }
  __syncthreads();
  total = s_warp[kThreads / 32];
  return s_warp[warp] + x - v;
}

// Writes the ranges that start (or end) in this thread's word; `index` numbers its first one.
__device__ __forceinline__ void write_range_bounds(RowRanges& out, unsigned starts, unsigned ends, unsigned pad,
                                                   uint64_t w, uint32_t start_index, uint32_t end_index) {
  for (uint32_t k = start_index; starts && k < NANSCOPE_MAX_ROW_RANGES; ++k) {
    const int j = __ffs(starts) - 1;
    starts &= starts - 1;
    out.first[k] = (uint32_t)(w * 32 + j);
    out.padding[k] = (pad >> j) & 1u;
  }
  for (uint32_t k = end_index; ends && k < NANSCOPE_MAX_ROW_RANGES; ++k) {
    const int j = __ffs(ends) - 1;
    ends &= ends - 1;
    out.last[k] = (uint32_t)(w * 32 + j);
  }
}

// The ranges of one buffer's bitmap (`s` in shared memory), into `out` (shared). Every thread
// calls it. A row starts a range unless the row before it is flagged with the same padding
// status; it ends one unless the row after it is. The tiles of kThreads words stop once a range
// past the last one a record holds has started (then the rest of the bitmap is only cleared).
__device__ void build_row_ranges(const nanscope_row_spec& s, RowRanges& out) {
  __shared__ unsigned s_flag[kThreads + 2], s_pad[kThreads + 2];  // [0]: the word before the tile
  const uint64_t words = (s.rows + 31) / 32;
  const unsigned t = threadIdx.x;
  if (t == 0) s_flag[0] = s_pad[0] = 0;
  uint32_t starts_before = 0, ends_before = 0;
  uint64_t tile = 0;
  for (; tile < words && starts_before <= NANSCOPE_MAX_ROW_RANGES; tile += kThreads) {
    const uint64_t w = tile + t;
    const unsigned f = w < words ? __ldcg(&s.row_bitmap[w]) : 0u, p = padding_mask(s, w, f);
    s_flag[t + 1] = f, s_pad[t + 1] = p;
    if (t == kThreads - 1) {  // the first row after the tile
      const unsigned nf = w + 1 < words ? __ldcg(&s.row_bitmap[w + 1]) & 1u : 0u;
      s_flag[kThreads + 1] = nf, s_pad[kThreads + 1] = nf && row_is_padding(s, (w + 1) * 32);
    }
    __syncthreads();
    const unsigned prev_f = f << 1 | s_flag[t] >> 31, prev_p = p << 1 | s_pad[t] >> 31;
    const unsigned next_f = f >> 1 | (s_flag[t + 2] & 1u) << 31, next_p = p >> 1 | (s_pad[t + 2] & 1u) << 31;
    const unsigned starts = f & ~(prev_f & ~(prev_p ^ p)), ends = f & ~(next_f & ~(next_p ^ p));
    uint32_t total;  // starts in the low half, ends in the high half (at most 8192 each)
    const uint32_t before = block_exclusive_sum(__popc(starts) | __popc(ends) << 16, total);
    write_range_bounds(out, starts, ends, p, w, starts_before + (before & 0xffffu), ends_before + (before >> 16));
    starts_before += total & 0xffffu, ends_before += total >> 16;
    if (t == kThreads - 1) s_flag[0] = f, s_pad[0] = p;  // every thread read s_flag[t] before the sum's barriers
    if (f) s.row_bitmap[w] = 0;
  }
  for (uint64_t w = tile + t; w < words; w += kThreads) s.row_bitmap[w] = 0;
  if (t == 0) {
    out.count = starts_before < NANSCOPE_MAX_ROW_RANGES ? starts_before : NANSCOPE_MAX_ROW_RANGES;
    out.truncated = starts_before > NANSCOPE_MAX_ROW_RANGES;
  }
}

}  // namespace

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

// The padding status of a tile's flagged rows into s_pad[1 + k] (bit j: row 32 (tile + k) + j),
// a warp per bitmap word and a lane per row: a lookup is one lane's load (or a staged bit,
// RowFlags::padding), not a thread walking its word's 32 rows (unrolled, that walk was most of
// the code a scan with findings ran cold: ranges cost a decode-sized row-aware node 2.7 us, run
// S12-1). Every thread calls it; s_pad[1..] of the tile's words start at zero.
__device__ __forceinline__ void stage_tile_padding(const nanscope_row_spec& s, const RowFlags& flags, uint64_t tile,
                                                   uint64_t words, const unsigned* s_flag, unsigned* s_pad) {
  if (s.source == NS_PAD_NONE) return;
  const unsigned lane = threadIdx.x & 31;
  const uint64_t tile_words = words - tile < (uint64_t)kThreads ? words - tile : (uint64_t)kThreads;
#pragma unroll 4
  for (uint64_t k = threadIdx.x >> 5; k < tile_words; k += kThreads / 32) {
    const unsigned f = s_flag[1 + k];
    if (!f) continue;  // the warp's word: uniform
    const bool pad = ((f >> lane) & 1u) && flags.padding(s, (tile + k) * 32 + lane);
    const unsigned bits = __ballot_sync(0xffffffffu, pad);
    if (lane == 0) s_pad[1 + k] = bits;
  }
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
#pragma unroll 1
  for (uint32_t k = start_index; starts && k < NANSCOPE_MAX_ROW_RANGES; ++k) {
    const int j = __ffs(starts) - 1;
    starts &= starts - 1;
    out.first[k] = (uint32_t)(w * 32 + j);
    out.padding[k] = (pad >> j) & 1u;
  }
#pragma unroll 1
  for (uint32_t k = end_index; ends && k < NANSCOPE_MAX_ROW_RANGES; ++k) {
    const int j = __ffs(ends) - 1;
    ends &= ends - 1;
    out.last[k] = (uint32_t)(w * 32 + j);
  }
}

// The ranges of one buffer's row marks (`s` in shared memory), into `out` (shared). Every thread
// calls it. A row starts a range unless the row before it is flagged with the same padding
// status; it ends one unless the row after it is. The tiles of kThreads words stop once a range
// past the last one a record holds has started (then the rest of the marks are only cleared).
// The marks are the device bitmap (`marks` = s.row_bitmap, `words` = its size), or with kShared
// a one-block scan's own window, which then is neither flushed nor read back (two round trips).
template <bool kShared>
__device__ void build_row_ranges(const nanscope_row_spec& s, RowRanges& out, unsigned* marks, uint64_t words,
                                 const RowFlags& flags) {
  __shared__ unsigned s_flag[kThreads + 2], s_pad[kThreads + 2];  // [0]: the word before the tile
  auto mark_word = [&](uint64_t w) -> unsigned { return kShared ? marks[w] : __ldcg(&marks[w]); };
  const unsigned t = threadIdx.x;
  if (t == 0) s_flag[0] = s_pad[0] = 0;
  uint32_t starts_before = 0, ends_before = 0;
  uint64_t tile = 0;
  for (; tile < words && starts_before <= NANSCOPE_MAX_ROW_RANGES; tile += kThreads) {
    const uint64_t w = tile + t;
    const unsigned f = w < words ? mark_word(w) : 0u;
    s_flag[t + 1] = f, s_pad[t + 1] = 0;
    if (t == kThreads - 1) {  // the first row after the tile
      const unsigned nf = w + 1 < words ? mark_word(w + 1) & 1u : 0u;
      s_flag[kThreads + 1] = nf, s_pad[kThreads + 1] = nf && flags.padding(s, (w + 1) * 32);
    }
    __syncthreads();
    stage_tile_padding(s, flags, tile, words, s_flag, s_pad);
    __syncthreads();
    const unsigned p = s_pad[t + 1];
    const unsigned prev_f = f << 1 | s_flag[t] >> 31, prev_p = p << 1 | s_pad[t] >> 31;
    const unsigned next_f = f >> 1 | (s_flag[t + 2] & 1u) << 31, next_p = p >> 1 | (s_pad[t + 2] & 1u) << 31;
    const unsigned starts = f & ~(prev_f & ~(prev_p ^ p)), ends = f & ~(next_f & ~(next_p ^ p));
    uint32_t total;  // starts in the low half, ends in the high half (at most 8192 each)
    const uint32_t before = block_exclusive_sum(__popc(starts) | __popc(ends) << 16, total);
    write_range_bounds(out, starts, ends, p, w, starts_before + (before & 0xffffu), ends_before + (before >> 16));
    starts_before += total & 0xffffu, ends_before += total >> 16;
    if (t == kThreads - 1) s_flag[0] = f, s_pad[0] = p;  // every thread read s_flag[t] before the sum's barriers
    if (f) marks[w] = 0;
  }
  for (uint64_t w = tile + t; w < words; w += kThreads) marks[w] = 0;
  if (t == 0) {
    out.count = starts_before < NANSCOPE_MAX_ROW_RANGES ? starts_before : NANSCOPE_MAX_ROW_RANGES;
    out.truncated = starts_before > NANSCOPE_MAX_ROW_RANGES;
  }
}

}  // namespace

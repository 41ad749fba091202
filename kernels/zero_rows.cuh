// zero_padding: the seed's fix as one lean kernel (the nanscope_zero_rows* entry points in
// kernels/scan.cu; this is their agent code).
// It zeroes the padding rows and reads nothing else: no real row, and not the padding rows
// either, so what they held is not reported (the `fix` action scans, reports and zeroes). Each
// block marks the padding rows itself in a shared bitmap (one batch of row-status loads in
// flight, one barrier), then takes its share of the (padding row, chunk) items. No counters and
// no ticket: a node costs an empty kernel, one round trip and the stores.
#pragma once

#include <stdint.h>

#include "scan_abi.h"
#include "scan_buffer.cuh"

namespace {

constexpr int kZeroThreads = NANSCOPE_ZERO_THREADS;  // scan_abi.h; kZeroRowsThreads on the host
constexpr int kZeroUnroll = 1024 / kZeroThreads;               // a chunk is 1024 16-byte vectors
constexpr int kZeroRowsPerThread = 1024 / kZeroThreads;        // row statuses a thread loads per batch
constexpr int kZeroBatchRows = kZeroThreads * kZeroRowsPerThread;  // rows marked per batch
constexpr int kZeroBatchWords = kZeroBatchRows / 32;

// How a zero-rows kernel reads padding: one entry point per kind, so a node runs no source switch.
enum ZeroSource { kZeroSeqLens32 = 0, kZeroSeqLens64 = 1, kZeroMask = 2, kZeroCount = 3 };

// Which of this thread's rows batch + k * kZeroThreads + threadIdx.x are padding. The loads are
// unconditional (indices clamped to the last row) so all of them are in flight together.
template <int kSource>
__device__ __forceinline__ void padding_batch(const nanscope_zero_buffer& s, uint64_t batch, bool (&pad)[kZeroRowsPerThread]) {
  const uint64_t r0 = batch + threadIdx.x;
  auto row = [&](int k) { return r0 + uint64_t(k) * kZeroThreads; };
  auto at = [&](int k) { return row(k) < s.rows ? row(k) : s.rows - 1; };
  if constexpr (kSource == kZeroCount) {
    int64_t n = static_cast<int64_t>(s.host_count);
    if (s.source == NS_PAD_COUNT_DEVICE)
      n = s.index_i64 ? *reinterpret_cast<const int64_t*>(s.source_ptr) : *reinterpret_cast<const int32_t*>(s.source_ptr);
#pragma unroll
    for (int k = 0; k < kZeroRowsPerThread; ++k) pad[k] = row(k) < s.rows && (n < 0 || row(k) >= static_cast<uint64_t>(n));
  } else {
    int64_t x[kZeroRowsPerThread];
#pragma unroll
    for (int k = 0; k < kZeroRowsPerThread; ++k) {
      if constexpr (kSource == kZeroSeqLens32) x[k] = reinterpret_cast<const int32_t*>(s.source_ptr)[at(k)];
      else if constexpr (kSource == kZeroSeqLens64) x[k] = reinterpret_cast<const int64_t*>(s.source_ptr)[at(k)];
      else x[k] = reinterpret_cast<const unsigned char*>(s.source_ptr)[at(k)];
    }
#pragma unroll
    for (int k = 0; k < kZeroRowsPerThread; ++k)
      pad[k] = row(k) < s.rows && (kSource == kZeroMask ? x[k] != 0 : x[k] == s.pad_value);
  }
}

// The padding rows of one batch as every warp holds them: lane l has word l of the batch's
// bitmap (rows batch + 32l ..) and the count of rows through it, so finding the idx-th padding
// row is a ballot and two shuffles, not a walk over shared memory.
static_assert(kZeroBatchWords == 32, "one bitmap word per lane");
struct MarkedRows {
  unsigned bits;   // this lane's word
  uint32_t upto;   // padding rows in words 0..lane
  uint32_t total;  // padding rows in the batch
};

// Marks the padding rows of [batch, batch + kZeroBatchRows) in `bits`, in row order so every
// block numbers them alike.
template <int kSource>
__device__ __forceinline__ MarkedRows mark_padding_rows(const nanscope_zero_buffer& s, uint64_t batch, unsigned* bits) {
  bool pad[kZeroRowsPerThread];
  padding_batch<kSource>(s, batch, pad);
#pragma unroll
  for (int k = 0; k < kZeroRowsPerThread; ++k) {
    const unsigned ballot = __ballot_sync(0xffffffffu, pad[k]);
    if ((threadIdx.x & 31) == 0) bits[k * (kZeroThreads / 32) + threadIdx.x / 32] = ballot;
  }
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  MarkedRows m;
  m.bits = bits[lane];
  m.upto = __popc(m.bits);
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t v = __shfl_up_sync(0xffffffffu, m.upto, o);
    if (lane >= (unsigned)o) m.upto += v;
  }
  m.total = __shfl_sync(0xffffffffu, m.upto, 31);
  return m;
}

// Batch offset of the idx-th padding row (idx < m.total; the same idx in every lane).
__device__ __forceinline__ uint32_t nth_marked_row(const MarkedRows& m, uint32_t idx) {
  const uint32_t w = __popc(__ballot_sync(0xffffffffu, m.upto <= idx));  // words wholly before it
  const uint32_t before = __shfl_sync(0xffffffffu, m.upto, w ? w - 1 : 0);
  const unsigned word = __shfl_sync(0xffffffffu, m.bits, w);
  return w * 32 + __fns(word, 0, static_cast<int>(idx - (w ? before : 0)) + 1);
}

// Zeroes the padding rows of one buffer. Zeroing needs no element type, only bytes, so there is
// one code path for every dtype (a smaller kernel: each dtype instantiation cost about 0.1 us a
// node). A row is cut into chunks of kZeroThreads x kZeroUnroll 16-byte vectors; its last chunk also
// zeroes the bytes before its first 16-byte boundary and after its last whole vector, so any
// row alignment works.
template <int kSource>
__device__ void zero_padding_rows(const nanscope_zero_buffer& s, unsigned* bits) {
  const uint32_t eb = element_bytes(s.dtype);
  unsigned char* base = reinterpret_cast<unsigned char*>(s.ptr);
  const uint64_t row_bytes = s.row_elements * eb, stride_bytes = s.row_stride * eb;
  const uint32_t chunk_vecs = kZeroThreads * kZeroUnroll;
  const uint64_t max_vecs = row_bytes / 16;
  const uint32_t chunks = max_vecs ? static_cast<uint32_t>((max_vecs + chunk_vecs - 1) / chunk_vecs) : 1;
  if (s.rows == 0) return;  // (the host never sends one) the status loads index row rows - 1
  for (uint64_t batch = 0;;) {
    const MarkedRows marked = mark_padding_rows<kSource>(s, batch, bits);
    const uint32_t items = marked.total * chunks;  // at most kZeroBatchRows rows of a batch
    for (uint32_t item = blockIdx.x; item < items; item += gridDim.x) {
      const uint32_t idx = chunks == 1 ? item : item / chunks, ch = item - idx * chunks;
      unsigned char* row = base + (batch + nth_marked_row(marked, idx)) * stride_bytes;
      uint64_t head = (16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15;
      head = head < row_bytes ? head : row_bytes;
      const uint64_t vecs = (row_bytes - head) / 16;
      uint4* vrow = reinterpret_cast<uint4*>(row + head);
      const uint64_t v0 = uint64_t{ch} * chunk_vecs, v1 = v0 + chunk_vecs < vecs ? v0 + chunk_vecs : vecs;
#pragma unroll
      for (int u = 0; u < kZeroUnroll; ++u) {
        const uint64_t i = v0 + threadIdx.x + u * kZeroThreads;
        if (i < v1) vrow[i] = make_uint4(0, 0, 0, 0);
      }
      if (ch == chunks - 1) {
        const uint64_t tail = head + vecs * 16;
        if (threadIdx.x < head) row[threadIdx.x] = 0;
        if (tail + threadIdx.x < row_bytes) row[tail + threadIdx.x] = 0;  // fewer than 16 bytes
      }
    }
    batch += kZeroBatchRows;
    if (batch >= s.rows) break;
    __syncthreads();  // the bitmap is rewritten for the next batch
  }
}

}  // namespace

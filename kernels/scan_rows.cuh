// Row-aware scans (kernels/scan.cu): the row-chunked walk that fix mode takes on row-aligned
// buffers, and scan_buffer, which picks the walk for one buffer.
#pragma once

#include <stdint.h>

#include "scan_abi.h"
#include "scan_buffer.cuh"

namespace {

// Plain scans never see a row spec; row-aware scans (watches, rules) run in their own entry
// point so the plain kernel keeps its registers and occupancy.
// Row-aligned buffers (16-byte aligned rows) are walked in chunks of one row, so a block looks
// a row's padding status up once per chunk. With kZeroOnly, real rows are not read at all:
// padding rows are scanned (for the report) and zeroed.
template <uint32_t dt, bool kFix, bool kZeroOnly>
__device__ void scan_rows_chunked(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  unsigned char* base = reinterpret_cast<unsigned char*>(b.ptr);
  const uint32_t eb = element_bytes(dt);
  const uint32_t per_vec = 16 / eb;
  const uint64_t row_vecs = rows->row_elements / per_vec;
  const uint64_t chunk_vecs = uint64_t{kThreads} * kUnroll;
  const uint64_t chunks_per_row = row_vecs ? (row_vecs + chunk_vecs - 1) / chunk_vecs : 1;
  const uint64_t items = rows->rows * chunks_per_row;

  // Chunk `ch` of row `r`: scan it, and zero it when the row is padding.
  // `known_padding`: the caller already knows the row is padding; otherwise (fix) its status is
  // looked up after the chunk's loads are issued, so the two round trips overlap.
  auto process = [&](uint64_t r, uint64_t ch, bool known_padding) {
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
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t i = v0 + threadIdx.x + u * kThreads;
      if (i >= v1) continue;
      if (vec_suspect(dt, x[u])) count_vector<true>(dt, x[u], row_start + i * per_vec, c, rows);
      if (kFix && pad) vrow[i] = make_uint4(0, 0, 0, 0);
    }
    if (ch == chunks_per_row - 1) {  // elements past the last full vector of the row
      for (uint64_t j = row_vecs * per_vec + threadIdx.x; j < rows->row_elements; j += kThreads) {
        c.add(classify(dt, load_bits(base, dt, row_start + j)), row_start + j, rows);
        if (kFix && pad) store_zero(base, eb, row_start + j);
      }
    }
  };

  if constexpr (kZeroOnly) {
    // Real rows are never read. The block looks up the status of up to kThreads of its items
    // at once (one round trip, not one per item), then works on the padding ones only.
    __shared__ unsigned int s_pad_bits[kThreads / 32];
    for (uint64_t first = blockIdx.x; first < items; first += uint64_t{gridDim.x} * kThreads) {
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
          process(r, item - r * chunks_per_row, true);
        }
      }
      __syncthreads();
    }
  } else {
    // Items are visited gridDim.x apart: step (row, chunk) by the same amount instead of
    // dividing every item (a 64-bit division costs more than the chunk's status check).
    const uint64_t step_r = gridDim.x / chunks_per_row, step_c = gridDim.x - step_r * chunks_per_row;
    uint64_t r = blockIdx.x / chunks_per_row, ch = blockIdx.x - r * chunks_per_row;
    for (uint64_t item = blockIdx.x; item < items; item += gridDim.x) {
      process(r, ch, false);
      r += step_r;
      ch += step_c;
      if (ch >= chunks_per_row) ch -= chunks_per_row, ++r;
    }
  }
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

template <bool kRows>
__device__ void scan_buffer(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  if (!kRows || !rows) {
    scan_buffer_dispatch<false, false>(b, c, nullptr);
    return;
  }
  // Detection alone needs no per-row walk (rows are looked up only for bad values), so only
  // the fix takes the row-chunked path, where each chunk's padding status is looked up once.
  const bool fix = rows->fix && rows->source != NS_PAD_NONE;
  if (fix && rows->chunked) {
    if (rows->zero_only) scan_rows_chunked_dispatch<true, true>(b, c, rows);
    else scan_rows_chunked_dispatch<true, false>(b, c, rows);
  } else if (fix) {
    scan_buffer_dispatch<true, true>(b, c, rows);
  } else {
    scan_buffer_dispatch<true, false>(b, c, rows);
  }
}

}  // namespace

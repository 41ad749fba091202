// Launch geometry of the scan kernel, shared by the engine and the benchmarks so both
// measure and run the same thing. Tuning values are data, not code.
#pragma once
#include <algorithm>
#include <cstdint>

#include "scan_abi.h"

namespace nanscope {

struct ScanPolicy {
  unsigned threads = 256;          // kThreads in kernels/scan.cu
  unsigned blocks_per_sm = 4;      // enough 16-byte loads in flight to saturate HBM
  uint64_t bytes_per_block_step = 256 * 4 * 16;  // threads x unroll x 16-byte loads
};

// A graph scan node that runs beside the app's next kernels (hooks/graph_overlap.cpp) is off the
// critical path, so its latency matters less than how much of the GPU it takes from the app:
// the replay cost of such a node grows with its block count (H200: an empty 128-block scan node
// beside a 50-kernel chain added 1.1 us a node, a 1-block one nothing). A quarter of the blocks
// still keeps the scans as fast as a chain of 2 MiB kernels. A plain-scan variant with 16 loads in
// flight per thread and 2-16 blocks was slower (BENCHMARKS.md, runs S3-3 and S3-5).
inline ScanPolicy beside_policy() {
  ScanPolicy p;
  p.bytes_per_block_step *= 4;
  return p;
}

inline unsigned scan_grid(const ScanPolicy& p, uint64_t max_bytes, int sm_count) {
  const uint64_t needed = (max_bytes + p.bytes_per_block_step - 1) / p.bytes_per_block_step;
  return static_cast<unsigned>(
      std::clamp<uint64_t>(needed, 1, uint64_t{p.blocks_per_sm} * static_cast<unsigned>(sm_count)));
}

// Bytes of one element of a nanscope_scan_dtype (element_bytes in kernels/scan.cu).
inline uint64_t scan_dtype_bytes(uint32_t dtype) {
  return dtype == NS_F64 ? 8 : dtype == NS_F32 ? 4 : dtype <= NS_BF16 ? 2 : 1;
}

// Blocks for a task: enough for its bytes, and for row-chunked fixes at least one block per
// (row, chunk) item, so a batch of short rows is read in parallel rather than by one block
// walking the rows one round trip at a time.
inline unsigned scan_grid_for_task(const ScanPolicy& p, const nanscope_scan_task& t, uint64_t max_bytes,
                                   int sm_count) {
  uint64_t items = 0;
  for (uint32_t b = 0; b < t.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const nanscope_row_spec& spec = t.row_specs[b];
    if (!((t.row_aware_mask >> b) & 1u) || !spec.chunked || !spec.fix || spec.source == NS_PAD_NONE) continue;
    const uint64_t row_bytes = t.row_specs[b].row_elements * scan_dtype_bytes(t.buffers[b].dtype);
    const uint64_t chunks = row_bytes ? (row_bytes + p.bytes_per_block_step - 1) / p.bytes_per_block_step : 1;
    items = std::max(items, t.row_specs[b].rows * chunks);
  }
  const uint64_t cap = uint64_t{p.blocks_per_sm} * static_cast<unsigned>(sm_count);
  return std::max(scan_grid(p, max_bytes, sm_count), static_cast<unsigned>(std::min(items, cap)));
}

// Tasks whose every buffer is zero_padding run the zero-rows kernel (nanscope_zero_rows): padding
// rows are zeroed and nothing is read. A launch with other outputs to scan runs the general row
// kernel, which also reads the padding rows it zeroes.
inline bool zero_rows_task(const nanscope_scan_task& t) {
  if (t.buffer_count == 0 || t.buffer_count > NANSCOPE_SCAN_MAX_BUFFERS) return false;
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    const nanscope_row_spec& s = t.row_specs[b];
    if (!((t.row_aware_mask >> b) & 1u) || !s.zero_only || !s.fix || s.source == NS_PAD_NONE || s.rows == 0) return false;
  }
  return true;
}

// Its grid: one block per (row, chunk) item of the largest buffer, at most one per SM (the
// padding rows are few; more blocks would mostly find nothing to do).
inline unsigned zero_rows_grid(const ScanPolicy& p, const nanscope_scan_task& t, int sm_count) {
  uint64_t items = 1;
  for (uint32_t b = 0; b < t.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const uint64_t row_vecs = t.row_specs[b].row_elements * scan_dtype_bytes(t.buffers[b].dtype) / 16;
    const uint64_t chunk_vecs = p.bytes_per_block_step / 16;
    const uint64_t chunks = row_vecs ? (row_vecs + chunk_vecs - 1) / chunk_vecs : 1;
    items = std::max(items, t.row_specs[b].rows * chunks);
  }
  return static_cast<unsigned>(std::min<uint64_t>(items, static_cast<unsigned>(sm_count)));
}

inline constexpr unsigned kZeroRowsThreads = 128;  // NANSCOPE_ZERO_THREADS in kernels/scan.cu

// Entry points of the zero-rows kernel: one buffer runs the entry of its padding source (no
// source switch in the node), several buffers the general one.
inline constexpr const char* kZeroRowsEntries[] = {"nanscope_zero_rows", "nanscope_zero_rows_seq32",
                                                   "nanscope_zero_rows_seq64", "nanscope_zero_rows_mask",
                                                   "nanscope_zero_rows_count"};
inline unsigned zero_rows_entry(const nanscope_scan_task& t) {
  if (t.buffer_count != 1) return 0;
  const nanscope_row_spec& s = t.row_specs[0];
  if (s.source == NS_PAD_SEQ_LENS) return s.index_i64 ? 2 : 1;
  return s.source == NS_PAD_MASK ? 3 : 4;
}

// The zero-rows kernel's parameter for a zero_rows_task, and back (graph passes read scan nodes).
inline nanscope_zero_task zero_task_of(const nanscope_scan_task& t) {
  nanscope_zero_task z{};
  z.buffer_count = t.buffer_count;
  z.buffer_state = t.buffer_state;
  for (uint32_t b = 0; b < t.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const nanscope_row_spec& s = t.row_specs[b];
    z.buffers[b] = {t.buffers[b].ptr, t.buffers[b].elements, s.rows, s.row_elements, s.row_stride, s.source_ptr,
                    s.pad_value, s.host_count, s.source, s.index_i64, t.buffers[b].dtype,
                    t.buffer_state ? t.out_state[b] : NANSCOPE_ORIGIN_NONE};
  }
  return z;
}

inline nanscope_scan_task scan_task_of(const nanscope_zero_task& z) {
  nanscope_scan_task t{};
  t.buffer_count = z.buffer_count;
  t.buffer_state = z.buffer_state;
  for (uint32_t b = 0; b < z.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const nanscope_zero_buffer& zb = z.buffers[b];
    t.buffers[b] = {zb.ptr, zb.elements, zb.dtype, 0};
    t.row_aware_mask |= 1u << b;
    nanscope_row_spec& s = t.row_specs[b];
    s.rows = zb.rows, s.row_elements = zb.row_elements, s.row_stride = zb.row_stride;
    s.source_ptr = zb.source_ptr, s.pad_value = zb.pad_value, s.host_count = zb.host_count;
    s.source = zb.source, s.index_i64 = zb.index_i64, s.fix = 1, s.zero_only = 1;
    t.out_state[b] = zb.out_state;
  }
  return t;
}

}  // namespace nanscope

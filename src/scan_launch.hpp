// Launch geometry of the scan kernel, shared by the engine and the benchmarks so both
// measure and run the same thing. Tuning values are data, not code.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "scan_abi.h"

namespace nanscope {

struct ScanPolicy {
  unsigned threads = NANSCOPE_SCAN_THREADS;  // the kernels' kThreads: their __launch_bounds__
  unsigned blocks_per_sm = 4;      // enough 16-byte loads in flight to saturate HBM
  uint64_t bytes_per_block_step = uint64_t{NANSCOPE_SCAN_THREADS} * NANSCOPE_SCAN_UNROLL * 16;  // threads x unroll x 16-byte loads
};

// A graph scan node that runs beside the app's next kernels (hooks/graph_overlap.cpp) is off the
// critical path, so its latency matters less than how much of the GPU it takes from the app:
// the replay cost of such a node grows with its block count (H200: an empty 128-block scan node
// beside a 50-kernel chain added 1.1 us a node, a 1-block one nothing). A quarter of the blocks
// still keeps the scans as fast as a chain of 2 MiB kernels. A plain-scan variant with 16 loads in
// flight per thread and 2-16 blocks was slower (docs/bench-history.md, runs S3-3 and S3-5).
inline ScanPolicy overlap_policy() {
  ScanPolicy p;
  p.bytes_per_block_step *= 4;
  return p;
}

inline unsigned scan_grid(const ScanPolicy& p, uint64_t max_bytes, int sm_count) {
  const uint64_t needed = (max_bytes + p.bytes_per_block_step - 1) / p.bytes_per_block_step;
  return static_cast<unsigned>(
      std::clamp<uint64_t>(needed, 1, uint64_t{p.blocks_per_sm} * static_cast<unsigned>(sm_count)));
}

// Bytes of one element of a nanscope_scan_dtype: the one table in scan_abi.h, as on the device.
inline uint64_t scan_dtype_bytes(uint32_t dtype) { return nanscope_scan_dtype_bytes(dtype); }

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

// The scan entry point of a task that is not a zero_rows task (kernels/scan.cu): plain without a
// row-aware buffer; the detection-only row kernel when no row spec asks for the fix; the general
// row kernel for the fix; the zero_padding variant when a buffer is zero_padding.
enum class ScanEntry : unsigned { plain, rows_detect, rows, rows_zero };
inline constexpr const char* kScanEntryNames[] = {"nanscope_scan", "nanscope_scan_rows_detect", "nanscope_scan_rows",
                                                  "nanscope_scan_rows_zero"};
inline ScanEntry scan_entry(const nanscope_scan_task& t) {
  bool fix = false, zero_only = false;
  for (uint32_t b = 0; b < t.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    if (!((t.row_aware_mask >> b) & 1u)) continue;
    zero_only |= t.row_specs[b].zero_only != 0;
    fix |= t.row_specs[b].fix != 0 && t.row_specs[b].source != NS_PAD_NONE;
  }
  if (zero_only) return ScanEntry::rows_zero;
  if (!t.row_aware_mask) return ScanEntry::plain;
  return fix ? ScanEntry::rows : ScanEntry::rows_detect;
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

inline constexpr unsigned kZeroRowsThreads = NANSCOPE_ZERO_THREADS;  // the zero kernels' block (scan_abi.h)

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

// ---- Graph scan nodes merged into one (hooks/graph_overlap.cpp, nanscope_scan_grouped).

// A plain task's attribution and origin inputs, as a group holds them per launch.
inline nanscope_launch_meta launch_meta_of(const nanscope_scan_task& t) {
  nanscope_launch_meta m{};
  m.launch_id = t.launch_id;
  m.correlation_id = t.correlation_id;
  m.kernel_id = t.kernel_id;
  m.graph_node = t.graph_node;
  m.in_count = std::min<uint32_t>(t.in_count, NANSCOPE_ORIGIN_MAX_INPUTS);
  std::copy(t.in_state, t.in_state + m.in_count, m.in_state);
  m.origin_flags = t.origin_flags;
  return m;
}

// Appends the plain scan task `t` to `g` as its next launch; the first one also gives the group its
// accumulator and channel. False, with `g` unchanged, when `t` has no buffers or does not fit.
inline bool append_launch(nanscope_scan_group& g, const nanscope_scan_task& t) {
  if (t.buffer_count == 0 || t.buffer_count > NANSCOPE_SCAN_MAX_BUFFERS ||
      g.buffer_count + t.buffer_count > NANSCOPE_SCAN_MAX_BUFFERS || g.launch_count >= NANSCOPE_SCAN_MAX_BUFFERS)
    return false;
  if (g.launch_count == 0) {
    std::memcpy(static_cast<void*>(&g), &t, sizeof(nanscope_scan_task_head));  // the head: channel, accumulator, graph, stream
    g.buffer_count = 0;
  }
  const uint32_t l = g.launch_count++;
  g.launches[l] = launch_meta_of(t);
  for (uint32_t b = 0; b < t.buffer_count; ++b, ++g.buffer_count) {
    g.buffers[g.buffer_count] = t.buffers[b];
    g.out_state[g.buffer_count] = t.out_state[b];
    g.launch_of[g.buffer_count] = static_cast<uint8_t>(l);
  }
  return true;
}

// Launch `l` of a group as the plain task it came from (its buffers and attribution).
inline nanscope_scan_task launch_task(const nanscope_scan_group& g, uint32_t l) {
  nanscope_scan_task t{};
  std::memcpy(static_cast<void*>(&t), &g, sizeof(nanscope_scan_task_head));
  t.buffer_count = 0;
  if (l >= g.launch_count || l >= NANSCOPE_SCAN_MAX_BUFFERS) return t;
  const nanscope_launch_meta& m = g.launches[l];
  t.launch_id = m.launch_id;
  t.correlation_id = m.correlation_id;
  t.kernel_id = m.kernel_id;
  t.graph_node = m.graph_node;
  t.in_count = m.in_count;
  std::copy(m.in_state, m.in_state + NANSCOPE_ORIGIN_MAX_INPUTS, t.in_state);
  t.origin_flags = m.origin_flags;
  for (uint32_t b = 0; b < g.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    if (g.launch_of[b] != l) continue;
    t.buffers[t.buffer_count] = g.buffers[b];
    t.out_state[t.buffer_count++] = g.out_state[b];
  }
  return t;
}

// A kernel node's new parameters: launch `l` takes `t`'s buffers and attribution, in the buffer
// places it had (a merged node's layout is fixed). Places left over scan nothing. Returns false when
// `t` has more buffers than places: the first ones are taken, the rest are not scanned.
inline bool replace_launch(nanscope_scan_group& g, uint32_t l, const nanscope_scan_task& t) {
  if (l >= g.launch_count || l >= NANSCOPE_SCAN_MAX_BUFFERS) return false;
  g.launches[l] = launch_meta_of(t);
  uint32_t taken = 0;
  for (uint32_t b = 0; b < g.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    if (g.launch_of[b] != l) continue;
    if (taken < t.buffer_count && taken < NANSCOPE_SCAN_MAX_BUFFERS) {
      g.buffers[b] = t.buffers[taken];
      g.out_state[b] = t.out_state[taken];
    } else {
      g.buffers[b] = nanscope_scan_buffer{g.buffers[b].ptr, 0, g.buffers[b].dtype, g.buffers[b].arg};
      g.out_state[b] = NANSCOPE_ORIGIN_NONE;
    }
    ++taken;
  }
  return t.buffer_count <= taken;
}

// Bytes of the largest buffer of a group (its grid, as scan_grid takes it).
inline uint64_t group_max_bytes(const nanscope_scan_group& g) {
  uint64_t most = 0;
  for (uint32_t b = 0; b < g.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b)
    most = std::max(most, g.buffers[b].elements * scan_dtype_bytes(g.buffers[b].dtype));
  return most;
}


// Blocks of a merged node whose buffers each get their own blocks (nanscope_group_part_blocks in
// scan_abi.h, which the kernel recomputes); 0 when the node is too large for that layout.
inline uint32_t group_part_grid(const nanscope_scan_group& g) {
  uint64_t total = 0;
  for (uint32_t b = 0; b < g.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b)
    total += nanscope_group_part_blocks(g.buffers[b].elements * scan_dtype_bytes(g.buffers[b].dtype));
  return total <= NANSCOPE_GROUP_MAX_PART_BLOCKS ? static_cast<uint32_t>(total) : 0u;
}

// The grid of a merged node: one block per buffer step when it is small, else as scan_grid
// gives it for the largest buffer.
inline unsigned group_grid(const ScanPolicy& p, const nanscope_scan_group& g, int sm_count) {
  const uint32_t parts = group_part_grid(g);
  return parts ? parts : scan_grid(p, group_max_bytes(g), sm_count);
}

}  // namespace nanscope

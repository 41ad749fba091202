// Non-finite scan kernels: ten thin extern "C" __global__ entry points (at the end of the file)
// over shared per-dtype classification and row code. nanscope_scan (plain), nanscope_scan_grouped
// (merged graph scan nodes), nanscope_scan_rows, nanscope_scan_rows_detect and
// nanscope_scan_rows_zero (row-aware: watches and rules) scan and report; the five nanscope_zero_rows* (one per padding source, and one for
// several buffers) only zero padding rows. Separate entry points keep each variant's registers
// and occupancy its own. Built into a fatbin and embedded in libnanscope.so; the host
// (hooks/context_state.cpp) loads it with cuModuleLoadData and launches with cuLaunchKernel
// (never the runtime API), with the geometry of src/scan_launch.hpp.
// The agent code lives in headers included only here: scan_classify.cuh (whole-vector
// classification), scan_buffer.cuh (counters and the per-buffer walk), scan_rows.cuh (row-aware
// walks), scan_ranges.cuh (row verdicts), scan_publish.cuh (records and origin state, the last
// block's work) and zero_rows.cuh (the zero_padding kernels).
#include <stdint.h>

#include "scan_abi.h"
#include "scan_buffer.cuh"
#include "scan_publish.cuh"
#include "scan_rows.cuh"
#include "zero_rows.cuh"

namespace {

// One warp's counts of a buffer, summed over its lanes (every lane holds them).
struct WarpCounts {
  unsigned padding, nan, pos_inf, neg_inf;
  unsigned long long first, last;
};

__device__ __forceinline__ WarpCounts warp_counts(const ThreadCounts& c) {
  WarpCounts w;
  w.padding = __reduce_add_sync(0xffffffffu, c.padding), w.nan = __reduce_add_sync(0xffffffffu, c.nan),
  w.pos_inf = __reduce_add_sync(0xffffffffu, c.pos_inf), w.neg_inf = __reduce_add_sync(0xffffffffu, c.neg_inf);
  w.first = c.first, w.last = c.last;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long f = __shfl_xor_sync(0xffffffffu, w.first, o), l = __shfl_xor_sync(0xffffffffu, w.last, o);
    w.first = f < w.first ? f : w.first;
    w.last = l > w.last ? l : w.last;
  }
  return w;
}

// The last block's close of a scan, warp 0 (every lane calls it): records for what it found, or
// every buffer marked clean (and, for row-aware buffers, the empty state remembered for the next
// scan to compare with).
template <bool kRows, typename Task>
__device__ __forceinline__ void finish_scan(const Task& t, const nanscope_scan_counts* tot, bool wrote,
                                            unsigned int replay, const RowRanges* ranges) {
  if (wrote) {
    publish<kRows>(t, tot, replay, ranges);  // the whole warp
    return;
  }
  if ((threadIdx.x & 31) != 0) return;
  for (uint32_t b = 0; b < t.buffer_count; ++b) set_state(t, b, NS_STATE_CLEAN, 0);
  if constexpr (kRows) {
    for (uint32_t b = 0; b < t.buffer_count && !wrote; ++b) {
      if (!((t.row_aware_mask >> b) & 1u) || t.row_specs[b].zero_only) continue;
      unsigned long long* st = t.row_specs[b].last_state;  // what a clean publish would store
      st[0] = st[1] = st[2] = st[4] = st[5] = 0;
      st[3] = ~0ull;
    }
  }
}

// The last block of a multi-block scan reads each buffer's accumulated totals once, all loads
// in flight together, and resets them for the next run.
template <typename Task>
__device__ __forceinline__ void take_accumulated_totals(const Task& t, nanscope_scan_accum* acc,
                                                        nanscope_scan_counts* tot) {
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    nanscope_scan_counts* a = &acc->buf[b];
    tot[b] = {__ldcg(&a->nan), __ldcg(&a->pos_inf), __ldcg(&a->neg_inf), __ldcg(&a->first_inv),
              __ldcg(&a->last), __ldcg(&a->padding)};
    *a = nanscope_scan_counts{};
  }
}

// Copies buffers[b]'s row spec into the block's shared copy (see scan_main for why it is shared).
template <typename Task>
__device__ __forceinline__ void stage_row_spec(const Task& t, uint32_t b, nanscope_row_spec& s_rows) {
  __syncthreads();  // the previous buffer's readers are done with s_rows
  if (threadIdx.x == 0) s_rows = t.row_specs[b];
  __syncthreads();
}

// One block's counts of each buffer (shared memory), summed by one lane of each warp that saw a
// bad value.
struct BlockCounts {
  unsigned nan[NANSCOPE_SCAN_MAX_BUFFERS], pinf[NANSCOPE_SCAN_MAX_BUFFERS], ninf[NANSCOPE_SCAN_MAX_BUFFERS],
      pad[NANSCOPE_SCAN_MAX_BUFFERS];
  unsigned long long first[NANSCOPE_SCAN_MAX_BUFFERS], last[NANSCOPE_SCAN_MAX_BUFFERS];
  __device__ __forceinline__ bool found(uint32_t b) const { return (nan[b] | pinf[b] | ninf[b]) != 0; }
};

// How a block leaves a scan: not the last one, the last of a clean scan, the last with findings.
enum BlockClose : uint32_t { kNotLast = 0, kLastClean = 1, kLastFound = 2 };

// Thread 0: adds the block's counts into the accumulator and takes a ticket; the last block gets
// the totals in `tot`. Zero counts are not added (a NaN-only buffer adds three words, not six).
template <typename Task>
__device__ __forceinline__ BlockClose close_block(const Task& t, const BlockCounts& s, nanscope_scan_counts* tot) {
  nanscope_scan_accum* acc = t.accum;
  bool wrote = false;
  for (uint32_t b = 0; b < t.buffer_count; ++b) wrote |= s.found(b);
  if (gridDim.x == 1) {
    // The only block is the last one: totals come straight from shared memory, with no
    // accumulator traffic, fence or ticket (the common case for decode-sized outputs).
    for (uint32_t b = 0; b < t.buffer_count; ++b)
      tot[b] = {s.nan[b], s.pinf[b], s.ninf[b], ~s.first[b], s.last[b], s.pad[b]};
    return wrote ? kLastFound : kLastClean;
  }
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if (!s.found(b)) continue;
    nanscope_scan_counts* a = &acc->buf[b];
    if (s.pad[b]) atomicAdd(&a->padding, (unsigned long long)s.pad[b]);
    if (s.nan[b]) atomicAdd(&a->nan, (unsigned long long)s.nan[b]);
    if (s.pinf[b]) atomicAdd(&a->pos_inf, (unsigned long long)s.pinf[b]);
    if (s.ninf[b]) atomicAdd(&a->neg_inf, (unsigned long long)s.ninf[b]);
    atomicMax(&a->first_inv, ~s.first[b]);
    atomicMax(&a->last, s.last[b]);
  }
  // Only a block that added counts must order them before its ticket; clean blocks (the
  // common case) skip the fence. The ticket's high half counts blocks that added counts, so
  // the last block of a clean scan knows it without reading the accumulator back.
  if (wrote) __threadfence();
  const unsigned int old = atomicAdd(&acc->blocks_done, wrote ? 0x10001u : 1u);
  if ((old & 0xffffu) != gridDim.x - 1) return kNotLast;
  wrote |= (old >> 16) != 0;
  acc->blocks_done = 0;  // the next scan with this accumulator is a later kernel
  if (wrote) {
    __threadfence();
    take_accumulated_totals(t, acc, tot);
  }
  return wrote ? kLastFound : kLastClean;
}

// The row ranges of each row-aware buffer of a scan with findings (scan_ranges.cuh).
__device__ __forceinline__ RowRanges* row_ranges_store() {
  __shared__ RowRanges s_ranges[NANSCOPE_SCAN_MAX_BUFFERS];
  return s_ranges;
}

// The last block of a scan with findings, every thread: the row ranges of the row-aware buffers
// that found something, built while their bitmaps are cleared (`built`: buffers whose ranges a
// one-block scan already built from its window, right after their walk).
template <typename Task>
__device__ __forceinline__ void build_all_ranges(const Task& t, const nanscope_scan_counts* tot, nanscope_row_spec& s_rows,
                                                 uint32_t built) {
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if (!((t.row_aware_mask >> b) & 1u) || ((built >> b) & 1u) || (tot[b].nan | tot[b].pos_inf | tot[b].neg_inf) == 0)
      continue;
    stage_row_spec(t, b, s_rows);
    build_row_ranges<false>(s_rows, row_ranges_store()[b], s_rows.row_bitmap, (s_rows.rows + 31) / 32, RowFlags{});
  }
  __syncthreads();  // the ranges, for thread 0's records
}

// After the walk of a row-aware buffer (every thread calls it: it holds barriers). A one-block
// scan whose window holds every row it marked builds the buffer's ranges from the window now
// (its counts are final: it is the only block) and returns true; other scans flush the window
// into the device bitmap for the last block.
__device__ __forceinline__ bool close_row_walk(const nanscope_row_spec& s, const RowFlags& flags, bool found,
                                               RowRanges& out) {
  if (gridDim.x != 1 || !flags.window || flags.window_word != 0) {
    flush_row_window(flags, found);
    return false;
  }
  if (__syncthreads_or(found)) build_row_ranges<true>(s, out, flags.window, flags.window_words, flags);
  return true;
}

// A block's counts of buffer b into shared memory. Rare: only warps that saw a bad value touch
// shared memory, one lane each.
__device__ __forceinline__ void add_block_counts(BlockCounts& s, uint32_t b, const ThreadCounts& c) {
  const unsigned found = __ballot_sync(0xffffffffu, c.any());
  if (!found) return;
  const WarpCounts w = warp_counts(c);
  if ((threadIdx.x & 31) == (unsigned)(__ffs(found) - 1)) {
    atomicAdd(&s.pad[b], w.padding);
    atomicAdd(&s.nan[b], w.nan);
    atomicAdd(&s.pinf[b], w.pos_inf);
    atomicAdd(&s.ninf[b], w.neg_inf);
    atomicMin(&s.first[b], w.first);
    atomicMax(&s.last[b], w.last);
  }
}

// The buffer a block of a merged node walks alone, when the node's grid is laid out that way
// (nanscope_group_part_blocks in scan_abi.h; the host's group_part_grid gives the same count), and
// its part of it. `alone` false: every block takes a part of every buffer.
struct GroupPart {
  bool alone = false;
  uint32_t buffer = 0;
  SharePart part{0, 1};
};

template <typename Task>
__device__ __forceinline__ GroupPart group_part(const Task& t) {
  GroupPart g;
  if constexpr (kIsGroup<Task>) {
    uint32_t total = 0;
    for (uint32_t b = 0; b < t.buffer_count; ++b) {
      const uint32_t n = nanscope_group_part_blocks(t.buffers[b].elements * element_bytes(t.buffers[b].dtype));
      if (blockIdx.x >= total && blockIdx.x - total < n) g.buffer = b, g.part = {blockIdx.x - total, n};
      total += n;
    }
    g.alone = total == gridDim.x && total <= NANSCOPE_GROUP_MAX_PART_BLOCKS;
  }
  return g;
}

// Programmatic edges (hooks/graph_pdl.cpp, NANSCOPE_GRAPH_PDL). A read-only scan beside the chain
// may be launched while its kernel's last blocks still run (the LAUNCH_ORDER port): it must wait
// for that kernel's memory before it reads a buffer. No-ops without such edges.
__device__ __forceinline__ void wait_for_writers() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the later writers of the scanned buffers launch once every block got here: each block's
// loads have returned (their values are in its counts), and what is left, the last block's
// publish, touches only nanscope's memory.
__device__ __forceinline__ void release_later_writers() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <bool kRows, typename Task, bool kFixCode = true>
__device__ __forceinline__ void scan_main(const Task& t) {
  __shared__ BlockCounts s_counts;
  __shared__ nanscope_scan_counts s_tot[NANSCOPE_SCAN_MAX_BUFFERS];
  __shared__ uint32_t s_close;
  // The row spec lives in shared memory: taking the address of a kernel parameter would copy the
  // whole task into local memory in every thread.
  __shared__ nanscope_row_spec s_rows;
  // The replay number is stable while this scan runs (only its last block bumps it): load it
  // now, so its round trip hides behind the scan.
  unsigned int replay = 0;
  if (threadIdx.x == 0) replay = __ldcg(&t.accum->executions);
  if constexpr (!kRows) wait_for_writers();
  if (threadIdx.x < NANSCOPE_SCAN_MAX_BUFFERS) {
    s_counts.nan[threadIdx.x] = s_counts.pinf[threadIdx.x] = s_counts.ninf[threadIdx.x] = s_counts.pad[threadIdx.x] = 0;
    s_counts.first[threadIdx.x] = ~0ull;
    s_counts.last[threadIdx.x] = 0;
  }
  if constexpr (kRows) clear_row_window();
  __syncthreads();
  [[maybe_unused]] uint32_t ranges_built = 0;  // row-aware buffers whose ranges close_row_walk built

  const GroupPart group = group_part(t);
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if (group.alone && b != group.buffer) continue;  // block-uniform
    ThreadCounts c;
    RowFlags flags;
    bool row_aware = false;
    if constexpr (kRows) {
      row_aware = (t.row_aware_mask >> b) & 1u;
      if (row_aware) {
        stage_row_spec(t, b, s_rows);
        flags = row_flags_for(t.buffers[b], s_rows, chunked_walk(s_rows));
        if (!chunked_walk(s_rows)) stage_row_padding(t.buffers[b], s_rows, flags);
      }
    }
    scan_buffer<kRows, kFixCode>(t.buffers[b], c, row_aware ? &s_rows : nullptr, flags, group.alone ? group.part : whole_grid());
    if constexpr (kRows) {
      if (row_aware && close_row_walk(s_rows, flags, c.any(), row_ranges_store()[b])) ranges_built |= 1u << b;
    }
    add_block_counts(s_counts, b, c);
  }
  __syncthreads();
  if constexpr (!kRows) release_later_writers();  // read-only kernels only: a fix still writes
  if (threadIdx.x == 0) s_close = close_block(t, s_counts, s_tot);
  __syncthreads();
  const BlockClose close = static_cast<BlockClose>(s_close);
  if constexpr (kRows) {
    if (close == kLastFound) build_all_ranges(t, s_tot, s_rows, ranges_built);
  }
  // Warp 0 of the last block publishes, a lane per buffer (scan_publish.cuh).
  if (threadIdx.x >= 32 || close == kNotLast) return;
  replay = __shfl_sync(0xffffffffu, replay, 0);  // loaded by thread 0
  const RowRanges* ranges = nullptr;
  if constexpr (kRows) ranges = row_ranges_store();
  finish_scan<kRows>(t, s_tot, close == kLastFound, replay, ranges);
  if (threadIdx.x == 0) t.accum->executions = replay + 1;
}

}  // namespace

// Four blocks per SM (at most 64 registers): ScanPolicy::blocks_per_sm blocks all resident at once.
extern "C" __global__ void __launch_bounds__(kThreads, 4) nanscope_scan(const nanscope_scan_task_head t) {
  scan_main<false>(t);
}

// Read-only scans of several launches merged into one graph node (hooks/graph_overlap.cpp).
extern "C" __global__ void __launch_bounds__(kThreads, 4) nanscope_scan_grouped(const nanscope_scan_group t) {
  scan_main<false>(t);
}

// Two blocks per SM (at most 128 registers), like the detection-only kernel: at three (80
// registers) its element walks spilled in their loops (the detection walk of a task that mixes
// fix and detection ran at 0.74 of the read roofline with nothing to find, run S10-1; the fix
// element walk spilled 600 bytes); at 128 none of its walks spills. The A/B of run S10-6 (the
// same kernel at three blocks per SM, bf16 density sweep): two won the detection walk (0.93 against
// 0.68 with nothing to find, 0.70 against 0.50 with every element NaN) and the element fix (0.82
// against 0.69; 0.57 against 0.42), and the chunked fix at every density but all-NaN (0.74 against
// 0.76).
extern "C" __global__ void __launch_bounds__(kThreads, 2) nanscope_scan_rows(const nanscope_scan_task t) {
  scan_main<true>(t);
}

// The row-aware scan of launches none of whose row specs asks for the fix (watches in detect
// mode, the seed's case): the same detection walk without the fix walks' code, so it keeps its
// registers: two blocks per SM of 128 registers, no spills (32 KiB of loads in flight per SM).
extern "C" __global__ void __launch_bounds__(kThreads, 2) nanscope_scan_rows_detect(const nanscope_scan_task t) {
  scan_main<true, nanscope_scan_task, false>(t);
}

// The same row-aware scan for launches that mix zero_padding watches with other outputs to scan
// (it reads and zeroes the padding rows of the zero_padding buffers, and reports them; launches
// with only zero_padding buffers run nanscope_zero_rows*): its sparse row walk suffers from
// spilled registers more than it gains from a third block per SM, so it gets the registers it wants.
extern "C" __global__ void __launch_bounds__(kThreads) nanscope_scan_rows_zero(const nanscope_scan_task t) {
  scan_main<true>(t);
}

// zero_padding tasks (every buffer zero_padding; src/scan_launch.hpp: zero_rows_task) zero the
// padding rows and read nothing. A buffer leaves with its real rows unscanned, so its origin
// state is unknown from here on.
__device__ __forceinline__ void forget_state(const nanscope_zero_task& t, const nanscope_zero_buffer& s) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && t.buffer_state && s.out_state != NANSCOPE_ORIGIN_NONE)
    t.buffer_state[NS_SLOT_OF(s.out_state)] = NS_STATE_UNKNOWN | (unsigned long long)NS_GEN_OF(s.out_state) << 8;
}

template <int kSource>
__device__ __forceinline__ void zero_one_buffer(const nanscope_zero_task& t) {
  __shared__ unsigned s_bits[kZeroBatchWords];
  zero_padding_rows<kSource>(t.buffers[0], s_bits);
  forget_state(t, t.buffers[0]);
}

// One buffer with a given padding source: the common case, and the leanest code path (every
// branch a node skips still costs it instruction fetches: about 0.1 us for a source switch).
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_seq32(const nanscope_zero_task t) {
  zero_one_buffer<kZeroSeqLens32>(t);
}
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_seq64(const nanscope_zero_task t) {
  zero_one_buffer<kZeroSeqLens64>(t);
}
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_mask(const nanscope_zero_task t) {
  zero_one_buffer<kZeroMask>(t);
}
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_count(const nanscope_zero_task t) {
  zero_one_buffer<kZeroCount>(t);
}

// Several zero_padding buffers written by one launch, each with its own source.
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows(const nanscope_zero_task t) {
  __shared__ unsigned s_bits[kZeroBatchWords];
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if (b) __syncthreads();  // the previous buffer's blocks are done with the bitmap
    const nanscope_zero_buffer& s = t.buffers[b];
    switch (s.source) {
      case NS_PAD_SEQ_LENS:
        if (s.index_i64) zero_padding_rows<kZeroSeqLens64>(s, s_bits);
        else zero_padding_rows<kZeroSeqLens32>(s, s_bits);
        break;
      case NS_PAD_MASK: zero_padding_rows<kZeroMask>(s, s_bits); break;
      default: zero_padding_rows<kZeroCount>(s, s_bits); break;
    }
    forget_state(t, s);
  }
}

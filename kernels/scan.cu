// Non-finite scan kernels: nine thin extern "C" __global__ entry points (at the end of the file)
// over shared per-dtype classification and row code. nanscope_scan (plain), nanscope_scan_grouped
// (merged graph scan nodes), nanscope_scan_rows and nanscope_scan_rows_zero (row-aware: watches
// and rules) scan and report; the five nanscope_zero_rows* (one per padding source, and one for
// several buffers) only zero padding rows. Separate entry points keep each variant's registers
// and occupancy its own. Built into a fatbin and embedded in libnanscope.so; the host
// (hooks/context_state.cpp) loads it with cuModuleLoadData and launches with cuLaunchKernel
// (never the runtime API), with the geometry of src/scan_launch.hpp.
// The agent code lives in headers included only here: scan_buffer.cuh (per-element and
// per-buffer walk), scan_rows.cuh (row-aware walks), scan_publish.cuh (records and origin
// state, the last block's work) and zero_rows.cuh (the zero_padding kernels).
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

// The last block's close of a scan: records for what it found, or every buffer marked clean
// (and, for row-aware buffers, the empty state remembered for the next scan to compare with).
template <bool kRows, typename Task>
__device__ __forceinline__ void finish_scan(const Task& t, const nanscope_scan_counts* tot, bool wrote,
                                            unsigned int replay) {
  if (wrote) {
    publish<kRows>(t, tot, replay);
  } else {
    for (uint32_t b = 0; b < t.buffer_count; ++b) set_state(t, b, NS_STATE_CLEAN, 0);
  }
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

template <bool kRows, typename Task>
__device__ __forceinline__ void scan_main(const Task& t) {
  __shared__ unsigned int s_nan[NANSCOPE_SCAN_MAX_BUFFERS], s_pinf[NANSCOPE_SCAN_MAX_BUFFERS],
      s_ninf[NANSCOPE_SCAN_MAX_BUFFERS], s_pad[NANSCOPE_SCAN_MAX_BUFFERS];
  __shared__ unsigned long long s_first[NANSCOPE_SCAN_MAX_BUFFERS], s_last[NANSCOPE_SCAN_MAX_BUFFERS];
  __shared__ nanscope_scan_counts s_tot[NANSCOPE_SCAN_MAX_BUFFERS];
  // The row spec lives in shared memory: taking the address of a kernel parameter would copy the
  // whole task into local memory in every thread.
  __shared__ nanscope_row_spec s_rows;
  const bool one_block = gridDim.x == 1;
  // The replay number is stable while this scan runs (only its last block bumps it): load it
  // now, so its round trip hides behind the scan.
  unsigned int replay = 0;
  if (threadIdx.x == 0) replay = __ldcg(&t.accum->executions);
  if (threadIdx.x < NANSCOPE_SCAN_MAX_BUFFERS) {
    s_nan[threadIdx.x] = s_pinf[threadIdx.x] = s_ninf[threadIdx.x] = s_pad[threadIdx.x] = 0;
    s_first[threadIdx.x] = ~0ull;
    s_last[threadIdx.x] = 0;
  }
  __syncthreads();

  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    ThreadCounts c;
    bool row_aware = false;
    if constexpr (kRows) {
      row_aware = (t.row_aware_mask >> b) & 1u;
      if (row_aware) stage_row_spec(t, b, s_rows);
    }
    scan_buffer<kRows>(t.buffers[b], c, row_aware ? &s_rows : nullptr);
    // Rare: only warps that saw a bad value touch shared memory, one lane each. A buffer full
    // of NaN would otherwise serialise hundreds of threads on the same shared counters.
    const unsigned found = __ballot_sync(0xffffffffu, c.any());
    if (found) {
      const WarpCounts w = warp_counts(c);
      if ((threadIdx.x & 31) == (unsigned)(__ffs(found) - 1)) {
        atomicAdd(&s_pad[b], w.padding);
        atomicAdd(&s_nan[b], w.nan);
        atomicAdd(&s_pinf[b], w.pos_inf);
        atomicAdd(&s_ninf[b], w.neg_inf);
        atomicMin(&s_first[b], w.first);
        atomicMax(&s_last[b], w.last);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  nanscope_scan_accum* acc = t.accum;
  bool wrote = false;
  for (uint32_t b = 0; b < t.buffer_count; ++b) wrote |= (s_nan[b] | s_pinf[b] | s_ninf[b]) != 0;
  if (one_block) {
    // The only block is the last one: totals come straight from shared memory, with no
    // accumulator traffic, fence or ticket (the common case for decode-sized outputs).
    for (uint32_t b = 0; b < t.buffer_count; ++b)
      s_tot[b] = {s_nan[b], s_pinf[b], s_ninf[b], ~s_first[b], s_last[b], s_pad[b]};
  } else {
    for (uint32_t b = 0; b < t.buffer_count; ++b) {
      if ((s_nan[b] | s_pinf[b] | s_ninf[b]) == 0) continue;
      atomicAdd(&acc->buf[b].padding, (unsigned long long)s_pad[b]);
      atomicAdd(&acc->buf[b].nan, (unsigned long long)s_nan[b]);
      atomicAdd(&acc->buf[b].pos_inf, (unsigned long long)s_pinf[b]);
      atomicAdd(&acc->buf[b].neg_inf, (unsigned long long)s_ninf[b]);
      atomicMax(&acc->buf[b].first_inv, ~s_first[b]);
      atomicMax(&acc->buf[b].last, s_last[b]);
    }
    // Only a block that added counts must order them before its ticket; clean blocks (the
    // common case) skip the fence. The ticket's high half counts blocks that added counts, so
    // the last block of a clean scan knows it without reading the accumulator back.
    if (wrote) __threadfence();
    const unsigned int old = atomicAdd(&acc->blocks_done, wrote ? 0x10001u : 1u);
    if ((old & 0xffffu) != gridDim.x - 1) return;  // not the last block
    wrote |= (old >> 16) != 0;
    acc->blocks_done = 0;  // the next scan with this accumulator is a later kernel
    if (wrote) {
      __threadfence();
      take_accumulated_totals(t, acc, s_tot);
    }
  }
  finish_scan<kRows>(t, s_tot, wrote, replay);
  acc->executions = replay + 1;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) nanscope_scan(const nanscope_scan_task_head t) {
  scan_main<false>(t);
}

// Read-only scans of several launches merged into one graph node (hooks/graph_overlap.cpp).
extern "C" __global__ void __launch_bounds__(kThreads) nanscope_scan_grouped(const nanscope_scan_group t) {
  scan_main<false>(t);
}

// Three blocks per SM (at most 80 registers): the fused scan + fix streams at full bandwidth.
extern "C" __global__ void __launch_bounds__(kThreads, 3) nanscope_scan_rows(const nanscope_scan_task t) {
  scan_main<true>(t);
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

// The last block's work (kernels/scan.cu): turning a scan's totals into channel records, and
// the origin state words (what each tracked buffer held before and after the launch).
#pragma once

#include <stdint.h>

#include <type_traits>
#include "scan_abi.h"
#include "scan_buffer.cuh"
#include "scan_ranges.cuh"

namespace {

// Reserves up to `want` consecutive channel slots from `slot` on, without consuming an index it
// could not fill, so the host never waits on a hole (it reads records strictly in index order);
// returns how many it got. The host's read_index lives in host memory; it is read over PCIe only
// when the cached copy says the ring has too little room.
template <typename Task>
__device__ uint32_t reserve_slots(const Task& t, uint32_t want, unsigned long long& slot) {
  const unsigned long long cap = t.channel_capacity;
  // Two independent L2 loads, in flight together; the CAS below validates the guess.
  unsigned long long limit = __ldcg(&t.channel_dev->read_index_seen) + cap;
  slot = __ldcg(&t.channel_dev->write_index);
  for (;;) {
    if (slot + want > limit) {
      const unsigned long long seen = t.channel_host->read_index;  // one PCIe round trip
      atomicMax(&t.channel_dev->read_index_seen, seen);
      limit = seen + cap;
    }
    const unsigned long long room = limit > slot ? limit - slot : 0;
    const uint32_t take = room < want ? (uint32_t)room : want;
    if (take == 0) return 0;
    const unsigned long long prev = atomicCAS(&t.channel_dev->write_index, slot, slot + take);
    if (prev == slot) return take;
    slot = prev;
  }
}

// Copies a record built in local memory to the mapped host ring with 16-byte stores (posted
// PCIe writes, no reads back), all but its `seq`: release_records() writes that last.
__device__ void post_record(nanscope_record* dst, const nanscope_record& rec) {
  const uint4* from = reinterpret_cast<const uint4*>(&rec);
  uint4* to = reinterpret_cast<uint4*>(dst);
  *reinterpret_cast<volatile uint64_t*>(&dst->launch_id) = rec.launch_id;  // shares seq's 16 bytes
#pragma unroll
  for (int i = 1; i < (int)(sizeof(nanscope_record) / sizeof(uint4)); ++i) to[i] = from[i];
}

// Releases the records a publish posted: one system-scope fence for all of them (each costs a
// PCIe round trip: with one per record, a scan with findings in several buffers waited for each
// in turn), then each record's seq. The host reads a record only once its seq is there.
template <typename Task>
__device__ void release_records(const Task& t, const unsigned long long* slots, uint32_t count) {
  if (count == 0) return;
  __threadfence_system();
  for (uint32_t i = 0; i < count; ++i) {
    nanscope_record* dst = &t.records[slots[i] % t.channel_capacity];
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(&dst->seq), "l"(slots[i] + 1) : "memory");
  }
}

// Origin: the non-finite state of the launch's tracked inputs before it ran. Read before any
// output's word is updated, so an in-place buffer counts with its state from before.
struct InputStates {
  unsigned long long parents[NANSCOPE_ORIGIN_MAX_PARENTS];
  uint32_t parent_count;
  bool unknown;
};

// A plain task is one launch; a group (nanscope_scan_group) holds several, one per member scan.
template <typename Task>
constexpr bool kIsGroup = std::is_same<Task, nanscope_scan_group>::value;

template <typename Task>
__device__ __forceinline__ uint32_t input_count(const Task& t, uint32_t launch) {
  if constexpr (kIsGroup<Task>) return t.launches[launch].in_count;
  else return t.in_count;
}

template <typename Task>
__device__ __forceinline__ uint32_t input_ref(const Task& t, uint32_t launch, uint32_t i) {
  if constexpr (kIsGroup<Task>) return t.launches[launch].in_state[i];
  else return t.in_state[i];
}

template <typename Task>
__device__ InputStates read_inputs(const Task& t, uint32_t launch) {
  InputStates in{};
  if (!t.buffer_state) return in;
  const uint32_t count = input_count(t, launch);
  const uint32_t n = count < NANSCOPE_ORIGIN_MAX_INPUTS ? count : NANSCOPE_ORIGIN_MAX_INPUTS;
  unsigned long long w[NANSCOPE_ORIGIN_MAX_INPUTS];
#pragma unroll
  for (uint32_t i = 0; i < NANSCOPE_ORIGIN_MAX_INPUTS; ++i)  // all loads in flight at once
    w[i] = i < n ? __ldcg(&t.buffer_state[NS_SLOT_OF(input_ref(t, launch, i))]) : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t status = (uint32_t)(w[i] & 0xffu);
    if (((w[i] >> 8) & 0xffffu) != NS_GEN_OF(input_ref(t, launch, i)) || status == NS_STATE_UNKNOWN) {
      in.unknown = true;  // a reused slot's old word, or never scanned
      continue;
    }
    if (status != NS_STATE_NONFINITE) continue;
    const unsigned long long seq = w[i] >> 24;
    bool seen = false;
    for (uint32_t j = 0; j < in.parent_count && j < NANSCOPE_ORIGIN_MAX_PARENTS; ++j) seen |= in.parents[j] == seq;
    if (seen) continue;
    if (in.parent_count < NANSCOPE_ORIGIN_MAX_PARENTS) in.parents[in.parent_count] = seq;
    ++in.parent_count;
  }
  return in;
}

template <typename Task>
__device__ __forceinline__ uint32_t launch_origin_flags(const Task& t, uint32_t launch) {
  if constexpr (kIsGroup<Task>) return t.launches[launch].origin_flags;
  else return t.origin_flags;
}

// The launch fields of a record for buffers[b] (`launch`: its launch in a group).
template <typename Task>
__device__ __forceinline__ void set_launch_fields(const Task& t, uint32_t launch, nanscope_record& r) {
  if constexpr (kIsGroup<Task>) {
    r.launch_id = t.launches[launch].launch_id;
    r.correlation_id = t.launches[launch].correlation_id;
    r.kernel_id = t.launches[launch].kernel_id;
    r.graph_node = t.launches[launch].graph_node;
  } else {
    r.launch_id = t.launch_id;
    r.correlation_id = t.correlation_id;
    r.kernel_id = t.kernel_id;
    r.graph_node = t.graph_node;
  }
}

// Records what a scan left in buffers[b]: clean, or non-finite since finding `seq`.
template <typename Task>
__device__ __forceinline__ void set_state(const Task& t, uint32_t b, uint32_t status, unsigned long long seq) {
  if (!t.buffer_state || t.out_state[b] == NANSCOPE_ORIGIN_NONE) return;
  const uint32_t ref = t.out_state[b];
  t.buffer_state[NS_SLOT_OF(ref)] = status | (unsigned long long)NS_GEN_OF(ref) << 8 | seq << 24;
}

// Whether a buffer's totals are what the previous scan of it saw (`last_state`, six words).
__device__ __forceinline__ bool same_as_last_scan(const unsigned long long* st, const nanscope_scan_counts& c) {
  const unsigned long long s0 = __ldcg(st), s1 = __ldcg(st + 1), s2 = __ldcg(st + 2), s3 = __ldcg(st + 3),
                           s4 = __ldcg(st + 4), s5 = __ldcg(st + 5);
  return s0 == c.nan && s1 == c.pos_inf && s2 == c.neg_inf && s3 == ~c.first_inv && s4 == c.last &&
         s5 == c.padding;
}

// Remember what this scan saw, so the next one can tell an unchanged buffer (a launch that only
// read it) from one written again. A clean scan stores the empty state.
__device__ __forceinline__ void remember_scan(unsigned long long* st, const nanscope_scan_counts& c) {
  st[0] = c.nan, st[1] = c.pos_inf, st[2] = c.neg_inf, st[3] = ~c.first_inv, st[4] = c.last;
  st[5] = c.padding;
}

// The row fields of a record from the ranges the last block built (scan_ranges.cuh).
__device__ __forceinline__ void set_row_ranges(const RowRanges& rr, nanscope_record& r) {
  uint32_t pad_bits = 0;
  for (uint32_t k = 0; k < rr.count; ++k) {
    r.range_first[k] = rr.first[k];
    r.range_last[k] = rr.last[k];
    pad_bits |= (uint32_t)rr.padding[k] << k;
  }
  r.range_count = (uint16_t)rr.count;
  r.range_padding_bits = pad_bits;
  r.ranges_truncated = rr.truncated;
}

// Which buffers of a scan get a record, and which are unchanged since their previous scan (bit b
// for buffers[b]): decided for all of them first, so their channel slots are reserved at once.
struct PublishPlan {
  uint32_t record = 0, unchanged = 0, quiet = 0;
  uint32_t records = 0;  // bits set in `record`
};

template <bool kRows, typename Task>
__device__ PublishPlan plan_publish(const Task& t, const nanscope_scan_counts* tot) {
  PublishPlan p;
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    const nanscope_scan_counts c = tot[b];
    if (c.nan + c.pos_inf + c.neg_inf == 0) continue;
    bool unchanged = false, quiet = false;
    if constexpr (kRows) {
      // zero_padding zeroes what it finds, so no later scan sees it again: it keeps no
      // previous state to compare with (the zero-rows kernel has none).
      if (((t.row_aware_mask >> b) & 1u) && !t.row_specs[b].zero_only) {
        unchanged = same_as_last_scan(t.row_specs[b].last_state, c);
        quiet = unchanged && t.row_specs[b].quiet_unchanged;
      }
    }
    p.unchanged |= (uint32_t)unchanged << b;
    p.quiet |= (uint32_t)quiet << b;
    if (!quiet) p.record |= 1u << b, ++p.records;
  }
  return p;
}

// The record of buffers[b], with its totals `c`, the launch's inputs `in` and its row ranges.
template <bool kRows, typename Task>
__device__ void build_record(const Task& t, uint32_t b, uint32_t launch, const nanscope_scan_counts& c,
                             const InputStates& in, unsigned int replay, bool unchanged, const RowRanges* ranges,
                             nanscope_record& r) {
  set_launch_fields(t, launch, r);
  r.stream = t.stream;
  r.ptr = t.buffers[b].ptr;
  r.elements = t.buffers[b].elements;
  r.nan = c.nan;
  r.pos_inf = c.pos_inf;
  r.neg_inf = c.neg_inf;
  r.first_index = ~c.first_inv;
  r.last_index = c.last;
  r.graph_id = t.graph_id;
  r.replay = replay;
  r.arg = (uint16_t)t.buffers[b].arg;
  r.dtype = (uint8_t)t.buffers[b].dtype;
  r.flags = t.graph_id ? NS_RECORD_CAPTURED : 0;
  r.counts_padding = c.padding;
  if (t.buffer_state) {
    for (uint32_t j = 0; j < NANSCOPE_ORIGIN_MAX_PARENTS; ++j) r.parents[j] = j < in.parent_count ? in.parents[j] : 0;
    r.parent_count = in.parent_count;
    r.origin_flags = launch_origin_flags(t, launch) | NS_ORIGIN_TRACKED | (in.unknown ? NS_ORIGIN_INPUT_UNKNOWN : 0u);
  }
  if constexpr (kRows) {
    if ((t.row_aware_mask >> b) & 1u) {
      const nanscope_row_spec spec = t.row_specs[b];
      r.flags |= NS_RECORD_ROWS | (spec.fix && spec.source ? NS_RECORD_FIXED : 0) | (unchanged ? NS_RECORD_UNCHANGED : 0);
      r.rows_total = spec.rows;
      r.watch_id = spec.watch_id;
      r.padding_source = (uint8_t)spec.source;
      set_row_ranges(ranges[b], r);
    }
  }
}

// The last block to finish turns the totals into channel records. `tot` holds each buffer's
// totals (read from the accumulator, or straight from shared memory for a one-block scan);
// `ranges` the row ranges of the row-aware buffers with findings (their bitmaps are already clear).
// Every record's slot is reserved in one step and all are released by one fence.
template <bool kRows, typename Task>
__device__ void publish(const Task& t, const nanscope_scan_counts* tot, unsigned int replay, const RowRanges* ranges) {
  const PublishPlan plan = plan_publish<kRows>(t, tot);
  unsigned long long first_slot = 0;
  const uint32_t granted = plan.records ? reserve_slots(t, plan.records, first_slot) : 0;
  unsigned long long posted[NANSCOPE_SCAN_MAX_BUFFERS];
  uint32_t posted_count = 0, launch = 0;
  InputStates in = read_inputs(t, 0);
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if constexpr (kIsGroup<Task>) {
      // A group's next launch: its inputs as the launches before it in this node left them.
      if (t.launch_of[b] != launch) launch = t.launch_of[b], in = read_inputs(t, launch);
    }
    const nanscope_scan_counts c = tot[b];
    const bool row_aware = kRows && ((t.row_aware_mask >> b) & 1u);
    if ((plan.quiet >> b) & 1u) {
      // Nothing new to say, and the host would drop it: count it instead of a PCIe round trip.
      t.channel_host->unchanged = atomicAdd(&t.channel_dev->unchanged, 1ull) + 1;
    } else if ((plan.record >> b) & 1u) {
      if (posted_count >= granted) {
        // Counted on the device, mirrored into host memory so the host never needs a CUDA call.
        t.channel_host->overflow = atomicAdd(&t.channel_dev->overflow, 1ull) + 1;
        set_state(t, b, NS_STATE_NONFINITE, 0);  // non-finite, from a finding nobody will see
      } else {
        const unsigned long long slot = first_slot + posted_count;
        alignas(16) nanscope_record r = {};  // posted with 16-byte loads and stores
        build_record<kRows>(t, b, launch, c, in, replay, (plan.unchanged >> b) & 1u, ranges, r);
        post_record(&t.records[slot % t.channel_capacity], r);
        posted[posted_count++] = slot;
        // The fix zeroed every non-finite value: the lineage closes.
        bool fixed_clean = false;
        if constexpr (kRows) {
          if (row_aware) {
            const nanscope_row_spec& spec = t.row_specs[b];
            fixed_clean = spec.fix && spec.source && c.padding == c.nan + c.pos_inf + c.neg_inf;
          }
        }
        set_state(t, b, fixed_clean ? NS_STATE_CLEAN : NS_STATE_NONFINITE, fixed_clean ? 0 : slot + 1);
      }
    }
    if (c.nan + c.pos_inf + c.neg_inf == 0) set_state(t, b, NS_STATE_CLEAN, 0);
    if constexpr (kRows) {
      if (row_aware && !t.row_specs[b].zero_only) remember_scan(t.row_specs[b].last_state, c);
    }
  }
  release_records(t, posted, posted_count);
}

}  // namespace

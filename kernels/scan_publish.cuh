// The last block's work (kernels/scan.cu): turning a scan's totals into channel records, and
// the origin state words (what each tracked buffer held before and after the launch).
#pragma once

#include <stdint.h>

#include <type_traits>
#include "scan_abi.h"
#include "scan_buffer.cuh"
#include "scan_ranges.cuh"

namespace {

// Where the ring stood when the publishing warp started: two independent L2 loads, issued with
// the warp's other loads (inputs, last states) so their round trips overlap; the CAS in
// reserve_slots validates the guess.
struct SlotGuess {
  unsigned long long seen, slot;
};

template <typename Task>
__device__ __forceinline__ SlotGuess guess_slots(const Task& t) {
  return {__ldcg(&t.channel_dev->read_index_seen), __ldcg(&t.channel_dev->write_index)};
}

// Reserves up to `want` consecutive channel slots from `slot` on, without consuming an index it
// could not fill, so the host never waits on a hole (it reads records strictly in index order);
// returns how many it got. The host's read_index lives in host memory; it is read over PCIe only
// when the cached copy says the ring has too little room.
template <typename Task>
__device__ uint32_t reserve_slots(const Task& t, uint32_t want, const SlotGuess& guess, unsigned long long& slot) {
  const unsigned long long cap = t.channel_capacity;
  unsigned long long limit = guess.seen + cap;
  slot = guess.slot;
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
// PCIe writes, no reads back), all but its `seq`: publish() writes that last, after a fence.
__device__ void post_record(nanscope_record* dst, const nanscope_record& rec) {
  const uint4* from = reinterpret_cast<const uint4*>(&rec);
  uint4* to = reinterpret_cast<uint4*>(dst);
  *reinterpret_cast<volatile uint64_t*>(&dst->launch_id) = rec.launch_id;  // shares seq's 16 bytes
#pragma unroll
  for (int i = 1; i < (int)(sizeof(nanscope_record) / sizeof(uint4)); ++i) to[i] = from[i];
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

// The state words a publish gives the buffers of one node (lane b of the publishing warp:
// buffers[b]), for the inputs of its later launches: a group's launch sees its inputs as the
// launches before it in this node left them.
struct NodeStates {
  uint32_t slot[NANSCOPE_SCAN_MAX_BUFFERS];  // NS_SLOT_OF of the buffer's ref; ~0: sets no word
  unsigned long long word[NANSCOPE_SCAN_MAX_BUFFERS];
};

template <typename Task>
__device__ __forceinline__ uint32_t launch_of_buffer(const Task& t, uint32_t b) {
  if constexpr (kIsGroup<Task>) return t.launch_of[b];
  else return 0;
}

// The device state words of launch `launch`'s inputs, all loads in flight at once (issued
// before the slot reservation, so the two round trips overlap).
struct InputWords {
  unsigned long long w[NANSCOPE_ORIGIN_MAX_INPUTS];
};

template <typename Task>
__device__ __forceinline__ InputWords load_input_words(const Task& t, uint32_t launch, bool wanted) {
  InputWords in;
  const uint32_t count = wanted && t.buffer_state ? input_count(t, launch) : 0;
#pragma unroll
  for (uint32_t i = 0; i < NANSCOPE_ORIGIN_MAX_INPUTS; ++i)
    in.w[i] = i < count ? __ldcg(&t.buffer_state[NS_SLOT_OF(input_ref(t, launch, i))]) : 0;
  return in;
}

// The state word of input `ref` as launch `launch` sees it: the last buffer of an earlier launch
// of this node that sets it (`node`), else the device word loaded before.
template <typename Task>
__device__ __forceinline__ unsigned long long input_word(const Task& t, uint32_t launch, uint32_t ref,
                                                         const NodeStates* node, unsigned long long device_word) {
  if constexpr (kIsGroup<Task>) {
    for (int b = (int)t.buffer_count - 1; b >= 0; --b)
      if (t.launch_of[b] < launch && node->slot[b] == NS_SLOT_OF(ref)) return node->word[b];
  }
  return device_word;
}

template <typename Task>
__device__ InputStates read_inputs(const Task& t, uint32_t launch, const NodeStates* node, const InputWords& loaded) {
  InputStates in{};
  if (!t.buffer_state) return in;
  const uint32_t count = input_count(t, launch);
  const uint32_t n = count < NANSCOPE_ORIGIN_MAX_INPUTS ? count : NANSCOPE_ORIGIN_MAX_INPUTS;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t ref = input_ref(t, launch, i);
    const unsigned long long w = input_word(t, launch, ref, node, loaded.w[i]);
    const uint32_t status = (uint32_t)(w & 0xffu);
    if (((w >> 8) & 0xffffu) != NS_GEN_OF(ref) || status == NS_STATE_UNKNOWN) {
      in.unknown = true;  // a reused slot's old word, or never scanned
      continue;
    }
    if (status != NS_STATE_NONFINITE) continue;
    const unsigned long long seq = w >> 24;
    bool seen = false;
    for (uint32_t j = 0; j < in.parent_count && j < NANSCOPE_ORIGIN_MAX_PARENTS; ++j) seen |= in.parents[j] == seq;
    if (seen) continue;
    if (in.parent_count < NANSCOPE_ORIGIN_MAX_PARENTS) in.parents[in.parent_count] = seq;
    ++in.parent_count;
  }
  return in;
}

// The finding that left buffers[b] non-finite before its launch, from its own word as the launch
// found it (an earlier launch of this node may have set it); 0 when the word was clean, unknown or
// another generation's.
template <typename Task>
__device__ __forceinline__ unsigned long long prior_finding(const Task& t, uint32_t b, const NodeStates* node,
                                                            unsigned long long device_word) {
  const uint32_t ref = t.out_state[b];
  const unsigned long long w = input_word(t, launch_of_buffer(t, b), ref, node, device_word);
  if (((w >> 8) & 0xffffu) != NS_GEN_OF(ref) || (uint32_t)(w & 0xffu) != NS_STATE_NONFINITE) return 0;
  return w >> 24;
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

// The state word of buffers[b]: its status (clean, or non-finite since finding `seq`) and the
// generation of its slot.
template <typename Task>
__device__ __forceinline__ unsigned long long state_word(const Task& t, uint32_t b, uint32_t status,
                                                         unsigned long long seq) {
  return status | (unsigned long long)NS_GEN_OF(t.out_state[b]) << 8 | seq << 24;
}

// Records what a scan left in buffers[b]: clean, or non-finite since finding `seq`.
template <typename Task>
__device__ __forceinline__ void set_state(const Task& t, uint32_t b, uint32_t status, unsigned long long seq) {
  if (!t.buffer_state || t.out_state[b] == NANSCOPE_ORIGIN_NONE) return;
  t.buffer_state[NS_SLOT_OF(t.out_state[b])] = state_word(t, b, status, seq);
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
#pragma unroll 1
  for (uint32_t k = 0; k < rr.count; ++k) {
    r.range_first[k] = rr.first[k];
    r.range_last[k] = rr.last[k];
    pad_bits |= (uint32_t)rr.padding[k] << k;
  }
  r.range_count = (uint16_t)rr.count;
  r.range_padding_bits = pad_bits;
  r.ranges_truncated = rr.truncated;
}

// The record of buffers[b], scanned for launch `launch` of the task: its totals `c`, the states
// its inputs had (`in`, for the origin), the replay and, for row-aware buffers, the row ranges.
template <bool kRows, typename Task>
__device__ void build_record(const Task& t, uint32_t b, uint32_t launch, const nanscope_scan_counts& c,
                             const InputStates& in, unsigned long long prior_seq, unsigned int replay, bool unchanged,
                             const RowRanges* ranges, nanscope_record& r) {
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
  r.arg = (uint16_t)NS_BUFFER_ARG(t.buffers[b].arg);
  r.intent = NS_BUFFER_INTENT(t.buffers[b].arg);
  r.dtype = (uint8_t)t.buffers[b].dtype;
  r.flags = t.graph_id ? NS_RECORD_CAPTURED : 0;
  r.counts_padding = c.padding;
  if (t.buffer_state) {
    for (uint32_t j = 0; j < NANSCOPE_ORIGIN_MAX_PARENTS; ++j) r.parents[j] = j < in.parent_count ? in.parents[j] : 0;
    r.parent_count = in.parent_count;
    r.origin_flags = launch_origin_flags(t, launch) | NS_ORIGIN_TRACKED | (in.unknown ? NS_ORIGIN_INPUT_UNKNOWN : 0u);
    r.prior_seq = prior_seq;
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

// What one lane of the publishing warp decided for its buffer (buffers[lane]).
struct LaneVerdict {
  bool mine = false, bad = false, unchanged = false, quiet = false;
  nanscope_scan_counts c{};
};

template <bool kRows, typename Task>
__device__ __forceinline__ LaneVerdict lane_verdict(const Task& t, const nanscope_scan_counts* tot, uint32_t lane) {
  LaneVerdict v;
  v.mine = lane < t.buffer_count;
  if (!v.mine) return v;
  v.c = tot[lane];
  v.bad = v.c.nan + v.c.pos_inf + v.c.neg_inf != 0;
  if constexpr (kRows) {
    // zero_padding zeroes what it finds, so no later scan sees it again: it keeps no previous
    // state to compare with (the zero-rows kernel has none).
    if (v.bad && ((t.row_aware_mask >> lane) & 1u) && !t.row_specs[lane].zero_only) {
      v.unchanged = same_as_last_scan(t.row_specs[lane].last_state, v.c);
      v.quiet = v.unchanged && t.row_specs[lane].quiet_unchanged;
    }
  }
  return v;
}

// Adds `n` to a device counter and mirrors it into host memory, so the host never needs a CUDA call.
__device__ __forceinline__ void count_mirrored(unsigned long long* dev, volatile unsigned long long* host, uint32_t n) {
  if (n) *host = atomicAdd(dev, (unsigned long long)n) + n;
}

// The last block to finish turns the totals into channel records: warp 0, lane b for buffers[b]
// (every lane of the warp calls it). `tot` holds each buffer's totals (read from the accumulator,
// or straight from shared memory for a one-block scan); `ranges` the row ranges of the row-aware
// buffers with findings (their bitmaps are already clear). Every lane loads what it needs at once
// (the chain of dependent round trips is what a scan with findings costs over a clean one); lane 0
// reserves every record's slot; then each lane decides its inputs' states, posts its record,
// fences and releases it, all lanes at the same time (one after the other, a node with eight
// records paid eight chains of round trips). The state words come out as buffer by buffer in order: a group's later launch sees
// its earlier launches' words (NodeStates), and of two buffers with one word the later one wins.
template <bool kRows, typename Task>
__device__ void publish(const Task& t, const nanscope_scan_counts* tot, unsigned int replay, const RowRanges* ranges) {
  __shared__ NodeStates s_node;
  const uint32_t lane = threadIdx.x & 31;
  // Every load of the publish is issued here, before any result is needed: the ring's position,
  // this lane's input state words, and (in lane_verdict) its buffer's last state. One round trip
  // for all of them, then the reservation's CAS.
  const bool may_post = lane < t.buffer_count && tot[lane].nan + tot[lane].pos_inf + tot[lane].neg_inf != 0;
  SlotGuess guess{};
  if (lane == 0) guess = guess_slots(t);
  const InputWords loaded = load_input_words(t, launch_of_buffer(t, may_post ? lane : 0), may_post);
  // The word this lane's own buffer had before the launch, for origin preexisting.
  const bool tracks_out = may_post && t.buffer_state && t.out_state[lane] != NANSCOPE_ORIGIN_NONE;
  const unsigned long long own_word = tracks_out ? __ldcg(&t.buffer_state[NS_SLOT_OF(t.out_state[lane])]) : 0;
  const LaneVerdict v = lane_verdict<kRows>(t, tot, lane);
  const uint32_t record_mask = __ballot_sync(0xffffffffu, v.bad && !v.quiet);
  const uint32_t quiet_mask = __ballot_sync(0xffffffffu, v.quiet);
  unsigned long long first_slot = 0;
  uint32_t granted = 0;
  if (lane == 0 && record_mask) granted = reserve_slots(t, __popc(record_mask), guess, first_slot);
  granted = __shfl_sync(0xffffffffu, granted, 0);
  first_slot = __shfl_sync(0xffffffffu, first_slot, 0);
  const uint32_t index = __popc(record_mask & ((1u << lane) - 1u));
  const bool recorded = (record_mask >> lane) & 1u;
  const bool posts = recorded && index < granted;
  const uint32_t overflow_mask = __ballot_sync(0xffffffffu, recorded && !posts);
  if (lane == 0) {
    // Nothing new to say for a quiet buffer, and the host would drop it: counted instead of a
    // PCIe round trip. A record with no room is counted as overflow.
    count_mirrored(&t.channel_dev->unchanged, &t.channel_host->unchanged, __popc(quiet_mask));
    count_mirrored(&t.channel_dev->overflow, &t.channel_host->overflow, __popc(overflow_mask));
  }
  const unsigned long long slot = first_slot + index;
  // The word this lane's buffer gets (none for a quiet one: its word stays as it was).
  bool sets = v.mine && !v.quiet && t.buffer_state && t.out_state[lane] != NANSCOPE_ORIGIN_NONE;
  bool fixed_clean = false;
  if constexpr (kRows) {
    if (v.bad && ((t.row_aware_mask >> lane) & 1u)) {  // the fix zeroed every non-finite value
      const nanscope_row_spec& spec = t.row_specs[lane];
      fixed_clean = spec.fix && spec.source && v.c.padding == v.c.nan + v.c.pos_inf + v.c.neg_inf;
    }
  }
  const bool clean_after = !v.bad || (posts && fixed_clean);
  const unsigned long long word =
      state_word(t, v.mine ? lane : 0, clean_after ? NS_STATE_CLEAN : NS_STATE_NONFINITE, posts && !clean_after ? slot + 1 : 0);
  if (lane < NANSCOPE_SCAN_MAX_BUFFERS) {
    s_node.slot[lane] = sets ? NS_SLOT_OF(t.out_state[lane]) : ~0u;
    s_node.word[lane] = word;
  }
  __syncwarp();
  InputStates in{};
  unsigned long long prior_seq = 0;
  if (posts) in = read_inputs(t, launch_of_buffer(t, lane), &s_node, loaded);
  if (posts && tracks_out) prior_seq = prior_finding(t, lane, &s_node, own_word);
  // Every lane has read its inputs before any word changes; of two buffers with one word, the
  // later one's stays.
  for (uint32_t b = lane + 1; sets && b < t.buffer_count; ++b) sets = s_node.slot[b] != s_node.slot[lane];
  __syncwarp();
  if (sets) t.buffer_state[NS_SLOT_OF(t.out_state[lane])] = word;
  if (posts) {
    alignas(16) nanscope_record r = {};  // posted with 16-byte loads and stores
    build_record<kRows>(t, lane, launch_of_buffer(t, lane), v.c, in, prior_seq, replay, v.unchanged, ranges, r);
    nanscope_record* dst = &t.records[slot % t.channel_capacity];
    post_record(dst, r);
    __threadfence_system();  // the record before its seq: the host reads it once the seq is there
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(&dst->seq), "l"(slot + 1) : "memory");
  }
  if constexpr (kRows) {
    if (v.mine && ((t.row_aware_mask >> lane) & 1u) && !t.row_specs[lane].zero_only)
      remember_scan(t.row_specs[lane].last_state, v.c);
  }
}

}  // namespace

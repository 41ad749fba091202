// NaN lineage on the host: turns findings whose inputs were judged on the device (DeviceFinding)
// into origins (introduced, propagated, host or unknown), parents and root origins, spots leaks
// from padding into real rows, and keeps a bounded per-root summary (first cause, first leak,
// reach). The engine's drain feeds it one finding at a time, in device order; it never touches
// CUDA. (The host-side model of buffer states it replaced lives on in tests/unit as the
// reference the device classification is checked against.) See docs/origin.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "log_schema.hpp"
#include "padding.hpp"

namespace nanscope::lineage {

// A tracked buffer (watch or typed output), identified by its base address.
struct BufferId {
  uint64_t ptr = 0;
  friend bool operator==(BufferId, BufferId) = default;
};

// A buffer as nanscope last judged it: the launch whose scan last wrote its state word, and the
// buffer's start as that scan saw it. A finding of that scan there is what the buffer held since.
struct JudgedWrite {
  uint64_t launch_id = 0;
  uint64_t ptr = 0;
  friend bool operator==(JudgedWrite, JudgedWrite) = default;
};

// Non-finite rows of a buffer, exactly as the scan reports them (RowVerdict: ranges, truncated,
// counts_padding, counts_real). Rows are known when the counts are: a buffer without a padding
// spec has both counts 0 and region "unknown".
using RowSet = RowVerdict;
bool rows_known(const RowSet& rows);
bool padding_only(const RowSet& rows);  // known, non-finite in padding rows and in no real row
// Union of row sets from different buffers: ranges merged per status (padding or real), at
// most `max_ranges` kept, counts summed.
RowSet merge_rows(const std::vector<const RowSet*>& sets, std::size_t max_ranges);

// Where a kernel (or host operation) ran. graph_* and replay are meaningful when captured.
struct Site {
  uint64_t launch_id = 0;  // 0 for host copies and sets
  uint32_t kernel_id = 0;  // the engine's id for the kernel name (reach counts distinct ids)
  uint64_t stream = 0;
  bool captured = false;
  uint64_t graph_id = 0;
  uint32_t graph_node = 0;
  uint32_t replay = 0;
};

// The log's origin values (log_schema.hpp); a classified finding is never Origin::none.
using schema::Origin;
using schema::origin_name;
// What an infinity-only finding's infinities are (docs/origin.md#nan-first-verdicts); `none` for
// a finding that holds NaN (always a fault).
enum class InfKind : uint8_t { none, intended, arithmetic };
const char* inf_kind_name(InfKind);  // "" for none
// The signs of infinity a launch writes on purpose into a buffer (the decoder's Write::intended_inf
// as the scan record carries it): NS_INTENT_NEG_INF | NS_INTENT_POS_INF.
inline constexpr uint8_t kIntendNegInf = 1, kIntendPosInf = 2;

// The non-finite values of one finding, for NaN-first verdicts: kinds and the share of its
// buffer's elements (elements 0: the share is not known).
struct Values {
  uint64_t nan = 0, pos_inf = 0, neg_inf = 0, elements = 0;
  // A finding with no counts (older callers) counts as NaN: never less of a fault than it was.
  bool has_nan() const { return nan > 0 || pos_inf + neg_inf == 0; }
  double share() const { return elements ? double(nan + pos_inf + neg_inf) / double(elements) : -1.0; }
};
// Whether `intent` (kIntend* bits) covers every sign of infinity in `v`.
bool intended_signs(const Values& v, uint8_t intent);

// Why an origin is unknown: an untracked read, or an input whose state was evicted.
// Or memory no write nanscope saw filled: never written since allocation, or before it attached.
// Or a graph replay that ran only the sentinel tier's scans: its upstream was not scanned.
enum class Unknown : uint8_t { none, untracked_read, state_lost, unwritten, sentinel };
const char* unknown_name(Unknown);

struct Verdict {
  uint64_t event_id = 0;
  BufferId buffer;
  Origin origin = Origin::unknown;
  Unknown why = Unknown::none;
  std::vector<uint64_t> parents;  // propagated: events that made the inputs non-finite, sorted
  std::vector<uint64_t> roots;    // root origin events, sorted, the earliest max_roots_per_finding
  bool roots_truncated = false;
  bool incomplete = false;        // propagated, but some input's state was lost
  std::vector<uint32_t> candidates;  // candidate: the kernel ids of the launches that may have written it
  bool leak = false;
  RowSet rows_before;             // propagated: union of the parents' rows
  RowSet rows_after;              // this finding's rows
  // NaN-first (docs/origin.md#nan-first-verdicts).
  InfKind inf = InfKind::none;    // infinity-only: intended or arithmetic
  bool fault = true;              // NaN always; an infinity only under Policy::infinities_are_faults
  std::vector<uint64_t> causes;         // first cause(s), NaN-first; empty when every parent was lost
  std::vector<uint64_t> intended_from;  // intended infinities the cause's inputs held
  struct Spread {
    double before = 0, after = 0;  // largest parent share, own share
  };
  std::optional<Spread> spread;   // NaN confined to part of its inputs became (nearly) all of it
  struct LastWriter {
    uint64_t event_id = 0, launch_id = 0;
    uint32_t kernel_id = 0;
    uint64_t python = 0;  // its finding's Python line key (DeviceFinding::python)
  };
  std::optional<LastWriter> last_writer;  // preexisting: the finding that left the buffer non-finite
  // Propagated through a launch nanscope could not see into (a candidate): its pointer words hit
  // buffers the parents had left non-finite when it ran. `candidates` names it.
  bool through_candidate = false;
};

// What counts as a fault. TensorFlow's check_numerics and Inductor's asserts flag every infinity;
// JAX, XLA and PyTorch's anomaly mode do not by default (NANSCOPE_INF=fault sets it).
struct Policy {
  bool infinities_are_faults = false;
};

// Spread points (Verdict::spread): every parent at most this share non-finite, the finding at least.
inline constexpr double kSpreadBefore = 0.5, kSpreadAfter = 0.9;

struct Limits {
  std::size_t max_buffers = 1 << 16;       // findings remembered for their children; LRU beyond
  std::size_t max_roots = 64;              // roots with a summary entry; later ones are counted
  std::size_t max_roots_per_finding = 8;
  std::size_t max_reach = 64;              // distinct kernel ids / buffers listed per root
  std::size_t max_row_ranges = 64;         // ranges in a merged rows_before
};

// Per root: where it started, where it first leaked, and how far it spread.
struct RootSummary {
  uint64_t event_id = 0;
  Origin origin = Origin::introduced;  // introduced, host, unknown or candidate
  Unknown why = Unknown::none;
  std::vector<uint32_t> candidates;    // candidate: the kernel ids of its candidates
  Site site;
  BufferId buffer;
  RowSet rows;
  struct Leak {
    uint64_t event_id = 0;
    Site site;
    BufferId buffer;
    RowSet rows_before, rows_after;
  };
  std::optional<Leak> first_leak;
  InfKind inf = InfKind::none;          // an infinity-only root: what its infinities are
  bool nan_cause = false;               // a NaN finding names it as its first cause
  std::vector<uint64_t> intended_from;  // a NaN made from intended infinities: their events
  uint64_t leaks = 0;                   // leak findings descending from this root
  uint64_t findings = 0;                // propagated findings descending from it
  uint64_t last_event_id = 0;           // latest finding (or copy) it reached
  std::vector<uint32_t> kernels;        // distinct kernel ids reached (propagated findings)
  std::vector<uint64_t> buffers;        // distinct buffers reached (its own and copies included)
  bool kernels_capped = false, buffers_capped = false;  // more were reached than listed
};

struct Summary {
  std::vector<RootSummary> roots;  // independent origins in time order (event id)
  uint64_t roots_not_listed = 0;   // roots past Limits::max_roots
  uint64_t findings = 0;
  uint64_t introduced = 0, propagated = 0, host = 0, unknown = 0, candidate = 0, preexisting = 0, leaks = 0;
  uint64_t faults = 0, inf_intended = 0, inf_arithmetic = 0;  // NaN-first: faults, infinity-only findings
  uint64_t evictions = 0;          // remembered findings dropped by the LRU bound
};

// A finding whose inputs were judged on the device: the engine keeps every tracked buffer's
// state in device memory (scan_abi.h), so each scan reads its inputs' states as they were
// before the launch, graph replays included, and names the findings behind them by sequence
// number. The tracker turns those numbers into event ids, roots, leaks and reach.
struct DeviceFinding {
  uint64_t seq = 0;                  // this finding's number (unique per tracker; 0: none)
  uint64_t event_id = 0;             // its event, or the earlier event it repeats
  bool repeat = false;               // folded into event_id: remembered, not counted again
  BufferId buffer;
  RowSet rows;
  Site site;
  std::vector<uint64_t> parent_seqs;  // findings behind its non-finite inputs (0: never posted)
  uint32_t parent_count = 0;          // non-finite inputs, possibly more than parent_seqs
  bool input_unknown = false;         // a tracked input had never been scanned
  bool reads_untracked = false;       // the launch may read memory nanscope does not track
  bool host = false;                  // written by a host copy or memset
  bool unwritten = false;             // read before any write nanscope saw (an initial scan)
  bool sentinel_only = false;         // a graph replay that ran only the sentinel tier's scans, or an
                                      // eager launch outside its windows: nothing upstream was judged
  bool fixed = false;                 // the fix zeroed its padding rows after the scan
  Values values;                      // its non-finite values and its buffer's elements
  uint8_t intent = 0;                 // kIntend* bits: infinities its launch writes on purpose
  // The finding that left this buffer non-finite before the launch (its word on the device; 0:
  // none): a launch with finite inputs that finds them still there may not have written them.
  uint64_t prior_seq = 0;
  // Launches nanscope could not see into that referenced the buffer (or an input the launch
  // read) since a scan last judged it: their kernel ids (src/candidate.hpp). Without a tracked
  // non-finite input or a host write, they are the finding's candidate origin.
  std::vector<uint32_t> candidates;
  // What the candidates' pointer words hit, as last judged before each candidate ran: a finding
  // of one of those judgements makes this finding propagated through the candidate, not a root.
  std::vector<JudgedWrite> candidate_inputs;
  // Where its launch came from in Python (a hooks/python_frames.hpp key, 0: unknown): kept with
  // it, so a later finding it left in place names the line of its last writer.
  uint64_t python = 0;
};

// The kind of origin a device finding has, from its own flags alone (no parents needed): the
// tracker's classification, and the engine's aggregation key, which must not fold a
// re-introduced NaN into an earlier propagated event.
Origin device_origin(const DeviceFinding& f);

// Not thread-safe: the engine calls it from its drain thread, in device order per stream.
class Tracker {
 public:
  explicit Tracker(Limits limits = {}, Policy policy = {});

  // A finding classified from device state (see DeviceFinding). Parents must have been fed
  // first, which device order guarantees: a parent's scan ran before its child's.
  Verdict on_device_finding(const DeviceFinding& f);

  Summary summary() const;
  const Limits& limits() const { return limits_; }

 protected:
  // Roots, reach and totals: shared with the host reference model (tests/unit).
  void add_root(const Verdict& v, const Site& site);
  void reach(const Verdict& v, const Site& site);
  void reach_buffer(uint64_t root_event, uint64_t ptr, uint64_t event_id);
  void count(const Verdict& v);

  Limits limits_;
  Policy policy_;
  Summary totals_;

 private:
  // What a device finding left behind, for its children: by sequence number, LRU-bounded.
  struct SeqInfo {
    uint64_t event_id = 0;
    RowSet rows;
    std::vector<uint64_t> roots;
    bool roots_truncated = false;
    // NaN-first: what its values are, where they came from, whether they stayed in padding rows.
    bool has_nan = true;
    InfKind inf = InfKind::none;
    std::vector<uint64_t> causes, intended_from;
    double share = -1;
    Values values;  // its non-finite values by kind (none counted: older callers)
    bool confined = false;  // non-finite in padding rows only: proven by rows, or carried without spreading
    Origin origin = Origin::introduced;
    uint32_t kernel_id = 0;
    uint64_t launch_id = 0, python = 0;
    std::optional<Verdict::LastWriter> last_writer;  // preexisting: the writer it names
    std::list<uint64_t>::iterator lru;
  };
  const SeqInfo* find_seq(uint64_t seq);
  void put_seq(uint64_t seq, SeqInfo info);
  // Lineage from the findings behind the inputs: parents, roots, rows, leak, spread and the
  // NaN-first cause (lineage_verdict.cpp).
  void from_parents(const DeviceFinding& f, const std::vector<uint64_t>& seqs, uint32_t count, Verdict& v,
                    SeqInfo& info);
  struct ParentFacts;
  ParentFacts gather_parents(const std::vector<uint64_t>& seqs, uint32_t count, Verdict& v);
  void as_root(const DeviceFinding& f, Verdict& v, SeqInfo& info);
  // A launch with finite inputs whose output still held an earlier finding's values.
  bool preexisting(const DeviceFinding& f, Verdict& v);
  void mark_nan_causes(const Verdict& v);
  // What a finding leaves for its children, under its sequence number.
  void remember(const DeviceFinding& f, const Verdict& v, SeqInfo info);
  // Origin, parents and cause, from the finding's flags and the remembered findings.
  void classify(const DeviceFinding& f, Verdict& v, SeqInfo& info);
  // The remembered findings behind a candidate's inputs (lineage_candidate.cpp).
  std::vector<uint64_t> candidate_parents(const DeviceFinding& f);
  void remember_judged(const DeviceFinding& f);
  struct JudgedHash {
    std::size_t operator()(const JudgedWrite& j) const { return std::hash<uint64_t>{}(j.launch_id * 0x9e3779b97f4a7c15ull ^ j.ptr); }
  };

  std::unordered_map<uint64_t, SeqInfo> seqs_;
  std::list<uint64_t> seq_lru_;
  std::vector<RootSummary> roots_;
  std::unordered_map<uint64_t, std::size_t> root_index_;
  // Each finding's sequence number by the judgement it came from (its launch, its buffer), the
  // last max_buffers in arrival order: a candidate's inputs are looked up here.
  std::unordered_map<JudgedWrite, uint64_t, JudgedHash> judged_;
  std::deque<JudgedWrite> judged_order_;
};

// Sorted union of two root id lists, at most `cap` kept (the smallest: the earliest events);
// sets *truncated when some were dropped.
void union_roots(std::vector<uint64_t>& into, const std::vector<uint64_t>& add, std::size_t cap, bool* truncated);

}  // namespace nanscope::lineage

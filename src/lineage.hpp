// NaN lineage on the host: classifies every finding as introduced, propagated, host or
// unknown, links it to its parents and root origins, spots leaks from padding into real rows,
// and keeps a bounded per-root summary (first cause, first leak, reach). The engine feeds it
// launches, scans, copies and sets in device order; it never touches CUDA. See docs/origin.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "padding.hpp"

namespace nanscope::lineage {

// A tracked buffer (watch or typed output), identified by its base address.
struct BufferId {
  uint64_t ptr = 0;
  friend bool operator==(BufferId, BufferId) = default;
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

// One scanned kernel launch or graph node execution.
struct KernelLaunch {
  Site site;
  std::vector<BufferId> inputs;   // tracked buffers it reads (in-place buffers go here too)
  std::vector<BufferId> outputs;  // tracked buffers it writes; one without a ScanResult is lost
  bool reads_untracked = false;   // it also reads memory nanscope does not track
};

// The state of one written buffer after the launch (or copy / set).
struct ScanResult {
  BufferId buffer;
  bool nonfinite = false;
  RowSet rows;                    // for non-finite results
  uint64_t event_id = 0;          // id of the `nonfinite` event logged for it
  bool fixed = false;             // the fix zeroed its padding rows right after the scan
};

enum class Origin : uint8_t { introduced, propagated, host, unknown };
const char* origin_name(Origin);  // the log's strings
// Why an origin is unknown: an untracked read, or an input whose state was evicted.
enum class Unknown : uint8_t { none, untracked_read, state_lost };
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
  bool leak = false;
  RowSet rows_before;             // propagated: union of the parents' rows
  RowSet rows_after;              // this finding's rows
};

struct Limits {
  std::size_t max_buffers = 1 << 16;       // buffers with state kept; LRU evicted beyond
  std::size_t max_roots = 64;              // roots with a summary entry; later ones are counted
  std::size_t max_roots_per_finding = 8;
  std::size_t max_reach = 64;              // distinct kernel ids / buffers listed per root
  std::size_t max_row_ranges = 64;         // ranges in a merged rows_before
  std::size_t lost_filter_bits = 1 << 16;  // Bloom filter of evicted non-finite buffers
};

// Per root: where it started, where it first leaked, and how far it spread.
struct RootSummary {
  uint64_t event_id = 0;
  Origin origin = Origin::introduced;  // introduced, host or unknown
  Unknown why = Unknown::none;
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
  uint64_t introduced = 0, propagated = 0, host = 0, unknown = 0, leaks = 0;
  uint64_t evictions = 0;          // buffer states dropped by the LRU bound
  uint64_t outputs_unscanned = 0;  // written outputs without a scan: their state became lost
  std::size_t buffers = 0;         // states held now
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
  bool fixed = false;                 // the fix zeroed its padding rows after the scan
};

// The kind of origin a device finding has, from its own flags alone (no parents needed): the
// tracker's classification, and the engine's aggregation key, which must not fold a
// re-introduced NaN into an earlier propagated event.
Origin device_origin(const DeviceFinding& f);

// Not thread-safe: the engine calls it from its drain thread, in device order per stream.
class Tracker {
 public:
  explicit Tracker(Limits limits = {});

  // A launch and the scans of its outputs. Returns one Verdict per non-finite ScanResult, in
  // order. Inputs are judged by their state before the launch.
  std::vector<Verdict> on_launch(const KernelLaunch& launch, const std::vector<ScanResult>& scans);
  // cuMemcpyHtoD* / cuMemset*: the values come from the host. `after` is dst's state after the
  // write (a rescan, or the memset value judged on the host). A verdict (origin host) when
  // non-finite; a finite write closes dst's lineage.
  std::optional<Verdict> on_host_write(const ScanResult& after, const Site& site = {});
  // Full device-to-device copy: dst takes src's state and lineage. Partial copies should be
  // fed as a launch reading src (and dst) and writing dst, with a rescan of dst.
  void on_copy_device(BufferId dst, BufferId src);
  // cuMemFree*: forget the buffer; a new allocation at the address starts clean.
  void on_free(BufferId buffer);
  // A finding classified from device state (see DeviceFinding). Parents must have been fed
  // first, which device order guarantees: a parent's scan ran before its child's.
  Verdict on_device_finding(const DeviceFinding& f);

  Summary summary() const;
  const Limits& limits() const { return limits_; }

 private:
  struct State {
    bool nonfinite = false;             // false: a known-clean entry shadowing the lost filter
    uint64_t event_id = 0;
    RowSet rows;
    std::vector<uint64_t> roots;
    bool roots_truncated = false;
    std::list<uint64_t>::iterator lru;
  };
  enum class Seen : uint8_t { clean, nonfinite, lost };

  // on_launch; `host`: values not read from any tracked input are host values.
  std::vector<Verdict> record(const KernelLaunch& launch, const std::vector<ScanResult>& scans,
                              bool host);
  Seen look(uint64_t ptr, const State** out);
  State& put(uint64_t ptr);
  void set_clean(uint64_t ptr);
  void set_lost(uint64_t ptr);
  bool maybe_lost(uint64_t ptr) const;
  void add_root(const Verdict& v, const Site& site);
  void reach(const Verdict& v, const Site& site);
  void reach_buffer(RootSummary& r, uint64_t ptr, uint64_t event_id);
  void count(const Verdict& v);

  // What a device finding left behind, for its children: by sequence number, LRU-bounded.
  struct SeqInfo {
    uint64_t event_id = 0;
    RowSet rows;
    std::vector<uint64_t> roots;
    bool roots_truncated = false;
    std::list<uint64_t>::iterator lru;
  };
  const SeqInfo* find_seq(uint64_t seq);
  void put_seq(uint64_t seq, SeqInfo info);

  Limits limits_;
  std::unordered_map<uint64_t, SeqInfo> seqs_;
  std::list<uint64_t> seq_lru_;
  std::unordered_map<uint64_t, State> states_;
  std::list<uint64_t> lru_;                 // front: most recently used
  std::vector<uint64_t> lost_;              // Bloom filter of evicted non-finite buffers
  std::vector<RootSummary> roots_;
  std::unordered_map<uint64_t, std::size_t> root_index_;
  Summary totals_;
};

}  // namespace nanscope::lineage

// Aggregated state of a report. Memory grows with processes, kernels and sites (distinct
// kernel/argument/buffer/region/rows), never with the number of events.
#pragma once

#include <cstdint>
#include <cstdio>
#include <iosfwd>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "event.hpp"
#include "flat_index.hpp"
#include "safe_regex.hpp"

namespace nanscope::report {

constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

enum class FailOn { real, any, never };

struct Options {
  std::vector<std::string> inputs;
  std::string format = "text";
  std::string trace_path, html_path, dump_id;
  std::string dump_dir;  // --dump-dir: where dumps named by a log are read (default: beside the log)
  FailOn fail_on = FailOn::real;
  std::optional<std::int64_t> since, until;
  std::string kernel_regex;
  bool color = false;
  bool inf_faults = false;  // --inf-faults: every infinity is a fault (as TensorFlow's check_numerics)
};

// Non-finite values of findings split by region.
struct RegionCounts {
  std::int64_t padding = 0, real = 0, unknown = 0;
  RegionCounts& operator+=(const RegionCounts& o) {
    padding = sat_add(padding, o.padding), real = sat_add(real, o.real), unknown = sat_add(unknown, o.unknown);
    return *this;
  }
  std::int64_t total() const { return sat_add(sat_add(padding, real), unknown); }
  RegionCounts times(std::int64_t n) const { return {sat_mul(padding, n), sat_mul(real, n), sat_mul(unknown, n)}; }
};

// A full copy of one nonfinite event (first cause, per-rank first causes).
struct Snapshot {
  bool valid = false;
  std::uint32_t file = 0, proc = 0, site = 0;
  std::int64_t line = 0;
  Event ev;
};

struct Proc {
  std::int64_t pid = 0, rank = -1, local_rank = -1;
  std::uint32_t file = 0;
  std::string argv0, version, attach;
  bool started = false, summarized = false;
  std::int64_t launches = 0, scans = 0, findings_reported = 0, scans_dropped = 0, overflow = 0,
               kernels_inspected = 0, kernels_not_inspected = 0, duration_ns = 0;
  Counts summary_counts;
  // The sentinel tier's findings that claim no origin (origin_why sentinel), by event id: a fault
  // whose every cause is one of them has no lineage of its own (verdicts.cpp). Bounded.
  static constexpr std::size_t kMaxSentinelIds = 1 << 16;
  std::unordered_set<std::int64_t> sentinel_ids;
  // What this process's events add up to, before any filter: checked against its summary.
  std::int64_t logged_findings = 0;
  Counts logged_counts;
  bool repeats_without_counts = false;  // an older nanscope: repeats estimated from their first event
  bool summary_matches() const {
    return logged_findings == findings_reported && logged_counts.nan == summary_counts.nan &&
           logged_counts.pos_inf == summary_counts.pos_inf && logged_counts.neg_inf == summary_counts.neg_inf;
  }
  const char* summary_mismatch_reason() const;  // why the events and the summary differ (analyze.cpp)
  // summary.coverage: launches by how they were inspected, decoded bytes written and scanned,
  // the kernels not inspected most often (src/coverage.cpp).
  struct Coverage {
    bool present = false;
    std::int64_t launches = 0, decoded = 0, typed = 0, watched = 0, opaque = 0, mismatch = 0, extent_unknown = 0, sampled_out = 0,
                 library = 0, excluded = 0, compile_time = 0, bytes_written = 0, bytes_written_scanned = 0;
    // Graph replays under the sentinel tier: only its sentinels scanned, or every scan node.
    std::int64_t replays_sentinel_only = 0, replays_every_scan = 0;
    struct Kernel {
      std::string name, reason;
      std::int64_t launches = 0;
    };
    std::vector<Kernel> top;
  } coverage;
  std::int64_t first_ts = kNoTime, last_ts = kNoTime;
  std::int64_t findings = 0;
  std::vector<std::string> streams;
  std::unordered_map<std::int64_t, std::uint32_t> site_first;  // first event id of a site
  struct Recent {
    std::int64_t id = -1, ts = 0;
    std::uint32_t site = 0, stream = 0;
  };
  std::vector<Recent> recent;  // direct-mapped cache of recent nonfinite events (parents)
  Snapshot first_introduced;
  // NaN-first verdicts (verdicts.cpp).
  Snapshot first_fault;                              // its earliest fault
  bool nan_first = false;                            // some event of it carries `cause`
  std::unordered_map<std::int64_t, Snapshot> kept;   // events a `cause` / `intended_from` may name
  bool summary_has_faults = false;                   // its summary carried `faults`
  std::int64_t summary_faults = 0, summary_inf_intended = 0, summary_inf_arithmetic = 0;
};

struct Site {
  std::uint32_t proc = 0, kernel = 0, stream = 0;
  std::int64_t first_id = 0, first_ts = 0, first_line = 0;
  Region region = Region::none;
  Origin origin = Origin::none;
  std::int64_t arg = -1;
  std::string buffer_name, dtype;
  std::string python;  // the first finding's Python line, short ("model.py:42"), or empty
  std::vector<RowRange> rows_real, rows_padding;
  Counts first_counts;
  RegionCounts first_split;
  std::int64_t events = 0, folded = 0, reported_total = 0;  // counted (after filters)
  std::int64_t folded_unfiltered = 0, events_unfiltered = 0;
  bool leak = false;
  std::int64_t leak_ts = 0, leak_id = 0;
  bool has_graph = false;
  std::int64_t graph_id = 0, graph_node = 0;
  // Infinity-only findings here that are not faults (their kind is the site's first such event's),
  // folded ones included; INFINITIES lists them.
  InfKind quiet_inf = InfKind::none;
  std::int64_t quiet_findings = 0;
  Counts quiet_counts;
  // Some fault's `cause` names an event of this site: its infinities made NaN, so they are
  // faults after all (settle_verdicts moves them).
  bool named_as_cause = false, promoted = false;
  bool spread = false;  // the site's earliest spread point
  std::int64_t spread_ts = 0, spread_id = 0;
  double spread_before = 0, spread_after = 0;
};

struct KernelAgg {
  std::string name;
  bool selected = true;  // passes --kernel
  std::int64_t findings = 0, events = 0, folded = 0, sites = 0;
  Counts counts;
  RegionCounts split;
  std::int64_t first_ts = kNoTime, last_ts = kNoTime;
  std::int64_t fixed_yes = 0, fixed_no = 0, real_findings = 0;
  std::vector<std::int64_t> ranks;  // distinct ranks (or pids when unranked), small
};

struct GraphAgg {
  std::uint32_t proc = 0;
  std::int64_t graph_id = 0, findings = 0;
  std::int64_t replay_min = std::numeric_limits<std::int64_t>::max(), replay_max = -1;
  std::vector<std::int64_t> nodes;
  std::map<std::int64_t, std::int64_t> replays;  // replay -> findings (capped)
  bool replays_capped = false;
};

struct DumpRef {
  std::uint32_t proc = 0, file = 0;
  std::int64_t id = 0, ts = 0;
  std::string kernel, path;
};

// Non-finite values over time per kernel, in at most kBuckets buckets of 2^shift ns.
class TimeHist {
 public:
  static constexpr int kBuckets = 96;
  void add(std::uint32_t kernel, std::int64_t ts, const RegionCounts& c);
  int shift() const { return shift_; }
  std::int64_t lo() const { return lo_; }
  std::int64_t hi() const { return hi_; }
  const std::vector<std::map<std::int64_t, RegionCounts>>& per_kernel() const { return k_; }

 private:
  int shift_ = 16;  // 65 us
  std::int64_t lo_ = std::numeric_limits<std::int64_t>::max(), hi_ = std::numeric_limits<std::int64_t>::min();
  std::vector<std::map<std::int64_t, RegionCounts>> k_;
  struct Last {
    std::int64_t idx = -1;
    RegionCounts* c = nullptr;
  };
  std::vector<Last> last_;  // per kernel: the bucket written last (timestamps mostly increase)
};

struct Totals {
  std::int64_t files = 0, lines = 0, blank = 0, bad_lines = 0, syntax_errors = 0, field_errors = 0;
  std::int64_t schema_errors = 0, bytes = 0;
  std::int64_t ev_start = 0, ev_nonfinite = 0, ev_repeat = 0, ev_not_inspected = 0, ev_warning = 0,
               ev_summary = 0, ev_other = 0;
  std::int64_t filtered_out = 0;  // nonfinite/repeat events outside --since/--until/--kernel
  std::int64_t findings = 0, folded = 0, real_findings = 0;
  Counts counts;
  RegionCounts split;
  std::int64_t orphan_repeats = 0, unresolved_parents = 0, leaks = 0;
  // NaN-first verdicts: findings that are faults, those not proven to be in padding rows only
  // (what --fail-on real gates on), those in real rows; infinity-only findings that are not.
  std::int64_t faults = 0, faults_not_padding = 0, faults_real = 0, spreads = 0;
  std::int64_t quiet_intended = 0, quiet_arithmetic = 0;
  std::int64_t quiet() const { return sat_add(quiet_intended, quiet_arithmetic); }
};

// What FIRST CAUSE shows (verdicts.cpp): the event, its label, and what led to it.
struct FirstCause {
  const Snapshot* shown = nullptr;        // null: no fault, no first cause
  std::string label;
  const Snapshot* fault = nullptr;        // the earliest fault, when it is not `shown` itself
  std::vector<const Snapshot*> intended;  // the intended infinities its inputs held (kept ones)
  const Snapshot* preexisting = nullptr;  // a `preexisting` finding on the way, with its last writer
  std::vector<std::int64_t> not_kept;     // cause / intended_from ids whose events were not kept
  explicit operator bool() const { return shown != nullptr; }
};

struct TraceSink;  // trace.cpp
struct CrossRank;  // ranks.hpp

class Analysis {
 public:
  explicit Analysis(const Options& opt);
  ~Analysis();

  // Reads every input (files or directories). Bad lines are reported on `err`.
  void read_inputs(std::ostream& err);
  void read_file(const std::string& path, std::ostream& err);
  // Consumes one line of `file` (index into files); public for the tests and benchmarks.
  void consume_line(std::uint32_t file, std::int64_t lineno, std::string_view line, bool at_eof_no_newline,
                    std::ostream& err);
  int exit_code() const;
  bool gate_triggered() const;

  const Options& opt;
  std::vector<std::string> files;
  std::vector<Proc> procs;
  std::vector<Site> sites;
  std::vector<KernelAgg> kernels;
  std::vector<GraphAgg> graphs;
  std::vector<DumpRef> dumps;
  std::int64_t dumps_more = 0;
  std::optional<std::int64_t> dump_want_id, dump_want_pid;  // --dump lookup
  std::vector<DumpRef> dump_hits;
  std::map<std::string, std::pair<std::string, std::int64_t>> warnings;  // what -> (message, n)
  std::map<std::string, std::string> not_inspected;                      // kernel -> reason
  std::unordered_map<std::uint64_t, std::int64_t> edges;                 // parent<<32|child
  TimeHist hist;
  Totals totals;
  // Earliest faults by kind of origin (today's selection, for logs without `cause`), the earliest
  // fault of all, and the earliest `preexisting` fault (never a first cause on its own).
  Snapshot first_introduced, first_host, first_candidate, first_any, first_fault, first_preexisting;
  // The sentinel tier (docs/sentinel.md): the earliest fault a replay that ran only sentinel scans
  // found (origin_why `sentinel`: no origin, never a first cause of its own), and the escalation
  // events, in log order.
  Snapshot first_sentinel;
  struct EscalationSeen {
    std::uint32_t proc = 0;
    std::int64_t graph_id = 0, replay = 0, window = 0, finding = 0;
    std::string phase;
  };
  std::vector<EscalationSeen> escalations;
  bool any_origin = false;
  bool nan_first = false;  // some event carries `inf` or `cause`: the log has NaN-first verdicts
  bool input_error = false;  // missing/empty input, unsupported schema -> exit 2
  std::int64_t t0 = kNoTime, t1 = kNoTime;  // earliest / latest timestamp seen
  std::unique_ptr<TraceSink> trace;
  std::unique_ptr<CrossRank> cross;  // findings in collectives' buffers, joined across ranks

  // After the last input: joins the collectives' findings across ranks (ranks.cpp); a rank
  // claimed by two logs is an input error, named on `err`.
  void join_ranks(std::ostream& err);

  // An event is a fault when it holds NaN, says `fault: true`, is infinity-only without `inf`
  // (an older log), or --inf-faults is given (docs/report.md).
  bool is_fault(const Event& e) const;
  // After join_ranks: infinities some fault names as its cause become faults.
  void settle_verdicts();
  FirstCause first_cause() const;
  FirstCause first_cause_of(std::uint32_t proc) const;  // that process's own, by the same rule
  const Snapshot* kept_event(std::uint32_t proc, std::int64_t id) const;
  std::string proc_label(std::uint32_t proc) const;
  // Lineage between sites: the first cause's site first, then every other site that has
  // descendants but no parent, by time; and each site's children by time.
  std::vector<std::uint32_t> lineage_roots() const;
  std::vector<std::vector<std::uint32_t>> lineage_children() const;

 private:
  Event ev_;
  // Keyed by a 64-bit hash of the name / site key; collisions are checked against the
  // stored name / key and resolved by probing the next hash value.
  FlatIndex kernel_index_, site_index_;
  std::vector<std::string> site_keys_;
  std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t> graph_index_;
  std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t> proc_index_;
  std::optional<SafeRegex> kernel_re_;
  std::string key_;
  std::uint32_t cur_file_ = 0;
  bool file_refused_ = false;

  std::uint32_t proc_of(std::uint32_t file, const Event& e);
  std::uint32_t kernel_of(const std::string& name);
  std::uint32_t site_of(std::uint32_t proc, std::uint32_t kernel, const Event& e, std::int64_t line, bool* created);
  std::uint32_t graph_of(std::uint32_t proc, std::int64_t graph_id);
  std::uint32_t stream_of(Proc& p, const std::string& s);
  bool in_window(std::int64_t ts) const;
  void on_nonfinite(std::uint32_t file, std::int64_t line);
  void note_first_causes(const Event& e, std::uint32_t file, std::uint32_t pi, std::uint32_t si, std::int64_t line);
  void keep_for_causes(const Event& e, std::uint32_t file, std::uint32_t pi, std::uint32_t si, std::int64_t line);
  void note_verdicts(const Event& e, bool fault, Site& s, std::uint32_t pi);
  std::uint32_t site_of_event(std::uint32_t pi, std::int64_t id, bool* found) const;
  FirstCause resolve_cause(const Snapshot& fault) const;
  FirstCause legacy_first_cause() const;
  FirstCause sentinel_first_cause() const;
  void on_escalation(std::uint32_t proc, const Event& e);
  // Keeps a finding in a collective's buffer for join_ranks; true when its first-cause standing
  // waits for the join (a recvbuff whose own sendbuff was not non-finite).
  bool defer_collective(const Event& e, std::uint32_t file, std::uint32_t pi, std::uint32_t si, std::int64_t line,
                        std::uint32_t stream);
  void apply_join();
  void link_parents(const Event& e, std::uint32_t pi, std::uint32_t si, std::uint32_t stream);
  bool repeat_site(std::uint32_t pi, const Event& e, std::int64_t line, std::uint32_t* si);
  void on_repeat(std::uint32_t file, std::int64_t line);
  void on_summary(Proc& p);
  void on_start(Proc& p);
  void on_bad_line(std::uint32_t file, std::int64_t lineno, const ParseError& pe, bool at_eof_no_newline,
                   std::ostream& err);
  void count(Site& s, std::uint32_t site_idx, Proc& p, std::int64_t ts, std::int64_t n, const Counts& c,
             const RegionCounts& split, int fixed, bool has_replay, std::int64_t replay_lo,
             std::int64_t replay_hi);
  void count_verdict(Site& s, bool fault, InfKind kind, std::int64_t n, const Counts& c);
};

// Renderers.
void render_text(const Analysis& a, std::ostream& out);
void render_json(const Analysis& a, std::ostream& out);
bool write_html(const Analysis& a, const std::string& path, std::ostream& err);
bool write_trace(Analysis& a, std::ostream& err);
int run_dump(const Options& opt, std::ostream& out, std::ostream& err);

}  // namespace nanscope::report

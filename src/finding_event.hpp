// A drained finding as the log tells it: its aggregation site, the verdict on its rows, its
// origin fields, the `nonfinite` event and the console lines; and the events around findings
// (repeats, abort, summary, dump sidecars). Pure: no CUDA, no CUPTI, no locks. The finding
// reporter (hooks/finding_reporter.cpp) looks things up and calls these; CPU tests pin them.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "channel.hpp"
#include "collective.hpp"
#include "event_log.hpp"
#include "lineage.hpp"
#include "padding.hpp"
#include "python_line.hpp"
#include "signature.hpp"

namespace nanscope {

// Watch ids of rules: the rule index with this bit set (API watches count up from 1).
inline constexpr uint32_t kRuleWatchBit = 0x80000000u;
// Typed outputs given rows by the global padding spec: this bit plus the parameter index.
inline constexpr uint32_t kGlobalWatchBit = 0x40000000u;
// The record arg of a rescan after a copy or memset.
inline constexpr uint32_t kCopyArg = 0xffff;

// The event names written next to findings (the keys are in finding_event.cpp).
namespace event_name {
extern const char* const nonfinite;
extern const char* const repeat;
extern const char* const abort;
extern const char* const summary;
}  // namespace event_name

// What a finding's watch (API watch or rule) was declared with; kept after unwatch.
struct WatchMeta {
  std::string name;
  Action action = Action::detect;
};

std::string hex(uint64_t v);                        // "0x1f"
std::string short_name(const std::string& kernel);  // a signature cut for a console line

// --- verdict --------------------------------------------------------------------------------
const char* region_of(const Finding& f);  // "padding", "real", "mixed" or "unknown"
std::string ranges_text(const Finding& f);  // "0-3p,7r,..."
// Rows guessed from the global padding spec: never fixed, never aborts, only reported.
bool rows_inferred(const Finding& f);
// The watch a finding names: the registered one (`registered`, looked up by the caller), the
// global spec's, or none for a plain typed output.
WatchMeta finding_watch(const Finding& f, const std::optional<WatchMeta>& registered);
bool needs_watch_lookup(const Finding& f);  // whether finding_watch reads `registered`
// Whether parameter `arg` is known, from the signature, to be written.
bool writes_arg(const std::vector<ParamRole>& roles, uint32_t arg);
// A rescan that finds an API watch exactly as the previous scan left it, after a launch not
// known to write it (untyped, or a const parameter), is stale state: the launch only
// referenced the buffer. It is counted, never blamed on that kernel.
bool stale_rescan(const Finding& f, bool known_writer);
// Action abort on non-finite values in real rows. `action`: the watch's effective action.
bool aborts(const Finding& f, Action action);

// --- origin ---------------------------------------------------------------------------------
// The finding as the lineage tracker takes it; nullopt when the scan kept no origin state.
// `device`: the ordinal of its context (sequence numbers are per context).
std::optional<lineage::DeviceFinding> device_finding(const Finding& f, int device);
// The origin kind in the aggregation key ("" without origin state).
const char* origin_kind(const std::optional<lineage::DeviceFinding>& d);

// --- aggregation ----------------------------------------------------------------------------
// Identical findings (same kernel, arg, graph node, region, buffer, watch, rows and counts) fold
// together; a change of region, rows or counts is a new event: padding-only turning real is what
// users need to see, and a fold never hides a finding that differs. The origin's kind is part of
// the site too: a NaN re-introduced after its lineage closed must not fold into an earlier
// propagated event, nor the reverse. The counts are in the key exactly (nan, +inf, -inf, padding,
// real): no hash, so no two findings that differ can ever share a site.
using CountsKey = std::array<uint64_t, 5>;
using SiteKey =
    std::tuple<uint32_t, uint32_t, uint64_t, uint32_t, std::string, uint64_t, uint32_t, std::string, CountsKey>;
SiteKey site_key(const Finding& f, const char* origin_kind);

// Non-finite values summed over folded findings: by kind, and the row-aware split.
struct FoldedCounts {
  uint64_t nan = 0, pos_inf = 0, neg_inf = 0, padding = 0, real = 0;
  void add(const Finding& f);
};

struct Site {
  uint64_t first_event = 0;
  uint64_t total = 0;
  uint64_t pending = 0;  // folded since the last repeat event
  FoldedCounts pending_counts;  // their values
  uint32_t first_replay = 0, last_replay = 0;
  // Where a repeat belongs without its first event (site_identity): a report that sees two sites
  // of the engine as one of its own still places every repeat.
  Json identity;
  bool row_aware = false;
};

class Sites {
 public:
  // Sites remembered; a finding at a new site beyond them is its own event (record: nullptr).
  static constexpr std::size_t kMaxSites = std::size_t{1} << 16;
  // Counts one more finding at `key` (a replay number for graph findings); nullptr when the key
  // is new and kMaxSites are remembered already.
  Site* record(const SiteKey& key, uint32_t replay);
  // Folds finding `f` into `s`. Bounded log volume: a repeat event at totals 4, 16, 64, ...
  // (powers of four) is returned, and the closing totals at exit.
  std::optional<Json> fold(Site& s, const Finding& f, bool captured);
  // Final repeat events, for sites seen more than once; the remainders are taken (a second call
  // writes count 0), so a closing at abort and one at exit cannot count a finding twice.
  std::vector<Json> closing();

 private:
  std::map<SiteKey, Site> sites_;
};
// A site's first finding as a repeat names it: kernel, buffer (arg, ptr, elements), region, rows.
Json site_identity(const Finding& f, const std::string& kernel);
// `of`, `count`, `total`, `final`, the replay range, the folded `counts` (and counts_padding,
// counts_real for row-aware sites) and the site's identity.
Json repeat_event(const Site& s, bool with_replays, bool final);

// --- the nonfinite event and its console lines -----------------------------------------------
// A launch that may have written the finding's values (origin candidate), as the log names it.
struct CandidateFacts {
  std::string kernel = "?";  // demangled
  uint64_t launch_id = 0;
  uint64_t stream = 0;
  std::optional<PythonLine> python;
};
struct FindingFacts {
  const Finding& finding;
  int device = 0;
  std::string kernel = "?";     // demangled
  std::string kernel_mangled;
  WatchMeta watch;              // finding_watch()
  std::optional<uint64_t> graph_stream;  // captured: the stream the graph last launched on
  std::optional<PythonLine> python;      // where the launch the finding is named after came from
  std::vector<CandidateFacts> candidates;  // origin candidate: newest last
  std::optional<CollectiveFacts> collective;  // the scan was an NCCL collective's buffer
  // origin preexisting: the launch that left the buffer non-finite (kernel_id: the Verdict's).
  std::optional<CandidateFacts> last_writer;
};
// nonfinite.collective: the facts, and send_state from the finding's origin (a recv scan's only
// input is this rank's sendbuff: introduced means it was finite, propagated non-finite).
Json collective_json(const CollectiveFacts& c, const std::optional<lineage::Verdict>& origin);
Json python_json(const std::optional<PythonLine>& line);  // {file, line, function}, or null
// The body of the `nonfinite` event (without "dump", which the reporter adds after a dump).
Json finding_event(const FindingFacts& facts, const std::optional<lineage::Verdict>& origin);
std::string finding_line(const FindingFacts& facts);
std::string leak_line(const FindingFacts& facts, uint64_t event_id, const lineage::Verdict& origin);
std::string abort_reason(const Finding& f, const std::string& kernel, const std::string& watch);
Json abort_event(const Finding& f, const std::string& reason, const std::string& watch);

// --- tensor dumps ---------------------------------------------------------------------------
// Row-aware buffers keep their rows when they are dense; anything else is one dimension.
std::vector<uint64_t> dump_shape(const Finding& f);
Json dump_sidecar(const Finding& f, uint64_t event_id, long pid, const Json& event, const std::vector<uint64_t>& shape);

// --- summary --------------------------------------------------------------------------------
struct SummaryFigures {
  uint64_t launches = 0, scans = 0, findings = 0;
  uint64_t kernels_inspected = 0, kernels_not_inspected = 0, scans_dropped = 0;
  uint64_t scans_overlapped = 0;   // scan nodes moved off a graph's critical path
  uint64_t scans_merged = 0;   // scan nodes folded into merged ones
  uint64_t edges_programmatic = 0;  // graph edges around read-only scan nodes made programmatic
  uint64_t eager_batched = 0;  // eager scans launched with others in one grouped launch
  uint64_t eager_batches = 0;  // those grouped launches
  uint64_t overflow = 0;       // findings the device dropped: channel full
  uint64_t corrupt = 0;        // records that failed validation on the host
  uint64_t unchanged = 0;      // watched buffers found as the last scan left them
  uint64_t python_captures = 0, python_ns = 0;  // Python line walks and their wall time
  uint64_t nan = 0, pos_inf = 0, neg_inf = 0;
  uint64_t duration_ns = 0;
};
using KernelName = std::function<std::string(uint32_t kernel_id)>;  // "?" when unknown
Json origins_json(const lineage::Summary& origins, const KernelName& kernel_name);  // the first causes
// `origins`: origins_json(), or nullopt when origin tracking is off.
Json summary_event(const SummaryFigures& s, const std::optional<Json>& origins);
std::string summary_line(const SummaryFigures& s);
// The summary's NaN-first totals: faults, and infinity-only findings by kind.
void add_verdict_totals(Json& summary, const lineage::Summary& origins);
// First causes up front, NaN-first: each root a NaN names as its cause, in time order, with its
// first leak (5 at most; every root when `inf_faults`), then a line on the infinities that are
// not faults.
std::vector<std::string> cause_lines(const lineage::Summary& origins, const KernelName& kernel_name,
                                     bool inf_faults = false);

}  // namespace nanscope

// The sentinel tier's decisions (issue 37, docs/sentinel.md), as pure code on plain models so CPU
// tests reach them; the engine applies them (hooks/, not yet wired).
//
// In a CUDA graph, every scan node stays in the instantiated exec; the sentinel tier leaves enabled
// only the scans whose values the graph hands out: watches, and scans of buffers no later node of
// the graph overwrites (its live-out buffers). A NaN made anywhere upstream reaches one of them
// unless the graph masks it on the way. When one fires, every scan node is enabled for the next
// replays (the escalation window) so that the full lineage and FIRST CAUSE of a recurring NaN are
// logged; a NaN that does not recur is reported as seen, with its place and replay, and with no
// guess at its cause. In eager mode, watches and host copies are always scanned, other launches
// in a bounded sample, and every launch for a window after a hit.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_set>
#include <vector>

#include "scan_overlap.hpp"

namespace nanscope::sentinel {

// Which scan nodes of a graph stay enabled under the sentinel tier, on the model the overlap
// planner uses (src/scan_overlap.hpp): true for a scan node that is a watch (`watch[i]`), or that
// reads a range no later app node overwrites exactly. "Later" is reachable from the scan's parents
// (its kernel) or from the scan (in line, K -> S -> C); "exactly" is a decoder's exact write or
// a memset/memcpy destination (a pointer word may or may not be written through: it never counts).
// A search that visits more than `max_visits` nodes keeps the scan (when unsure, scan). Non-scan
// nodes are false.
struct Limits {
  uint32_t max_visits = 4096;
};
std::vector<bool> sentinel_scans(const std::vector<overlap::Node>& nodes, const std::vector<overlap::Edge>& edges,
                                 const std::vector<bool>& watch, const Limits& limits = {});

// Which sentinel scans the twin may run after the graph's end instead of in place
// (hooks/graph_twin.cpp): a plain read-only scan (NodeKind::scan) whose reads no node that may run
// after it may write. Such a node is any node that is not its ancestor (later in its chain, or on
// a parallel branch): an app node or a fixing scan whose writes (exact or pointer words) overlap
// the reads, or an opaque node (it may write anything). Then the graph's end still holds the
// values the scan's kernel wrote, and the finding names the right kernel. A graph of more than
// `max_visits` nodes moves none (when unsure, in place).
std::vector<bool> movable_to_end(const std::vector<overlap::Node>& nodes, const std::vector<overlap::Edge>& edges,
                                 const std::vector<bool>& sentinel, const Limits& limits = {});

// The twin exec's edges (hooks/graph_twin.cpp, docs/sentinel.md), over a graph of `n` nodes: the
// `removed` nodes (quiet scans) are gone, the `moved` ones (sentinel scans, read-only) leave their
// place, and every other node keeps its order: each kept node is joined to the kept nodes it
// reached through removed or moved ones (a scan in line, K -> S -> C, becomes K -> C). Each
// moved node then runs after every sink of the kept nodes (a kept node with no kept child): the
// caller moves only scans that movable_to_end allows (nothing after them may overwrite what they
// read, so the end holds the same values), and they cost one hop there instead of one each in
// the chain. Edges as
// (from, to) index pairs, each once: kept-to-kept in (from, to) order, then
// each moved node's, by moved node.
std::vector<overlap::Edge> twin_edges(uint32_t n, const std::vector<overlap::Edge>& edges,
                                      const std::vector<bool>& removed, const std::vector<bool>& moved);

// Whether the union of `cover` holds every byte of `range`.
bool covered(const overlap::Range& range, std::vector<overlap::Range> cover);

// One graph exec's tier over its replays. The engine asks at each launch which scans the replay
// runs (sentinels only, or all), and tells each replay's drained result; the answer changes only
// at a launch, before it is made, so an exec is never changed under a launch in flight.
enum class Mode : uint8_t { sentinels, all };
enum class Outcome : uint8_t {
  none,
  escalate,        // a sentinel fired: the next `window` replays run every scan
  localized,       // the window ended and the NaN recurred in it: its lineage is in the log
  did_not_recur,   // the window ended clean: seen at first_seen(), first cause unknown
};
class Escalation {
 public:
  explicit Escalation(uint32_t window) : window_(window ? window : 1) {}

  // The mode replay `replay` is launched in; call once per launch, in launch order.
  Mode on_launch(uint64_t replay);
  // Replay `replay` drained: whether any of its scans found a non-finite value. After a
  // `localized` window, hits on consecutive replays (the same NaN, still there) answer none; the
  // first hit after a replay without one escalates again.
  Outcome on_drained(uint64_t replay, bool nonfinite);

  // A sentinel fired and its window has not drained yet (at exit: seen, the window incomplete).
  bool escalating() const { return escalated_; }
  // A window's replay drained so far found the NaN again.
  bool recurred() const { return escalated_ && recurred_; }
  uint64_t first_seen() const { return first_seen_; }  // the replay whose sentinel fired last
  // Replay `replay` was launched with every scan outside any window: a launch the sentinel tier
  // could not turn into a sentinel one (its caller was not intercepted). Its findings have their
  // lineage; it counts toward no window. The last kFullReplays are remembered.
  void on_full_launch(uint64_t replay);
  // Replay `replay` was launched with every scan: in a window (and not drained yet), or full.
  bool launched_all(uint64_t replay) const { return in_window(replay) || full_replay(replay); }
  bool in_window(uint64_t replay) const { return escalated_replays_.count(replay) != 0; }
  uint32_t window() const { return window_; }
  // The replay that the `k`-th launch with every scan was (0-based: in a window, or full). A quiet
  // scan node runs only in those, so its own execution count is k, not the replay (session 21:
  // under the twin, tier_replay7's quiet findings said replays 0-2 for replays 8-10). nullopt
  // when k is older than the last kFullLaunches remembered, or not made yet.
  std::optional<uint64_t> replay_of_full_launch(uint64_t k) const;

 private:
  const uint32_t window_;
  bool escalated_ = false;        // launches run every scan until `to_launch_` is spent
  uint32_t to_launch_ = 0;        // escalated launches still to make
  std::unordered_set<uint64_t> escalated_replays_;  // launched with every scan, not drained yet
  uint32_t to_drain_ = 0;         // escalated replays not drained yet
  bool recurred_ = false;
  uint64_t first_seen_ = 0;
  // After `localized`, a NaN that keeps recurring on every replay does not escalate again (its
  // lineage is logged; every window would make the tier full); a hit after a clean replay (a gap
  // in the hits) does.
  bool localized_ = false;
  std::optional<uint64_t> last_hit_;  // the latest replay drained with a non-finite value
  static constexpr size_t kFullLaunches = 4096;
  std::deque<uint64_t> full_launches_;  // the replay of each launch with every scan, newest last
  uint64_t full_launches_dropped_ = 0;  // older ones forgotten (bounded)
  void note_full_launch(uint64_t replay);
  static constexpr size_t kFullReplays = 64;
  std::deque<uint64_t> full_replays_;  // launched full outside a window, newest last
  bool full_replay(uint64_t replay) const;
};

// Eager launches under the sentinel tier: which are scanned. Watches and copies to the host are
// always scanned (the caller says so); the first launch of each kernel (up to `max_kernels`
// kernels) and every `period`-th launch are the sample; after a hit, every launch of the next
// `window` is scanned. Only a launch inside a window was preceded by scans of everything it read
// (the engine forgets every buffer's state when a window opens): its finding has a lineage, any
// other is a sentinel's, seen with no origin (docs/sentinel.md#in-eager-mode).
class EagerSample {
 public:
  EagerSample(uint32_t period, uint64_t window, uint32_t max_kernels = 1u << 14)
      : period_(period ? period : 1), window_(window), max_kernels_(max_kernels) {}

  bool should_scan(uint64_t launch_id, uint32_t kernel_id, bool always);
  // A finding was drained; `next_launch_id` is the id the next launch will get: the window
  // starts there (the launches between the hit and its drain are not scanned again).
  // True when it opened a window (not one that extends the window open).
  bool on_hit(uint64_t next_launch_id);
  // Launch `launch_id` was in a window (the last kWindows are remembered).
  bool in_window(uint64_t launch_id) const;

 private:
  const uint32_t period_;
  const uint64_t window_;
  const uint32_t max_kernels_;
  uint64_t window_end_ = 0;  // launches below it are all scanned
  static constexpr size_t kWindows = 64;
  std::deque<std::pair<uint64_t, uint64_t>> windows_;  // [first, end) launch ids, oldest first
  std::unordered_set<uint32_t> seen_kernels_;
};

}  // namespace nanscope::sentinel

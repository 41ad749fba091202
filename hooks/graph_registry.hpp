// What nanscope knows about the app's CUDA graphs, execs and nodes, behind one lock: graph ids,
// scan node numbers, the scan node after each kernel node, our own scan nodes, the scans beside
// the critical path, the I/O of captured library calls, merged nodes' tasks per exec, the
// programmatic edges to undo, the stream of each graph's last launch. Every call takes the lock
// for its maps only and calls nothing out while it holds it (hooks/engine.hpp: level 3); the
// destroy callbacks make it forget reused handles.
#pragma once
#include <cuda.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "channel.hpp"
#include "lock_rank.hpp"
#include "scan_abi.h"
#include "scan_overlap.hpp"
#include "sentinel.hpp"

namespace nanscope {

// The scan node that follows an instrumented kernel node.
struct ScanNode {
  CUgraphNode node = nullptr;
  CUdeviceptr accum = 0;
  uint64_t graph_id = 0;
  uint32_t graph_node = 0;
  static constexpr uint32_t kAlone = ~0u;
  uint32_t merge_launch = kAlone;  // its launch in a merged scan node, or kAlone
};

// An edge made programmatic in the app's graph until its exec is made.
struct PdlEdge {
  CUgraphNode from, to;
  CUgraphEdgeData data;
};

class GraphRegistry {
 public:
  // Graph ids: a captured graph's capture id, or numbered from 2^40 for one built by hand.
  uint64_t graph_id_for(CUgraph graph);
  void set_graph_id(CUgraph graph, uint64_t id);
  void on_instantiated(CUgraphExec exec, CUgraph graph);
  void on_launch(CUgraphExec exec, uint64_t stream);
  std::optional<uint64_t> stream_of(uint64_t graph_id);

  // Scan nodes: their numbers in a graph, the kernel node each follows, ours.
  uint32_t number_scan(uint64_t graph_id);
  void remember_scan(CUgraphNode app_node, const ScanNode& scan);
  void add_scan(CUgraphNode kernel, const ScanNode& scan);  // remember_scan, and the node is ours
  std::optional<ScanNode> scan_after(CUgraphNode kernel);
  bool known_node(CUgraphNode node);  // instrumented already, or one of our scan nodes
  std::unordered_map<CUgraphNode, CUgraphNode> kernels_of_scans();  // scan node -> its kernel node

  // Scan nodes beside the critical path, and merged ones (which are beside it too).
  void mark_overlapped(CUgraphNode scan);
  bool is_overlapped(CUgraphNode scan);
  // `merged` replaces the scan nodes `members` (in its launch order); `kernel_of` is kernels_of_scans().
  void on_merged(CUgraphNode merged, const std::vector<CUgraphNode>& members,
                 const std::unordered_map<CUgraphNode, CUgraphNode>& kernel_of);

  // Captured library calls' kernel nodes: what the call only read, and its outputs.
  void remember_library_io(const std::vector<CUgraphNode>& nodes, const std::vector<uint64_t>& reads,
                           overlap::Range output, bool exact);
  void library_io(CUgraphNode node, std::vector<uint64_t>& inputs, std::vector<overlap::KnownWrite>& exact);

  // A merged node's task as last set on an exec (an exec's parameters cannot be read back), and
  // whether the exec took a whole graph's parameters (cuGraphExecUpdate).
  struct MergedTask {
    std::optional<nanscope_scan_group> task;
    bool exec_updated = false;
  };
  MergedTask merged_task(CUgraphExec exec, CUgraphNode node);
  void set_merged_task(CUgraphExec exec, CUgraphNode node, const nanscope_scan_group& task);
  void on_exec_update(CUgraphExec exec);

  void add_pdl_edges(CUgraph graph, const std::vector<PdlEdge>& edges);
  std::vector<PdlEdge> take_pdl_edges(CUgraph graph);

  // Conditional nodes' bodies, as cuGraphAddNode made them (added_conditional): the driver gives
  // them out only then. Bounded (kMaxConditionals): past it, a node's bodies are unknown.
  void remember_bodies(CUgraphNode conditional, std::vector<CUgraph> bodies);
  std::vector<CUgraph> bodies_of(CUgraphNode conditional);
  static constexpr size_t kMaxConditionals = 1u << 16;
  // Scan nodes inside a body (numbered in their graph): a body may run many times per replay, so
  // their accumulator counts executions, not replays (replay_kind).
  void note_body_scan(uint64_t graph_id, uint32_t graph_node);

  // Handles are reused after destruction: forget them.
  void forget_node(CUgraphNode node);
  void forget_graph(CUgraph graph);
  void forget_exec(CUgraphExec exec);

  // ---- the sentinel tier (hooks/graph_tier.cpp, docs/sentinel.md) ----
  // At instantiation: the graph's scan nodes that run only when its exec escalates (quiet), and
  // its sentinel scans the twin may run after its end (movable: sentinel::movable_to_end).
  struct TierNodes {
    std::vector<CUgraphNode> quiet, movable;
  };
  void set_tier_nodes(CUgraph graph, TierNodes nodes);
  TierNodes tier_nodes_of(CUgraph graph);
  // The exec was made and `disabled` (quiet nodes) disabled on it: its Escalation starts. The
  // exec's graph id, or none when the exec's graph is unknown (no tier then).
  std::optional<uint64_t> start_tier(CUgraphExec exec, const std::vector<CUgraphNode>& disabled, uint32_t window);
  // At a launch's enter site: the replay it makes, and the quiet nodes to enable or disable
  // first (empty: they stay as they are).
  struct TierLaunch {
    bool tiered = false, enable = false, escalated = false;
    uint64_t replay = 0;
    std::vector<CUgraphNode> change;
    CUgraphExec twin = nullptr;  // the twin to launch in the exec's place when not escalated
  };
  // `twin_only`: only an exec with a twin is counted (the launch interposer asks for every exec;
  // the others are counted at the CUPTI enter site, once).
  TierLaunch tier_launch(CUgraphExec exec, bool twin_only = false);
  // The twin tier (hooks/graph_twin.cpp): `twin` is the graph less its `quiet` scan nodes; the
  // application's exec keeps them all (nothing is disabled). The exec's graph id, or none.
  std::optional<uint64_t> start_twin_tier(CUgraphExec exec, const std::vector<CUgraphNode>& quiet, CUgraphExec twin,
                                          uint32_t window);
  // A twin-tiered exec launched past the interposer: numbered as a replay with every scan
  // (true), or not twin-tiered (false).
  bool untwinned_launch(CUgraphExec exec);
  // After an escalated launch: `done` is recorded on its stream behind it.
  void add_in_flight(CUgraphExec exec, uint64_t replay, CUevent done);
  // A drained finding of a graph replay, before its verdict: which scans its replay ran.
  enum class ReplayKind : uint8_t {
    untiered,       // no tier (or not this graph's): nothing to tell
    // the replay ran only the sentinels: no origin, and it may escalate. Also a scan inside a
    // conditional node's body, whose replay is not known (its count is of executions).
    sentinel_only,
    escalated,      // a window's replay, which ran every scan
    quiet,          // a quiet scan's finding: from the open window
  };
  ReplayKind replay_kind(const Finding& f);
  // An escalated window's replay, or a quiet scan's (which runs only in those): every scan ran.
  static bool ran_every_scan(ReplayKind k) { return k == ReplayKind::escalated || k == ReplayKind::quiet; }
  // A quiet scan's finding (ReplayKind::quiet): the replay of its exec's f.replay-th launch with
  // every scan (sentinel::Escalation::replay_of_full_launch).
  std::optional<uint64_t> quiet_replay(const Finding& f);
  // The same finding judged: only a fault counts (a NaN; an infinity under NANSCOPE_INF=fault),
  // never a mask's intended -inf, which is on every replay. A sentinel-only fault escalates its
  // exec: the window to log.
  struct SentinelHit {
    bool escalate = false;
    uint32_t window = 0;
  };
  SentinelHit on_judged(const Finding& f, ReplayKind kind, bool fault);
  // The drain: the escalated replays' events to query before the channels are read, those found
  // complete (their findings are then all drained), and what the windows became after.
  struct InFlight {
    CUgraphExec exec;
    uint64_t replay;
    CUevent done;
  };
  std::vector<InFlight> in_flight();
  void mark_complete(const std::vector<InFlight>& complete);
  struct TierOutcome {
    uint64_t graph_id = 0, replay = 0;
    uint32_t window = 0;
    sentinel::Outcome outcome = sentinel::Outcome::none;
  };
  std::vector<TierOutcome> settle(std::vector<CUevent>& spent);
  // At exit: the windows not drained (Outcome::escalate stands for `incomplete`).
  std::vector<TierOutcome> open_windows();
  // Before an exec update or destroy: its quiet nodes (to enable again), its events and its
  // twin (to destroy); its tier retires.
  std::vector<CUgraphNode> end_tier(CUgraphExec exec, std::vector<CUevent>& events, CUgraphExec& twin);

 private:
  void forget_merged_tasks(CUgraphExec exec);  // callers hold mu_

  Ranked<std::mutex, LockLevel::part> mu_{"GraphRegistry::mu_"};
  std::unordered_map<uint64_t, uint32_t> scans_in_graph_;    // graph id -> scans in it so far
  std::unordered_map<CUgraphNode, ScanNode> scan_after_;     // kernel node -> its scan node
  std::unordered_set<CUgraphNode> scan_nodes_;               // our own scan nodes
  std::unordered_map<CUgraph, uint64_t> graph_ids_;          // captured (capture id) or built by hand
  std::unordered_map<CUgraphExec, uint64_t> exec_graph_ids_;
  std::unordered_map<uint64_t, uint64_t> graph_streams_;     // graph id -> stream of its last launch
  uint64_t next_graph_id_ = uint64_t{1} << 40;               // above any capture id
  std::unordered_set<CUgraphNode> overlapped_;               // scan nodes moved beside the critical path
  struct LibraryIo {
    std::vector<uint64_t> reads;
    std::vector<overlap::Range> outputs;
    std::vector<overlap::KnownWrite> exact;
  };
  std::unordered_map<CUgraphNode, LibraryIo> library_io_;    // kernel nodes of captured library calls
  std::unordered_map<CUgraphNode, std::vector<CUgraph>> bodies_;  // conditional nodes' body graphs
  std::set<std::pair<uint64_t, uint32_t>> body_scans_;             // (graph id, scan number) in a body
  std::map<std::pair<CUgraphExec, CUgraphNode>, nanscope_scan_group> merged_tasks_;
  std::unordered_set<CUgraphExec> updated_execs_;  // took a whole graph's parameters (cuGraphExecUpdate)
  std::unordered_map<CUgraph, std::vector<PdlEdge>> pdl_edges_;  // made programmatic until the exec is made

  // The sentinel tier: a graph's quiet scan nodes until its exec is made, and each exec's state.
  struct Tier {
    uint64_t graph_id = 0;
    std::vector<CUgraphNode> quiet;             // disabled while only the sentinels run
    std::unordered_set<uint32_t> quiet_numbers; // their graph_node numbers (merged members too)
    sentinel::Escalation escalation;
    uint64_t launches = 0;                      // the next replay's number
    bool all_enabled = false;                   // the quiet nodes are enabled on the exec now
    std::deque<std::pair<uint64_t, CUevent>> in_flight;  // escalated replays, completion unknown
    std::vector<uint64_t> complete;             // known complete before the drain now under way
    std::unordered_set<uint64_t> nonfinite;     // escalated replays a sentinel's finding came from
    bool quiet_fired = false;                   // a quiet scan found non-finite in this window
    CUgraphExec twin = nullptr;                 // the twin tier's sentinel exec (graph_twin.cpp)
    explicit Tier(uint32_t window) : escalation(window) {}
  };
  Tier* tier_of_graph(uint64_t graph_id);  // callers hold mu_
  // A fresh tier for `exec` with the graph_node numbers of its `quiet` scans; null when the exec's
  // graph is unknown. Callers hold mu_.
  Tier* new_tier(CUgraphExec exec, const std::vector<CUgraphNode>& quiet, uint32_t window);
  std::unordered_map<CUgraph, TierNodes> tier_nodes_;
  std::unordered_map<CUgraphExec, Tier> tiers_;
  // Tiers of destroyed or updated execs, newest first: their replays' findings may still be in
  // the channel (PyTorch destroys a graph at exit, right after its last replay; the drain runs
  // every NANSCOPE_POLL_US and may be behind). Bounded: the oldest goes first.
  static constexpr size_t kRetiredTiers = 16;
  std::deque<Tier> retired_;
};

}  // namespace nanscope

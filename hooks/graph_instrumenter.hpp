// CUDA graphs: the engine's entry for every graph callback. It puts a scan node after each kernel
// node of a graph built by hand, keeps scan nodes following their kernel node's new parameters,
// and hands the rest to its parts: the GraphRegistry (hooks/graph_registry.*: ids, scan nodes,
// execs, the one graph lock) and the GraphPlanner (hooks/graph_planner.hpp: scans beside the
// critical path, merged, programmatic edges).
#pragma once
#include <cuda.h>

#include <array>

#include <atomic>
#include <optional>
#include <vector>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "event_log.hpp"
#include "graph_planner.hpp"
#include "graph_registry.hpp"
#include "scan_overlap.hpp"
#include "task_builder.hpp"

namespace nanscope {

class GraphInstrumenter {
 public:
  GraphInstrumenter(const Config& cfg, EventLog& log, TaskBuilder& tasks, Contexts& contexts, Allocations& allocs,
                    Counters& counters, ScanFailures& failures)
      : cfg_(cfg), log_(log), tasks_(tasks), contexts_(contexts), allocs_(allocs), counters_(counters), failures_(failures),
        planner_(cfg, log, tasks, allocs, counters, registry_) {}

  // Scans captured from a stream: the next node number in graph `graph_id`, and which captured
  // app node a scan follows (so later parameter updates reach it).
  uint32_t number_scan(uint64_t graph_id) { return registry_.number_scan(graph_id); }
  void remember_scan(CUgraphNode app_node, const ScanNode& scan) { registry_.remember_scan(app_node, scan); }
  // The kernel nodes a captured library call launched, and the buffers it only read (its inputs)
  // and wrote (`output`; `exact`: its extent is known, as the call's scan reads it): in the
  // planner's model those nodes do not write through their inputs' pointers, and write exactly
  // `output` through its pointer when `exact`.
  void remember_library_io(const std::vector<CUgraphNode>& nodes, const std::vector<uint64_t>& reads,
                           overlap::Range output, bool exact) {
    registry_.remember_library_io(nodes, reads, output, exact);
  }
  // The stream graph `graph_id` was last launched on, if it was.
  std::optional<uint64_t> stream_of(uint64_t graph_id) { return registry_.stream_of(graph_id); }

  // At the enter site of instantiate (and of exec update, so topologies keep matching): a scan
  // node after every kernel node with something to scan, then scans beside and merged.
  void on_graph_instantiate(CUgraph graph);
  void on_graph_instantiated(CUgraphExec exec, CUgraph graph);
  // After instantiate or exec update (exit site): the graph's programmatic edges around scan
  // nodes go back to full edges, so the app's own graph reads back as it did (hooks/graph_pdl.cpp).
  void on_graph_copied(CUgraph graph);
  void on_end_capture(CUstream stream);
  // A kernel node's parameters changed: its scan node follows (exec may be null: the graph).
  void on_kernel_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params, bool v1);
  // A memset node's parameters changed (XLA's command buffers update them when buffers move): its
  // scan node follows, or scans nothing where the new pattern is not finite (graph_memset.cpp).
  void on_memset_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* params);
  void on_graph_launch(CUgraphExec exec, CUstream stream);

  // The sentinel tier (hooks/graph_escalation.cpp, docs/sentinel.md). At a launch's enter site,
  // on the launching thread: the exec's quiet scan nodes are enabled or disabled for this replay.
  void on_graph_launch_enter(CUgraphExec exec);
  // The twin tier (hooks/graph_twin.cpp): the graph launch interposer's sink, and its patching
  // (at start and after each module load, as the library interposers).
  void start_launch_interposer();
  void on_module_loaded();
  CUgraphExec choose_launch(CUgraphExec exec);
  // The drain: before the channels are read, the escalated replays known complete; after, what
  // their windows became (logged).
  void before_drain();
  void after_drain();
  // A drained finding of a graph replay: which scans its replay ran (before its verdict), then
  // the verdict told (after it: only faults count; a sentinel's may escalate, logged with the
  // finding's event id).
  GraphRegistry::ReplayKind replay_kind(const Finding& f) {
    return cfg_.tier == Tier::sentinel && f.captured ? registry_.replay_kind(f) : GraphRegistry::ReplayKind::untiered;
  }
  // A quiet scan node's finding: the replay it ran in (its own run count is not: it runs only in
  // the launches with every scan); nullopt when that launch is no longer known.
  std::optional<uint64_t> quiet_replay(const Finding& f) { return registry_.quiet_replay(f); }
  void on_judged(const Finding& f, GraphRegistry::ReplayKind kind, bool fault, uint64_t finding_id);
  void at_exit();  // windows still open: `incomplete`
  // At exit the last drains make no CUDA call (FindingReporter::shutdown): no event is queried.
  void stop_event_queries() { exiting_.store(true, std::memory_order_relaxed); }
  // The exec takes another graph's parameters: what nanscope set on its merged scan nodes is gone.
  void on_graph_exec_update(CUgraphExec exec);
  // Handles are reused after destruction: forget them.
  void on_graph_node_destroy(CUgraphNode node);
  // Exit site of a successful cuGraphAddNode(_v2): a conditional node's bodies are remembered.
  void on_node_added(CUpti_CallbackId cbid, const void* params);
  void on_graph_destroy(CUgraph graph);
  void on_graph_exec_destroy(CUgraphExec exec);

  // What a held eager scan reads: from the allocation base of each buffer (a later kernel may
  // write the whole allocation through its base) to the buffer's end. (Graph scan nodes are
  // modelled with exact reads and forward-reaching writes: graph_overlap.cpp.)
  std::vector<overlap::Range> scan_reads(const nanscope_scan_task& task);

 private:
  void start_tier(CUgraphExec exec, CUgraph graph);
  bool start_twin_tier(CUgraphExec exec, CUgraph graph);
  CUgraphExec make_twin(CUgraph graph, const GraphRegistry::TierNodes& nodes);
  bool twin_launch_enter(CUgraphExec launched);
  void end_twin(CUgraphExec twin);
  void mark_escalated_launch(CUgraphExec exec, uint64_t replay);
  // The exec's tier is forgotten and its events destroyed; `enable_again`: its quiet nodes first.
  void end_tier(CUgraphExec exec, bool enable_again);
  void note_escalated_launch(CUgraphExec exec, CUstream stream);  // exit site: an event behind it
  void set_enabled(CUgraphExec exec, const std::vector<CUgraphNode>& nodes, bool enable,
                   std::vector<CUgraphNode>* done = nullptr);
  // Why a kernel node got no scan node, for the debug line of an instantiate (NodeTally).
  enum class NodeScan : uint8_t {
    scanned, own_scan, not_looked_at, already_scanned, nothing_to_scan, failed, library, refused
  };
  using NodeTally = std::array<size_t, 8>;  // kernel nodes of a graph and its children, by NodeScan
  // `in_body`: `graph` runs inside a conditional node's body (note_body_scan).
  void instrument_graph(CUgraph graph, uint64_t graph_id, ContextState& cs, int depth, NodeTally& tally,
                        bool in_body = false);
  NodeScan scan_kernel_node(CUgraph graph, CUgraphNode node, uint64_t graph_id, ContextState& cs, bool in_body);
  // A memset node of a pattern finite in every type gets the scan an eager memset gets
  // (graph_memset.cpp): its readers in the graph, which get no initial scans, know its state.
  NodeScan scan_memset_node(CUgraph graph, CUgraphNode node, uint64_t graph_id, ContextState& cs, bool in_body);
  // The task of that scan; false where the memset's bytes are not judged by the pattern alone.
  bool memset_task(const CUDA_MEMSET_NODE_PARAMS& p, ContextState& cs, nanscope_scan_task& task, uint64_t& max_bytes);
  struct NodeDependents {
    std::vector<CUgraphNode> nodes;
    std::vector<CUgraphEdgeData> edges;
  };
  bool dependents_of(CUgraphNode node, NodeDependents& out);
  NodeScan add_scan_after(CUgraph g, CUgraphNode node, const NodeDependents& deps, nanscope_scan_task& task,
                          uint64_t max_bytes, uint64_t graph_id, ContextState& cs, bool in_body);
  void note_refused_node(const KernelInfo& k, const LaunchArgs& args, const LaunchPlan& plan, uint64_t graph_id);
  void note_conditional(uint64_t graph_id);
  void set_scan_params(CUgraphExec exec, const ScanNode& sn, nanscope_scan_task& task, uint64_t max_bytes,
                       ContextState& cs);
  void update_merged_member(CUgraphExec exec, const ScanNode& sn, const nanscope_scan_task& task, ContextState& cs);

  const Config& cfg_;
  EventLog& log_;
  TaskBuilder& tasks_;
  Contexts& contexts_;
  Allocations& allocs_;
  Counters& counters_;
  ScanFailures& failures_;
  std::atomic<bool> exiting_{false};
  std::atomic<bool> launches_interposed_{false};  // a graph launch import slot was patched (graph_twin.cpp)
  GraphRegistry registry_;
  GraphPlanner planner_;  // after registry_, which it uses
};

}  // namespace nanscope

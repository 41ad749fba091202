// CUDA graphs: the engine's entry for every graph callback. It puts a scan node after each kernel
// node of a graph built by hand, keeps scan nodes following their kernel node's new parameters,
// and hands the rest to its parts: the GraphRegistry (hooks/graph_registry.*: ids, scan nodes,
// execs, the one graph lock) and the GraphPlanner (hooks/graph_planner.hpp: scans beside the
// critical path, merged, programmatic edges).
#pragma once
#include <cuda.h>

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
      : log_(log), tasks_(tasks), contexts_(contexts), allocs_(allocs), counters_(counters), failures_(failures),
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
  void on_graph_copied(CUgraph graph) { planner_.restore_full_edges(graph); }
  void on_end_capture(CUstream stream);
  // A kernel node's parameters changed: its scan node follows (exec may be null: the graph).
  void on_kernel_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params, bool v1);
  void on_graph_launch(CUgraphExec exec, CUstream stream);
  // The exec takes another graph's parameters: what nanscope set on its merged scan nodes is gone.
  void on_graph_exec_update(CUgraphExec exec);
  // Handles are reused after destruction: forget them.
  void on_graph_node_destroy(CUgraphNode node);
  void on_graph_destroy(CUgraph graph);
  void on_graph_exec_destroy(CUgraphExec exec);

  // What a held eager scan reads: from the allocation base of each buffer (a later kernel may
  // write the whole allocation through its base) to the buffer's end. (Graph scan nodes are
  // modelled with exact reads and forward-reaching writes: graph_overlap.cpp.)
  std::vector<overlap::Range> scan_reads(const nanscope_scan_task& task);

 private:
  void instrument_graph(CUgraph graph, uint64_t graph_id, ContextState& cs, int depth);
  void scan_kernel_node(CUgraph graph, CUgraphNode node, uint64_t graph_id, ContextState& cs);
  void set_scan_params(CUgraphExec exec, const ScanNode& sn, nanscope_scan_task& task, uint64_t max_bytes,
                       ContextState& cs);
  void update_merged_member(CUgraphExec exec, const ScanNode& sn, const nanscope_scan_task& task, ContextState& cs);

  EventLog& log_;
  TaskBuilder& tasks_;
  Contexts& contexts_;
  Allocations& allocs_;
  Counters& counters_;
  ScanFailures& failures_;
  GraphRegistry registry_;
  GraphPlanner planner_;  // after registry_, which it uses
};

}  // namespace nanscope

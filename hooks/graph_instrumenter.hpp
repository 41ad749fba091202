// CUDA graphs: ids and node numbers of the graphs scans run in, a scan node after each kernel
// node of a graph built by hand, scan nodes that follow their kernel node's new parameters,
// and (hooks/graph_overlap.cpp) read-only scans moved beside the critical path and merged.
// It owns the graph lock and every per-graph map; the destroy callbacks make it forget.
#pragma once
#include <cuda.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "event_log.hpp"
#include "scan_overlap.hpp"
#include "task_builder.hpp"

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

class GraphInstrumenter {
 public:
  GraphInstrumenter(const Config& cfg, EventLog& log, TaskBuilder& tasks, Contexts& contexts, Allocations& allocs,
                    Counters& counters, ScanFailures& failures)
      : cfg_(cfg), log_(log), tasks_(tasks), contexts_(contexts), allocs_(allocs), counters_(counters),
        failures_(failures) {}

  // Scans captured from a stream: the next node number in graph `graph_id`, and which captured
  // app node a scan follows (so later parameter updates reach it).
  uint32_t number_scan(uint64_t graph_id);
  void remember_scan(CUgraphNode app_node, const ScanNode& scan);
  // The kernel nodes a captured library call launched, and the buffers it only read (its inputs)
  // and wrote (`output`; `exact`: its extent is known, as the call's scan reads it): in the
  // planner's model those nodes do not write through their inputs' pointers, and write exactly
  // `output` through its pointer when `exact`.
  void remember_library_io(const std::vector<CUgraphNode>& nodes, const std::vector<uint64_t>& reads,
                           overlap::Range output, bool exact);
  // The stream graph `graph_id` was last launched on, if it was.
  std::optional<uint64_t> stream_of(uint64_t graph_id);

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
  uint64_t graph_id_for(CUgraph graph);
  void instrument_graph(CUgraph graph, uint64_t graph_id, ContextState& cs, int depth);
  void scan_kernel_node(CUgraph graph, CUgraphNode node, uint64_t graph_id, ContextState& cs);
  bool known_node(CUgraphNode node);  // instrumented already, or one of our scan nodes
  void set_scan_params(CUgraphExec exec, const ScanNode& sn, nanscope_scan_task& task, uint64_t max_bytes,
                       ContextState& cs);
  bool is_overlapped(CUgraphNode scan);
  void forget_merged_tasks(CUgraphExec exec);  // callers hold mu_

  // hooks/graph_overlap.cpp: scans beside the critical path, and merged.
  void overlap_scans(CUgraph graph, ContextState& cs);
  void log_scans_in_line(const std::vector<CUgraphNode>& nodes, const std::vector<overlap::Edge>& edges,
                         const std::vector<overlap::Node>& model, const std::vector<overlap::ScanPlan>& plans);
  bool move_to_overlap(CUgraph graph, const overlap::ScanPlan& plan, const std::vector<CUgraphNode>& nodes,
                   std::map<std::pair<uint32_t, uint32_t>, CUgraphEdgeData>& edge_data, uint32_t& failed);
  overlap::Node node_model(CUgraphNode node, ContextState& cs);
  overlap::Node scan_node_model(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS& p, ContextState& cs);
  overlap::Node kernel_node_model(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS& p);
  // remember_library_io's reads (minus outputs) and exact outputs of `node`.
  void library_io(CUgraphNode node, std::vector<uint64_t>& inputs, std::vector<overlap::KnownWrite>& exact);
  void use_overlap_grid(CUgraphNode scan, ContextState& cs);
  void warn_if_overlap_stale(CUgraphNode scan, const nanscope_scan_task& next, ContextState& cs);
  struct MergePass;
  void merge_scans(CUgraph graph, ContextState& cs);
  void merge_members(CUgraph graph, ContextState& cs, MergePass& pass, const std::vector<uint32_t>& members,
                     uint32_t merge_id);
  void update_merged_member(CUgraphExec exec, const ScanNode& sn, const nanscope_scan_task& task, ContextState& cs);
  // hooks/graph_pdl.cpp: programmatic edges around the read-only scans beside the chain.
  overlap::EdgeRole edge_role(CUgraphNode node, ContextState& cs);
  void use_programmatic_edges(CUgraph graph, ContextState& cs);

  const Config& cfg_;
  EventLog& log_;
  TaskBuilder& tasks_;
  Contexts& contexts_;
  Allocations& allocs_;
  Counters& counters_;
  ScanFailures& failures_;

  std::mutex mu_;
  std::unordered_map<uint64_t, uint32_t> scans_in_graph_;    // graph id -> scans in it so far
  std::unordered_map<CUgraphNode, ScanNode> scan_after_;     // kernel node -> its scan node
  std::unordered_set<CUgraphNode> scan_nodes_;               // our own scan nodes
  std::unordered_map<CUgraph, uint64_t> graph_ids_;          // captured (capture id) or built by hand
  std::unordered_map<CUgraphExec, uint64_t> exec_graph_ids_;
  std::unordered_map<uint64_t, uint64_t> graph_streams_;     // graph id -> stream of its last launch
  uint64_t next_graph_id_ = uint64_t{1} << 40;               // above any capture id
  std::unordered_set<CUgraphNode> overlapped_;                   // scan nodes moved beside the critical path
  struct LibraryIo {
    std::vector<uint64_t> reads;
    std::vector<overlap::Range> outputs;
    std::vector<overlap::KnownWrite> exact;
  };
  std::unordered_map<CUgraphNode, LibraryIo> library_io_;    // kernel nodes of captured library calls
  // A merged node's task as last set on an exec (an exec's parameters cannot be read back).
  std::map<std::pair<CUgraphExec, CUgraphNode>, nanscope_scan_group> merged_tasks_;
  std::unordered_set<CUgraphExec> updated_execs_;  // took a whole graph's parameters (cuGraphExecUpdate)
  struct PdlEdge {
    CUgraphNode from, to;
    CUgraphEdgeData data;
  };
  std::unordered_map<CUgraph, std::vector<PdlEdge>> pdl_edges_;  // made programmatic until the exec is made

};

}  // namespace nanscope

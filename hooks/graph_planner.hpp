// The graph passes at instantiation, after the scan nodes are in (hooks/graph_instrumenter.*):
// read-only scans moved beside the critical path and merged (hooks/graph_overlap.cpp), and
// programmatic edges around them (hooks/graph_pdl.cpp). It builds the planner's model of the
// driver's graph and applies the plans; the decisions are pure code in src/scan_overlap.*. What it
// must remember (scans moved, merged, edges to undo) goes to the GraphRegistry; it has no lock.
#pragma once
#include <cuda.h>

#include <map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "event_log.hpp"
#include "graph_registry.hpp"
#include "graph_view.hpp"
#include "pass_clock.hpp"
#include "scan_overlap.hpp"
#include "task_builder.hpp"

namespace nanscope {

class GraphPlanner {
 public:
  GraphPlanner(const Config& cfg, EventLog& log, TaskBuilder& tasks, Allocations& allocs, Counters& counters,
               GraphRegistry& registry)
      : cfg_(cfg), log_(log), tasks_(tasks), allocs_(allocs), counters_(counters), registry_(registry) {}

  // Scans beside the critical path, then merged, then programmatic edges around them; under the
  // sentinel tier, the graph's quiet scan nodes (all but the sentinels) go to the registry.
  // `clock` takes a lap after each pass (the debug log's instantiate line).
  void plan(CUgraph graph, ContextState& cs, PassClock& clock);
  // After instantiate or exec update (exit site): the graph's programmatic edges around scan
  // nodes go back to full edges, so the app's own graph reads back as it did.
  void restore_full_edges(CUgraph graph);
  // A scan node beside the chain is about to scan `next`: says once when it reads outside what
  // it was ordered for.
  void warn_if_overlap_stale(CUgraphNode scan, const nanscope_scan_task& next, ContextState& cs);

 private:
  // hooks/graph_overlap.cpp
  void overlap_scans(CUgraph graph, ContextState& cs, const GraphView& view, const std::vector<overlap::Node>& model,
                     std::unordered_set<CUgraphNode>& sentinels, PassClock& clock);
  overlap::Node node_model(CUgraphNode node, ContextState& cs);
  overlap::Node scan_node_model(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS& p, ContextState& cs);
  overlap::Node kernel_node_model(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS& p);
  void log_scans_in_line(const std::vector<CUgraphNode>& nodes, const std::vector<overlap::Edge>& edges,
                         const std::vector<overlap::Node>& model, const std::vector<overlap::ScanPlan>& plans);
  bool move_to_overlap(CUgraph graph, const overlap::ScanPlan& plan, const std::vector<CUgraphNode>& nodes,
                       std::map<std::pair<uint32_t, uint32_t>, CUgraphEdgeData>& edge_data, uint32_t& failed);
  void use_overlap_grid(CUgraphNode scan, ContextState& cs);
  struct MergePass;
  void merge_scans(CUgraph graph, ContextState& cs, std::unordered_set<CUgraphNode>& sentinels);
  void merge_members(CUgraph graph, ContextState& cs, MergePass& pass, const std::vector<uint32_t>& members,
                     uint32_t merge_id);
  // hooks/graph_sentinel.cpp: the sentinel scan nodes on the model (sentinel::sentinel_scans) and
  // those of them the twin may run at the graph's end (`movable`: sentinel::movable_to_end), and
  // after the passes the plain and merged scan nodes that are not sentinels.
  std::unordered_set<CUgraphNode> sentinel_nodes(const GraphView& view, const std::vector<overlap::Node>& model,
                                                 ContextState& cs, std::vector<CUgraphNode>& movable);
  void log_sentinel_bytes(const std::vector<overlap::Node>& model, const std::vector<bool>& sentinel);
  std::vector<CUgraphNode> quiet_scans(CUgraph graph, ContextState& cs, const std::unordered_set<CUgraphNode>& sentinels);
  // hooks/graph_pdl.cpp
  overlap::EdgeRole edge_role(CUgraphNode node, ContextState& cs);
  void use_programmatic_edges(CUgraph graph, ContextState& cs);

  const Config& cfg_;
  EventLog& log_;
  TaskBuilder& tasks_;
  Allocations& allocs_;
  Counters& counters_;
  GraphRegistry& registry_;
};

}  // namespace nanscope

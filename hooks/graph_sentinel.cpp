// The sentinel tier at instantiation (docs/sentinel.md): which scan nodes of a graph stay enabled
// when its exec runs only the sentinels. The choice is sentinel::sentinel_scans on the model the
// overlap planner builds; the GraphInstrumenter disables the others on each exec and enables them
// for an escalated window.
#include <fmt/format.h>

#include <algorithm>

#include "graph_planner.hpp"
#include "sentinel.hpp"

namespace nanscope {


// A scan that is not a plain read-only scan (a watch or rule with rows, a fix, anything else of
// ours) is kept as if it were a watch: it is never disabled (when unsure, scan).
std::unordered_set<CUgraphNode> GraphPlanner::sentinel_nodes(const GraphView& view,
                                                             const std::vector<overlap::Node>& model,
                                                             ContextState& cs, std::vector<CUgraphNode>& movable) {
  std::vector<bool> keep(model.size(), false);
  for (size_t i = 0; i < model.size(); ++i)
    keep[i] = overlap::is_scan(model[i].kind) && !cs.plain_scan(kernel_function_of(view.nodes[i]));
  const std::vector<bool> sentinel = sentinel::sentinel_scans(model, view.edges, keep);
  // The twin may run these at the graph's end (graph_twin.cpp): plain scans nothing after them
  // may overwrite. Chosen here, on the graph as the scans left it, before any is merged.
  const std::vector<bool> to_end = sentinel::movable_to_end(model, view.edges, sentinel);
  std::unordered_set<CUgraphNode> out;
  movable.clear();
  for (size_t i = 0; i < sentinel.size(); ++i) {
    if (sentinel[i]) out.insert(view.nodes[i]);
    if (to_end[i] && cs.plain_scan(kernel_function_of(view.nodes[i]))) movable.push_back(view.nodes[i]);
  }
  if (log_.debug_enabled()) log_sentinel_bytes(model, sentinel);
  return out;
}

// What the sentinels read against every scan, before any is merged (a merged node holding one
// scans all its members): where a replay of the twin spends its scan time.
void GraphPlanner::log_sentinel_bytes(const std::vector<overlap::Node>& model, const std::vector<bool>& sentinel) {
  uint64_t all = 0, kept = 0, largest = 0, scans = 0, sentinels = 0;
  for (size_t i = 0; i < model.size(); ++i) {
    if (!overlap::is_scan(model[i].kind)) continue;
    uint64_t bytes = 0;
    for (const overlap::Range& r : model[i].reads) bytes += r.hi - r.lo;
    ++scans;
    all += bytes;
    if (!sentinel[i]) continue;
    ++sentinels;
    kept += bytes;
    largest = std::max(largest, bytes);
  }
  log_.debug(fmt::format("graph: sentinel tier: {} of {} scans are sentinels, reading {} of {} bytes (largest {})",
                         sentinels, scans, kept, all, largest));
}

// The graph's own nodes only: a scan inside a child graph is never disabled (the exec's node
// handles are the top-level graph's).
std::vector<CUgraphNode> GraphPlanner::quiet_scans(CUgraph graph, ContextState& cs,
                                                   const std::unordered_set<CUgraphNode>& sentinels) {
  GraphView view;
  std::vector<CUgraphNode> quiet;
  if (!read_graph(graph, view)) return quiet;
  uint64_t kept = 0;
  for (CUgraphNode n : view.nodes) {
    const CUfunction f = kernel_function_of(n);
    if (!cs.plain_scan(f) && !cs.merged_scan(f)) continue;
    if (sentinels.count(n)) ++kept;
    else quiet.push_back(n);
  }
  if (log_.debug_enabled())
    log_.debug(fmt::format("graph: sentinel tier: {} scan node(s) stay enabled, {} run only when it escalates", kept,
                           quiet.size()));
  return quiet;
}

}  // namespace nanscope

// Graph instantiation, last pass: programmatic edges (PDL) around the read-only scan nodes that
// run beside the app's kernels (overlap::edge_port in src/scan_overlap.hpp says which edges, and
// why they are safe). Under PyTorch's graph pool a scanned buffer is often written again a kernel
// or two later, so that writer waits for the scan node; with a programmatic edge it waits only
// for the scan's loads (kernels/scan.cu triggers its dependents after them), not for its publish
// and the launch latency after it.
//
// The edges are programmatic in the exec only: at the exit of instantiate (or exec update) the
// app's graph gets its full edges back, so an app that reads its graph's edges without their data
// (which the driver refuses as lossy once one edge is programmatic) sees what it saw before.
#include <fmt/format.h>

#include "graph_planner.hpp"
#include "graph_view.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

bool default_edge(const CUgraphEdgeData& d) {
  return d.from_port == CU_GRAPH_KERNEL_NODE_PORT_DEFAULT && d.to_port == 0 && d.type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT;
}

CUgraphEdgeData programmatic_edge(overlap::EdgePort port) {
  CUgraphEdgeData d{};
  d.from_port = port == overlap::EdgePort::launch_order ? CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER
                                                        : CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  d.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  return d;
}

}  // namespace

overlap::EdgeRole GraphPlanner::edge_role(CUgraphNode node, ContextState& cs) {
  CUgraphNodeType type;
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL ||
      cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
    return overlap::EdgeRole::other;
  if (!p.func || !cs.owns(p.func)) return overlap::EdgeRole::app_kernel;
  // Only the plain and merged scans trigger early (kernels/scan.cu), and only a scan beside the
  // chain has later writers, not readers of its kernel's output, as its app children.
  return (cs.plain_scan(p.func) || cs.merged_scan(p.func)) && registry_.is_overlapped(node) ? overlap::EdgeRole::read_only_scan
                                                                               : overlap::EdgeRole::other;
}

void GraphPlanner::use_programmatic_edges(CUgraph g, ContextState& cs) {
  const GraphPdl mode = cfg_.graph_pdl;
  if (mode == GraphPdl::off) return;
  GraphView view;
  if (!read_graph(g, view) || view.nodes.empty()) return;
  std::vector<overlap::EdgeRole> roles;
  roles.reserve(view.nodes.size());
  bool any = false;
  for (CUgraphNode n : view.nodes) {
    roles.push_back(edge_role(n, cs));
    any |= roles.back() == overlap::EdgeRole::read_only_scan;
  }
  if (!any) return;
  uint64_t changed = 0, failed = 0;
  std::vector<PdlEdge> made;
  for (size_t e = 0; e < view.edges.size(); ++e) {
    const overlap::Edge& edge = view.edges[e];
    const overlap::EdgePort port = overlap::edge_port(mode, roles[edge.from], roles[edge.to]);
    if (port == overlap::EdgePort::full || !default_edge(view.edge_data[e])) continue;  // set already, or the app's
    CUgraphNode from = view.nodes[edge.from], to = view.nodes[edge.to];
    const CUgraphEdgeData full{}, pdl = programmatic_edge(port);
    if (cuGraphRemoveDependencies(g, &from, &to, &full, 1) != CUDA_SUCCESS) {
      ++failed;
      continue;
    }
    if (cuGraphAddDependencies(g, &from, &to, &pdl, 1) == CUDA_SUCCESS) {
      ++changed;
      made.push_back({from, to, pdl});
      continue;
    }
    ++failed;  // the order must hold: the full edge goes back
    if (cuGraphAddDependencies(g, &from, &to, &full, 1) != CUDA_SUCCESS)
      log_.warn("graph: an edge around a scan node could not be restored; that scan may see a later kernel's values");
  }
  counters_.edges_programmatic.fetch_add(changed, std::memory_order_relaxed);
  if (!made.empty()) registry_.add_pdl_edges(g, made);
  if (log_.debug_enabled())
    log_.debug(fmt::format("graph: {} edges around read-only scan nodes made programmatic ({} failed)", changed, failed));
  if (failed)
    warn_once(log_, schema::Once::graph_pdl,
              fmt::format("{} graph edge(s) around scan nodes could not be made programmatic; they keep full "
                          "serialization (slower replays, same findings; NANSCOPE_GRAPH_PDL=off)",
                          failed));
}

void GraphPlanner::restore_full_edges(CUgraph graph) {
  std::vector<PdlEdge> edges = registry_.take_pdl_edges(graph);
  if (edges.empty()) return;
  ToolScope scope;
  const CUgraphEdgeData full{};
  uint64_t failed = 0;
  for (PdlEdge& e : edges) {
    if (cuGraphRemoveDependencies(graph, &e.from, &e.to, &e.data, 1) != CUDA_SUCCESS) continue;  // gone with its node
    failed += cuGraphAddDependencies(graph, &e.from, &e.to, &full, 1) != CUDA_SUCCESS;
  }
  if (failed)
    warn_once(log_, schema::Once::graph_pdl,
              fmt::format("{} programmatic edge(s) of an instantiated graph could not be made full again in the "
                          "app's graph; a later instantiate of it may let a scan see a later kernel's values",
                          failed));
}

}  // namespace nanscope

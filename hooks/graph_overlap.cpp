// Graph instantiation: takes read-only scan nodes off the critical path (src/scan_overlap.hpp
// says which edges and why). Builds the planner's model from the driver's graph, then moves
// the edges one scan at a time.
#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "engine.hpp"
#include "scan_overlap.hpp"

namespace nanscope {

namespace {

// A graph's nodes and its edges between them, as node indices with the edges' data.
struct GraphView {
  std::vector<CUgraphNode> nodes;
  std::vector<overlap::Edge> edges;
  std::vector<CUgraphEdgeData> edge_data;  // of edges[i]
};

bool read_graph(CUgraph g, GraphView& v) {
  size_t count = 0;
  if (cuGraphGetNodes(g, nullptr, &count) != CUDA_SUCCESS) return false;
  v.nodes.resize(count);
  if (count && cuGraphGetNodes(g, v.nodes.data(), &count) != CUDA_SUCCESS) return false;
  size_t nedges = 0;
  if (cuGraphGetEdges(g, nullptr, nullptr, nullptr, &nedges) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> from(nedges), to(nedges);
  std::vector<CUgraphEdgeData> data(nedges);
  if (nedges && cuGraphGetEdges(g, from.data(), to.data(), data.data(), &nedges) != CUDA_SUCCESS) return false;
  std::unordered_map<CUgraphNode, uint32_t> index;
  for (uint32_t i = 0; i < v.nodes.size(); ++i) index.emplace(v.nodes[i], i);
  for (size_t e = 0; e < nedges; ++e) {
    const auto f = index.find(from[e]), t = index.find(to[e]);
    if (f == index.end() || t == index.end()) continue;
    v.edges.push_back({f->second, t->second});
    v.edge_data.push_back(data[e]);
  }
  return true;
}

}  // namespace

// What a scan node reads: from the alloc base of each buffer (a later kernel may write the
// whole allocation through its base) to the buffer's end.
std::vector<overlap::Range> Engine::scan_reads(const nanscope_scan_task& task) {
  std::vector<overlap::Range> reads;
  for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const nanscope_scan_buffer& buf = task.buffers[b];
    const uint64_t end = buf.ptr + buf.elements * dtype_size(static_cast<DType>(buf.dtype));
    const auto range = extent(buf.ptr);
    reads.push_back({range ? std::min<uint64_t>(range->base, buf.ptr) : buf.ptr, end});
  }
  return reads;
}

overlap::Node Engine::overlap_node(CUgraphNode node, ContextState& cs) {
  using overlap::NodeKind;
  overlap::Node m;
  m.kind = NodeKind::opaque;
  CUgraphNodeType type;
  if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) return m;
  switch (type) {
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      m.kind = NodeKind::app;  // writes nothing
      return m;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS p{};
      if (cuGraphMemsetNodeGetParams(node, &p) != CUDA_SUCCESS) return m;
      const uint64_t row = uint64_t{p.width} * p.elementSize;
      m.kind = NodeKind::app;
      m.writes.push_back({p.dst, p.dst + (p.height > 1 ? uint64_t{p.pitch} * (p.height - 1) : 0) + row});
      return m;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      CUDA_MEMCPY3D p{};
      if (cuGraphMemcpyNodeGetParams(node, &p) != CUDA_SUCCESS) return m;
      if (p.dstMemoryType == CU_MEMORYTYPE_HOST || p.dstMemoryType == CU_MEMORYTYPE_ARRAY) {
        m.kind = NodeKind::app;  // writes no device buffer nanscope scans
        return m;
      }
      const auto range = extent(p.dstDevice);
      if (!range) return m;
      m.kind = NodeKind::app;
      m.writes.push_back({range->base, range->base + range->size});  // the whole destination allocation
      return m;
    }
    case CU_GRAPH_NODE_TYPE_KERNEL:
      break;
    default:
      return m;  // host nodes, child graphs, event records, allocations: anything may follow
  }
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) return m;
  if (p.func && cs.owns(p.func)) {
    nanscope_scan_task task;
    if (!cs.read_task(p, task)) return m;
    m.reads = scan_reads(task);
    bool fixes = false;
    for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b)
      fixes |= ((task.row_aware_mask >> b) & 1u) && task.row_specs[b].fix;
    bool moved;
    {
      std::lock_guard lock(graph_mu_);
      moved = detached_.count(node) != 0;
    }
    // A fix writes the buffer; a scan moved before stays where it went (plans are not redone).
    m.kind = fixes || moved ? NodeKind::pinned_scan : NodeKind::scan;
    if (fixes) m.writes = m.reads;
    return m;
  }
  void* handle = p.func ? static_cast<void*>(p.func) : static_cast<void*>(p.kern);
  if (!handle) return m;
  const KernelInfo& k = kernel_info(handle, nullptr);
  if (!k.params_known) return m;  // nothing known about what it writes
  m.kind = NodeKind::app;
  const LaunchArgs a{handle, nullptr, p.kernelParams, p.extra};
  for (uint32_t i = 0; i < k.params.size(); ++i) {
    const char* bytes = param_bytes(a, k.params, i);
    if (!bytes) {
      m.kind = NodeKind::opaque;
      return m;
    }
    for (uint32_t off = 0; off + 8 <= k.params[i].second; off += 8) {
      uint64_t v = 0;
      std::memcpy(&v, bytes + off, sizeof(v));
      if (v && k.may_write_through(i, off)) m.writes.push_back({v, v + 1});  // any word that may be a pointer
    }
  }
  return m;
}

void Engine::overlap_scans(CUgraph g, ContextState& cs) {
  if (!cfg_.graph_overlap) return;
  GraphView view;
  if (!read_graph(g, view) || view.nodes.empty()) return;
  const std::vector<CUgraphNode>& nodes = view.nodes;
  std::vector<overlap::Node> model;
  model.reserve(nodes.size());
  bool any_scan = false;
  for (CUgraphNode n : nodes) {
    model.push_back(overlap_node(n, cs));
    any_scan |= model.back().kind == overlap::NodeKind::scan;
  }
  if (!any_scan) return;
  const std::vector<overlap::Edge>& edges = view.edges;
  std::map<std::pair<uint32_t, uint32_t>, CUgraphEdgeData> edge_data;
  for (size_t e = 0; e < edges.size(); ++e) edge_data[{edges[e].from, edges[e].to}] = view.edge_data[e];

  uint32_t moved_scans = 0, failed = 0;
  for (const overlap::ScanPlan& p : overlap::plan(model, edges)) {
    CUgraphNode scan = nodes[p.scan], parent = nodes[p.parent];
    // Adds first: until the scan's own edges go, the extra edges only repeat an order that
    // already holds. The moved edge keeps its data (e.g. a programmatic edge goes back to the
    // app's kernel it was captured after).
    bool ok = true;
    for (uint32_t c : p.moved) {
      const CUgraphEdgeData d = edge_data[{p.scan, c}];
      ok = ok && cuGraphAddDependencies(g, &parent, &nodes[c], &d, 1) == CUDA_SUCCESS;
    }
    for (uint32_t t : p.ordered) ok = ok && cuGraphAddDependencies(g, &scan, &nodes[t], nullptr, 1) == CUDA_SUCCESS;
    if (!ok) {
      ++failed;
      continue;
    }
    for (const auto* list : {&p.moved, &p.dropped})
      for (uint32_t c : *list) {
        CUgraphEdgeData d = edge_data[{p.scan, c}];
        if (cuGraphRemoveDependencies(g, &scan, &nodes[c], &d, 1) != CUDA_SUCCESS) ++failed;
      }
    ++moved_scans;
    {
      std::lock_guard lock(graph_mu_);
      detached_.insert(scan);
    }
    use_beside_grid(scan, cs);
  }
  overlapped_scans_.fetch_add(moved_scans, std::memory_order_relaxed);
  if (moved_scans && cfg_.graph_merge) merge_scans(g, cs);
  if (log_->debug_enabled())
    log_->debug(fmt::format("graph: {} of its scan nodes run beside the app's kernels ({} edge changes failed)",
                            moved_scans, failed));
  if (failed)
    warn_once(warned_overlap_, "graph_overlap",
              fmt::format("{} scan node(s) of a graph could not be moved off its critical path; they stay in line "
                          "(slower replays, same findings)",
                          failed));
}

// Scans beside the app's kernels cost a launch each on every replay, even when they find little
// to read: the ones that may run together become one node (src/scan_overlap.hpp: group()). The
// merged node waits for all its members' parents and runs before all their children; it
// publishes the members in order, so the NaN origin sees the same sequence of states.
void Engine::merge_scans(CUgraph g, ContextState& cs) {
  GraphView view;
  if (!read_graph(g, view) || view.nodes.size() < 2) return;
  const std::vector<CUgraphNode>& nodes = view.nodes;
  const auto count = static_cast<uint32_t>(nodes.size());
  std::vector<uint32_t> weight(count, 0);
  std::vector<nanscope_scan_task> tasks(count);
  uint32_t mergeable = 0;
  for (uint32_t i = 0; i < count; ++i) {
    CUgraphNodeType type;
    CUDA_KERNEL_NODE_PARAMS p{};
    if (cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL ||
        cuGraphKernelNodeGetParams(nodes[i], &p) != CUDA_SUCCESS || !cs.plain_scan(p.func) ||
        !cs.read_task(p, tasks[i]))
      continue;
    const uint32_t buffers = tasks[i].buffer_count;
    if (buffers == 0 || buffers > NANSCOPE_SCAN_MAX_BUFFERS) continue;
    weight[i] = buffers;
    ++mergeable;
  }
  if (mergeable < 2) return;
  std::vector<std::vector<uint32_t>> parents(count), children(count);
  for (const overlap::Edge& e : view.edges) {
    parents[e.to].push_back(e.from);
    children[e.from].push_back(e.to);
  }
  const auto groups = overlap::group(count, view.edges, weight);
  if (groups.empty()) return;

  // Which kernel node each member follows, so later parameter updates reach the merged node.
  std::unordered_map<CUgraphNode, CUgraphNode> kernel_of;
  {
    std::lock_guard lock(graph_mu_);
    for (const auto& [kernel, sn] : scan_after_) kernel_of[sn.node] = kernel;
  }
  uint64_t folded = 0, failed = 0;
  std::vector<uint32_t> in_group(count, 0);
  std::vector<CUgraphNode> now = nodes;  // a member merged earlier is its merged node now
  uint32_t group_id = 0;
  for (const auto& members : groups) {
    ++group_id;
    nanscope_scan_group task{};
    bool ok = true;
    for (uint32_t m : members) {
      ok = ok && append_launch(task, tasks[m]);
      in_group[m] = group_id;
    }
    if (!ok) continue;
    std::vector<CUgraphNode> deps, outs;
    for (uint32_t m : members) {
      for (uint32_t p : parents[m])
        if (in_group[p] != group_id && std::find(deps.begin(), deps.end(), now[p]) == deps.end()) deps.push_back(now[p]);
      for (uint32_t c : children[m])
        if (in_group[c] != group_id && std::find(outs.begin(), outs.end(), now[c]) == outs.end()) outs.push_back(now[c]);
    }
    void* slot[1];
    const CUDA_KERNEL_NODE_PARAMS params = cs.group_node_params(task, slot);
    CUgraphNode merged = nullptr;
    if (cuGraphAddKernelNode(&merged, g, deps.data(), deps.size(), &params) != CUDA_SUCCESS) {
      ++failed;
      continue;
    }
    for (CUgraphNode c : outs) ok = ok && cuGraphAddDependencies(g, &merged, &c, nullptr, 1) == CUDA_SUCCESS;
    if (!ok) {  // the members stay as they were
      cuGraphDestroyNode(merged);
      ++failed;
      continue;
    }
    // From here the merged node repeats every member's order, so a member that cannot go only
    // scans twice.
    for (uint32_t m : members) {
      failed += cuGraphDestroyNode(nodes[m]) != CUDA_SUCCESS;
      now[m] = merged;
    }
    folded += members.size();
    std::lock_guard lock(graph_mu_);
    scan_nodes_[merged] = true;
    detached_.insert(merged);
    for (uint32_t l = 0; l < members.size(); ++l) {
      const CUgraphNode member = nodes[members[l]];
      scan_nodes_.erase(member);
      detached_.erase(member);
      const auto k = kernel_of.find(member);
      if (k == kernel_of.end()) continue;
      auto sn = scan_after_.find(k->second);
      if (sn == scan_after_.end()) continue;
      sn->second.node = merged;
      sn->second.group_launch = l;
    }
  }
  merged_scans_.fetch_add(folded, std::memory_order_relaxed);
  if (log_->debug_enabled())
    log_->debug(fmt::format("graph: {} scan nodes merged into {} ({} failures)", folded, groups.size(), failed));
  if (failed)
    warn_once(warned_merge_, "graph_merge",
              fmt::format("{} graph scan node merge(s) failed; those scans keep their own nodes (same findings)", failed));
}

// A kernel node whose scan was merged has new parameters: its part of the merged node follows.
void Engine::update_group_member(CUgraphExec exec, const ScanNode& sn, const nanscope_scan_task& task,
                                 ContextState& cs) {
  nanscope_scan_group group{};
  bool known = false, updated = false;
  {
    std::lock_guard lock(graph_mu_);
    auto it = group_tasks_.find({exec, sn.node});
    if (it != group_tasks_.end()) group = it->second, known = true;
    updated = exec && updated_execs_.count(exec);
  }
  if (!known && updated) {
    // The exec holds another graph's version of this node, which nanscope cannot read back: setting
    // the node from this graph's version would undo the update for the other members.
    warn_once(warned_group_after_update_, "graph_update",
              "a merged scan node of an exec changed by cuGraphExecUpdate cannot follow a later kernel-node "
              "parameter update; it keeps scanning what the update gave it (NANSCOPE_GRAPH_MERGE=0 avoids this)");
    return;
  }
  CUDA_KERNEL_NODE_PARAMS current{};
  if (!known && (cuGraphKernelNodeGetParams(sn.node, &current) != CUDA_SUCCESS || !cs.read_group(current, group)))
    return;
  if (!replace_launch(group, sn.group_launch, task))
    warn_once(warned_group_update_, "graph_update",
              "a kernel node of a merged scan now has more outputs than its scan had: the extra ones are not "
              "scanned (NANSCOPE_GRAPH_MERGE=0 keeps one scan node per kernel)");
  void* slot[1];
  const CUDA_KERNEL_NODE_PARAMS p = cs.group_node_params(group, slot);
  const CUresult r = exec ? cuGraphExecKernelNodeSetParams(exec, sn.node, &p) : cuGraphKernelNodeSetParams(sn.node, &p);
  if (r != CUDA_SUCCESS) {
    warn_once(warned_graph_, "graph_update",
              fmt::format("a merged scan node could not follow a kernel node's new parameters ({}); it keeps "
                          "scanning the old buffers",
                          error_name(r)));
    return;
  }
  if (exec) {
    std::lock_guard lock(graph_mu_);
    group_tasks_[{exec, sn.node}] = group;
  }
}

// Off the critical path, a scan takes fewer blocks (beside_policy()).
void Engine::use_beside_grid(CUgraphNode scan, ContextState& cs) {
  CUDA_KERNEL_NODE_PARAMS p{};
  nanscope_scan_task task;
  if (cuGraphKernelNodeGetParams(scan, &p) != CUDA_SUCCESS || !cs.read_task(p, task)) return;
  uint64_t max_bytes = 0;
  for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b)
    max_bytes = std::max<uint64_t>(max_bytes, task.buffers[b].elements * dtype_size(static_cast<DType>(task.buffers[b].dtype)));
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, max_bytes, /*beside=*/true);
  if (sp.func == p.func && sp.gridDimX != p.gridDimX) cuGraphKernelNodeSetParams(scan, &sp);  // on failure it stays as it was
}

// A moved scan was ordered before the later writers of the buffers it read at instantiation.
// New kernel-node parameters that point it at memory outside those buffers cannot reorder an
// instantiated graph: say so once (the scan may then see a later kernel's values).
void Engine::warn_if_overlap_stale(CUgraphNode scan, const nanscope_scan_task& next, ContextState& cs) {
  {
    std::lock_guard lock(graph_mu_);
    if (!detached_.count(scan)) return;
  }
  CUDA_KERNEL_NODE_PARAMS p{};
  nanscope_scan_task before;
  if (cuGraphKernelNodeGetParams(scan, &p) != CUDA_SUCCESS || !cs.read_task(p, before)) return;
  const auto old_reads = scan_reads(before);
  for (const overlap::Range& r : scan_reads(next)) {
    bool covered = false;
    for (const overlap::Range& o : old_reads) covered |= r.lo >= o.lo && r.hi <= o.hi;
    if (covered) continue;
    warn_once(warned_overlap_stale_, "graph_overlap_stale",
              "a kernel node of an instantiated graph now writes a buffer its scan node was not ordered for; "
              "that scan runs beside later kernels and may see their values (NANSCOPE_GRAPH_OVERLAP=0 keeps "
              "scans in line)");
    return;
  }
}

}  // namespace nanscope

// Graph instantiation, second pass: read-only scan nodes move beside the critical path
// (src/scan_overlap.hpp says which edges and why), then the scans beside the app's kernels
// that may run together merge into one node. Builds the planner's model from the driver's
// graph, then moves the edges one scan at a time.
#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "collectors.hpp"
#include "graph_planner.hpp"
#include "graph_view.hpp"
#include "scan_overlap.hpp"

namespace nanscope {

namespace {

// The model of a node that is not a kernel: what it may write, or opaque.
overlap::Node non_kernel_model(CUgraphNode node, CUgraphNodeType type, Allocations& allocs) {
  using overlap::NodeKind;
  overlap::Node m;
  m.kind = NodeKind::opaque;
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
      m.model = overlap::WriteModel::node_params;
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
      const auto range = allocs.extent(p.dstDevice);
      if (!range) return m;
      m.kind = NodeKind::app;
      m.model = overlap::WriteModel::node_params;
      m.writes.push_back({range->base, range->base + range->size});  // the whole destination allocation
      return m;
    }
    default:
      return m;  // host nodes, child graphs, event records, allocations: anything may follow
  }
}

// The graph's longest chain as it stands, our nodes counted as scans (for the debug log).
overlap::Chain graph_chain(CUgraph g, const ContextState& cs) {
  GraphView v;
  if (!read_graph(g, v)) return {};
  std::vector<overlap::NodeKind> kinds(v.nodes.size(), overlap::NodeKind::app);
  for (size_t i = 0; i < v.nodes.size(); ++i) {
    CUgraphNodeType type;
    CUDA_KERNEL_NODE_PARAMS p{};
    if (cuGraphNodeGetType(v.nodes[i], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_KERNEL &&
        cuGraphKernelNodeGetParams(v.nodes[i], &p) == CUDA_SUCCESS && p.func && cs.owns(p.func))
      kinds[i] = overlap::NodeKind::scan;
  }
  return overlap::longest_chain(kinds, v.edges);
}

uint64_t task_max_bytes(const nanscope_scan_task& task) {
  uint64_t max_bytes = 0;
  for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b)
    max_bytes = std::max<uint64_t>(max_bytes, task.buffers[b].elements * dtype_size(static_cast<DType>(task.buffers[b].dtype)));
  return max_bytes;
}

}  // namespace

namespace {

// What a scan node reads: exactly its buffers. A later kernel node that may write through a
// pointer below one is modelled as writing to the end of that pointer's allocation
// (kernel_node_model: overlap::launch_writes), so it still counts as writing what the scan reads.
std::vector<overlap::Range> exact_reads(const nanscope_scan_task& task) {
  std::vector<overlap::Range> reads;
  for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const nanscope_scan_buffer& buf = task.buffers[b];
    reads.push_back({buf.ptr, buf.ptr + buf.elements * dtype_size(static_cast<DType>(buf.dtype))});
  }
  return reads;
}

}  // namespace

overlap::Node GraphPlanner::node_model(CUgraphNode node, ContextState& cs) {
  overlap::Node opaque;
  opaque.kind = overlap::NodeKind::opaque;
  CUgraphNodeType type;
  if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) return opaque;
  if (type != CU_GRAPH_NODE_TYPE_KERNEL) return non_kernel_model(node, type, allocs_);
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) return opaque;
  if (p.func && cs.owns(p.func)) return scan_node_model(node, p, cs);
  return kernel_node_model(node, p);
}

overlap::Node GraphPlanner::scan_node_model(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS& p,
                                                 ContextState& cs) {
  overlap::Node m;
  m.kind = overlap::NodeKind::opaque;
  nanscope_scan_task task;
  if (!cs.read_task(p, task)) return m;
  m.reads = exact_reads(task);
  bool fixes = false;
  for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b)
    fixes |= ((task.row_aware_mask >> b) & 1u) && task.row_specs[b].fix;
  // A fix writes the buffer; a scan moved before stays where it went (plans are not redone).
  m.kind = fixes || registry_.is_overlapped(node) ? overlap::NodeKind::pinned_scan : overlap::NodeKind::scan;
  if (fixes) m.writes = m.reads;
  return m;
}

overlap::Node GraphPlanner::kernel_node_model(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS& p) {
  overlap::Node m;
  m.kind = overlap::NodeKind::opaque;
  void* handle = p.func ? static_cast<void*>(p.func) : static_cast<void*>(p.kern);
  if (!handle) return m;
  const KernelInfo& k = tasks_.kernel_info(handle, nullptr);
  if (!k.params_known) return m;  // nothing known about what it writes
  const LaunchArgs args = node_launch_args(handle, p);
  std::vector<uint64_t> words;
  if (!pointer_words(k, args, words)) return m;
  // A decoder's exact writes, and the inputs it names (read, never written through).
  std::vector<overlap::KnownWrite> exact;
  std::vector<uint64_t> inputs;
  registry_.library_io(node, inputs, exact);  // a library call's kernel: what the call only read, and its output
  const bool decoded = decoded_io(k, args, allocs_, exact, inputs) || !exact.empty();
  m.kind = overlap::NodeKind::app;
  if (decoded) {
    m.model = overlap::WriteModel::decoded;
    for (const overlap::KnownWrite& w : exact) m.exact_writes += w.ptr && w.bytes ? 1 : 0;
  }
  m.writes = overlap::launch_writes(words, exact, inputs, [this](uint64_t v) -> uint64_t {
    const auto a = allocs_.allocation(v);
    return a ? a->base + a->size : 0;
  });
  return m;
}

// Debug: which kernels' scans the planner leaves in line (the kernel before, the node after, and
// why: overlap::in_line_reason), most frequent first.
void GraphPlanner::log_scans_in_line(const std::vector<CUgraphNode>& nodes, const std::vector<overlap::Edge>& edges,
                                          const std::vector<overlap::Node>& model,
                                          const std::vector<overlap::ScanPlan>& plans) {
  std::vector<bool> planned(nodes.size(), false);
  for (const overlap::ScanPlan& p : plans) planned[p.scan] = true;
  auto name = [&](uint32_t i) -> std::string {
    CUgraphNodeType type;
    CUDA_KERNEL_NODE_PARAMS p{};
    if (cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL ||
        cuGraphKernelNodeGetParams(nodes[i], &p) != CUDA_SUCCESS)
      return fmt::format("node type {}", static_cast<int>(type));
    void* handle = p.func ? static_cast<void*>(p.func) : static_cast<void*>(p.kern);
    if (model[i].kind == overlap::NodeKind::scan || model[i].kind == overlap::NodeKind::pinned_scan) return "scan";
    return tasks_.kernel_info(handle, nullptr).demangled.substr(0, 160);
  };
  const auto top = overlap::in_line_summary(model, edges, planned, name, 12);
  for (size_t i = 0; i < top.size(); ++i)
    log_.debug(fmt::format("graph: {} scan(s) left in line after {}", top[i].first, top[i].second));
}

void GraphPlanner::plan(CUgraph g, ContextState& cs, PassClock& clock) {
  const bool sentinel_tier = cfg_.tier == Tier::sentinel;
  if (!cfg_.graph_overlap && !sentinel_tier) return;
  GraphView view;
  if (!read_graph(g, view) || view.nodes.empty()) return;
  std::vector<overlap::Node> model;
  model.reserve(view.nodes.size());
  bool any_scan = false;
  for (CUgraphNode n : view.nodes) {
    model.push_back(node_model(n, cs));
    any_scan |= model.back().kind == overlap::NodeKind::scan;
  }
  clock.lap("model");
  // The sentinels are chosen on the graph as the scans left it (each scan in line after its
  // kernel), before they move; a merged node holding one is one (merge_members).
  std::unordered_set<CUgraphNode> sentinels;
  std::vector<CUgraphNode> movable;
  if (sentinel_tier) {
    sentinels = sentinel_nodes(view, model, cs, movable);
    clock.lap("sentinels");
  }
  if (cfg_.graph_overlap && any_scan) overlap_scans(g, cs, view, model, sentinels, clock);
  if (sentinel_tier) {
    registry_.set_tier_nodes(g, {quiet_scans(g, cs, sentinels), std::move(movable)});
    clock.lap("quiet scans");
  }
}

void GraphPlanner::overlap_scans(CUgraph g, ContextState& cs, const GraphView& view,
                                 const std::vector<overlap::Node>& model, std::unordered_set<CUgraphNode>& sentinels,
                                 PassClock& clock) {
  const std::vector<CUgraphNode>& nodes = view.nodes;
  std::map<std::pair<uint32_t, uint32_t>, CUgraphEdgeData> edge_data;
  for (size_t e = 0; e < view.edges.size(); ++e) edge_data[{view.edges[e].from, view.edges[e].to}] = view.edge_data[e];

  uint32_t moved_scans = 0, failed = 0;
  overlap::Chain before;
  if (log_.debug_enabled()) {
    std::vector<overlap::NodeKind> kinds;
    for (const overlap::Node& n : model) kinds.push_back(n.kind);
    before = overlap::longest_chain(kinds, view.edges);
  }
  const std::vector<overlap::ScanPlan> plans = overlap::plan(model, view.edges);
  clock.lap("overlap plan");
  if (log_.debug_enabled()) {
    log_scans_in_line(view.nodes, view.edges, model, plans);
    clock.lap("debug lines");
  }
  for (const overlap::ScanPlan& p : plans) {
    if (!move_to_overlap(g, p, nodes, edge_data, failed)) continue;
    ++moved_scans;
    use_overlap_grid(nodes[p.scan], cs);
  }
  clock.lap("overlap edges");
  counters_.scans_overlapped.fetch_add(moved_scans, std::memory_order_relaxed);
  if (moved_scans && cfg_.graph_merge) {
    merge_scans(g, cs, sentinels);
    clock.lap("merge");
  }
  if (moved_scans) {
    use_programmatic_edges(g, cs);
    clock.lap("programmatic edges");
  }
  if (log_.debug_enabled()) {
    const overlap::Chain after = graph_chain(g, cs);
    log_.debug(fmt::format("graph: {} nodes, {} of its scan nodes run beside the app's kernels ({} edge changes "
                           "failed); longest chain {} nodes ({} scans) before, {} nodes ({} scans) after",
                           nodes.size(), moved_scans, failed, before.nodes, before.scans, after.nodes, after.scans));
  }
  if (failed)
    warn_once(log_, schema::Once::graph_overlap,
              fmt::format("{} scan node(s) of a graph could not be moved off its critical path; they stay in line "
                          "(slower replays, same findings)",
                          failed));
}

// Moves the edges of one scan as `p` plans; false when an edge could not be added.
bool GraphPlanner::move_to_overlap(CUgraph g, const overlap::ScanPlan& p, const std::vector<CUgraphNode>& nodes,
                                    std::map<std::pair<uint32_t, uint32_t>, CUgraphEdgeData>& edge_data,
                                    uint32_t& failed) {
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
    return false;
  }
  for (const auto* list : {&p.moved, &p.dropped})
    for (uint32_t c : *list) {
      CUgraphEdgeData d = edge_data[{p.scan, c}];
      if (cuGraphRemoveDependencies(g, &scan, &nodes[c], &d, 1) != CUDA_SUCCESS) ++failed;
    }
  registry_.mark_overlapped(scan);
  return true;
}

// Off the critical path, a scan takes fewer blocks (overlap_policy()).
void GraphPlanner::use_overlap_grid(CUgraphNode scan, ContextState& cs) {
  CUDA_KERNEL_NODE_PARAMS p{};
  nanscope_scan_task task;
  if (cuGraphKernelNodeGetParams(scan, &p) != CUDA_SUCCESS || !cs.read_task(p, task)) return;
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, task_max_bytes(task), /*overlapped=*/true);
  if (sp.func == p.func && sp.gridDimX != p.gridDimX) cuGraphKernelNodeSetParams(scan, &sp);  // on failure it stays as it was
}

// A scan beside the critical path was ordered before the later writers of the buffers it read
// at instantiation. New kernel-node parameters that point it at memory outside those buffers
// cannot reorder an instantiated graph: say so once (the scan may then see a later kernel's values).
void GraphPlanner::warn_if_overlap_stale(CUgraphNode scan, const nanscope_scan_task& next, ContextState& cs) {
  if (!registry_.is_overlapped(scan)) return;
  CUDA_KERNEL_NODE_PARAMS p{};
  nanscope_scan_task before;
  if (cuGraphKernelNodeGetParams(scan, &p) != CUDA_SUCCESS || !cs.read_task(p, before)) return;
  const auto old_reads = exact_reads(before);
  for (const overlap::Range& r : exact_reads(next)) {
    bool covered = false;
    for (const overlap::Range& o : old_reads) covered |= r.lo >= o.lo && r.hi <= o.hi;
    if (covered) continue;
    warn_once(log_, schema::Once::graph_overlap_stale,
              "a kernel node of an instantiated graph now writes a buffer its scan node was not ordered for; "
              "that scan runs beside later kernels and may see their values (NANSCOPE_GRAPH_OVERLAP=0 keeps "
              "scans in line)");
    return;
  }
}

// --- merged scan nodes ------------------------------------------------------------------------
// Scans beside the app's kernels cost a launch each on every replay, even when they find little
// to read: the ones that may run together become one node (src/scan_overlap.hpp: group()). The
// merged node waits for all its members' parents and runs before all their children; it
// publishes the members in order, so the NaN origin sees the same sequence of states.

// One merge pass over a graph: the plain scans' tasks, the edges, and what merged so far.
struct GraphPlanner::MergePass {
  GraphView view;
  std::vector<nanscope_scan_task> tasks;  // of the plain scans
  std::vector<uint32_t> weight;           // buffers of each plain scan; 0: not mergeable
  std::vector<std::vector<uint32_t>> parents, children;
  std::vector<uint32_t> in_merge;         // the merge a node went into (1-based), or 0
  std::vector<CUgraphNode> now;           // a member merged earlier is its merged node now
  std::unordered_map<CUgraphNode, CUgraphNode> kernel_of;  // scan node -> the kernel node it follows
  std::unordered_set<CUgraphNode>* sentinels = nullptr;      // a merged node holding one is one
  uint64_t folded = 0, failed = 0;
};

namespace {

// Reads every plain scan's task; returns how many may merge.
uint32_t read_plain_scans(const std::vector<CUgraphNode>& nodes, ContextState& cs,
                          std::vector<nanscope_scan_task>& tasks, std::vector<uint32_t>& weight) {
  uint32_t mergeable = 0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
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
  return mergeable;
}

// A merged node holding a sentinel member is a sentinel (the sentinel tier keeps it enabled).
void carry_sentinel(std::unordered_set<CUgraphNode>& sentinels, const std::vector<CUgraphNode>& members,
                    CUgraphNode merged) {
  bool any = false;
  for (CUgraphNode m : members) any = sentinels.erase(m) != 0 || any;
  if (any) sentinels.insert(merged);
}

void add_unique(std::vector<CUgraphNode>& list, CUgraphNode n) {
  if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
}

}  // namespace

void GraphPlanner::merge_scans(CUgraph g, ContextState& cs, std::unordered_set<CUgraphNode>& sentinels) {
  MergePass pass;
  pass.sentinels = &sentinels;
  if (!read_graph(g, pass.view) || pass.view.nodes.size() < 2) return;
  const auto count = static_cast<uint32_t>(pass.view.nodes.size());
  pass.tasks.resize(count);
  pass.weight.assign(count, 0);
  if (read_plain_scans(pass.view.nodes, cs, pass.tasks, pass.weight) < 2) return;
  pass.parents.resize(count);
  pass.children.resize(count);
  for (const overlap::Edge& e : pass.view.edges) {
    pass.parents[e.to].push_back(e.from);
    pass.children[e.from].push_back(e.to);
  }
  const auto merges = overlap::group(count, pass.view.edges, pass.weight);
  if (merges.empty()) return;
  pass.kernel_of = registry_.kernels_of_scans();
  pass.in_merge.assign(count, 0);
  pass.now = pass.view.nodes;
  uint32_t merge_id = 0;
  for (const auto& members : merges) merge_members(g, cs, pass, members, ++merge_id);
  counters_.scans_merged.fetch_add(pass.folded, std::memory_order_relaxed);
  if (log_.debug_enabled())
    log_.debug(fmt::format("graph: {} scan nodes merged into {} ({} failures)", pass.folded, merges.size(), pass.failed));
  if (pass.failed)
    warn_once(log_, schema::Once::graph_merge,
              fmt::format("{} graph scan node merge(s) failed; those scans keep their own nodes (same findings)",
                          pass.failed));
}

// Replaces the scan nodes `members` by one merged node with their parents and children.
void GraphPlanner::merge_members(CUgraph g, ContextState& cs, MergePass& pass,
                                      const std::vector<uint32_t>& members, uint32_t merge_id) {
  nanscope_scan_group task{};
  bool ok = true;
  for (uint32_t m : members) {
    ok = ok && append_launch(task, pass.tasks[m]);
    pass.in_merge[m] = merge_id;
  }
  if (!ok) return;
  std::vector<CUgraphNode> deps, outs;
  for (uint32_t m : members) {
    for (uint32_t p : pass.parents[m])
      if (pass.in_merge[p] != merge_id) add_unique(deps, pass.now[p]);
    for (uint32_t c : pass.children[m])
      if (pass.in_merge[c] != merge_id) add_unique(outs, pass.now[c]);
  }
  void* slot[1];
  const CUDA_KERNEL_NODE_PARAMS params = cs.merged_node_params(task, slot);
  CUgraphNode merged = nullptr;
  if (cuGraphAddKernelNode(&merged, g, deps.data(), deps.size(), &params) != CUDA_SUCCESS) {
    ++pass.failed;
    return;
  }
  for (CUgraphNode c : outs) ok = ok && cuGraphAddDependencies(g, &merged, &c, nullptr, 1) == CUDA_SUCCESS;
  if (!ok) {  // the members stay as they were
    cuGraphDestroyNode(merged);
    ++pass.failed;
    return;
  }
  // From here the merged node repeats every member's order, so a member that cannot go only
  // scans twice.
  for (uint32_t m : members) {
    pass.failed += cuGraphDestroyNode(pass.view.nodes[m]) != CUDA_SUCCESS;
    pass.now[m] = merged;
  }
  pass.folded += members.size();
  std::vector<CUgraphNode> member_nodes;
  for (uint32_t m : members) member_nodes.push_back(pass.view.nodes[m]);
  carry_sentinel(*pass.sentinels, member_nodes, merged);
  registry_.on_merged(merged, member_nodes, pass.kernel_of);
}

}  // namespace nanscope

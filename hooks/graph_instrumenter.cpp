#include "graph_instrumenter.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include <fmt/format.h>

#include "tool_scope.hpp"

namespace nanscope {

void GraphInstrumenter::on_end_capture(CUstream stream) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  if (cuStreamGetCaptureInfo(stream, &st, &id, &graph, nullptr, nullptr, nullptr) != CUDA_SUCCESS || !graph) return;
  registry_.set_graph_id(graph, id);  // findings in it already carry the capture id
}

void GraphInstrumenter::on_graph_instantiate(CUgraph graph) {
  if (!graph) return;
  ToolScope scope;
  ContextState* cs = contexts_.current();
  if (!cs) return;
  PassClock clock(log_.debug_enabled());
  NodeTally tally{};
  const uint64_t graph_id = registry_.graph_id_for(graph);
  instrument_graph(graph, graph_id, *cs, 0, tally);
  if (log_.debug_enabled())
    log_.debug(fmt::format("graph {}: {} kernel nodes: {} scanned, {} our own scans, {} not looked at (excluded or "
                           "not inspected), {} already followed by a scan, {} with nothing to scan, {} failed, {} "
                           "library kernels (cuBLAS, cuDNN), {} refused by their decoder",
                           graph_id, std::accumulate(tally.begin(), tally.end(), size_t{0}), tally[0], tally[1],
                           tally[2], tally[3], tally[4], tally[5], tally[6], tally[7]));
  clock.lap("scan nodes");
  planner_.plan(graph, *cs, clock);
  if (clock.on()) log_.debug("graph: instantiate passes: " + clock.summary());
}

void GraphInstrumenter::instrument_graph(CUgraph g, uint64_t graph_id, ContextState& cs, int depth,
                                         NodeTally& tally, bool in_body) {
  size_t count = 0;
  if (cuGraphGetNodes(g, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
  std::vector<CUgraphNode> nodes(count);
  if (cuGraphGetNodes(g, nodes.data(), &count) != CUDA_SUCCESS) return;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && depth < 16) {
      CUgraph child = nullptr;
      if (cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS)
        instrument_graph(child, graph_id, cs, depth + 1, tally, in_body);
      continue;
    }
    if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL && depth < 16) {
      // A body's kernels run each iteration: a scan node beside each runs with it.
      const std::vector<CUgraph> bodies = registry_.bodies_of(node);
      if (bodies.empty()) note_conditional(graph_id);
      for (CUgraph body : bodies) instrument_graph(body, graph_id, cs, depth + 1, tally, true);
      continue;
    }
    if (type == CU_GRAPH_NODE_TYPE_MEMSET && !registry_.known_node(node)) {
      scan_memset_node(g, node, graph_id, cs, in_body);  // not a kernel node: not in the tally
      continue;
    }
    if (type != CU_GRAPH_NODE_TYPE_KERNEL || registry_.known_node(node)) continue;
    ++tally[static_cast<size_t>(scan_kernel_node(g, node, graph_id, cs, in_body))];
  }
}

// A conditional node whose bodies nanscope did not see made (cuGraphAddNode's phGraph_out is the
// only way the driver, CUDA 13.0, gives them out): a node cloned with its graph (a child graph,
// cuGraphClone), or one past the registry's bound. Its bodies' kernels run without scans. Said
// once, so a clean run is not taken for a looked-at one.
void GraphInstrumenter::note_conditional(uint64_t graph_id) {
  warn_once(log_, schema::Once::graph_conditional,
            "a CUDA graph holds a conditional node (a while loop or a branch) whose bodies nanscope did not see "
            "made (a cloned graph's): the kernels in its bodies are not looked at");
  if (log_.debug_enabled()) log_.debug(fmt::format("graph {}: a conditional node: its bodies are not looked at", graph_id));
}

namespace {

// A scan captured right after `node`, that the capture did not let us record.
bool followed_by_scan(const std::vector<CUgraphNode>& dependents, const ContextState& cs) {
  bool scanned = false;
  for (CUgraphNode d : dependents) {
    CUDA_KERNEL_NODE_PARAMS dp{};
    CUgraphNodeType dt;
    scanned |= cuGraphNodeGetType(d, &dt) == CUDA_SUCCESS && dt == CU_GRAPH_NODE_TYPE_KERNEL &&
               cuGraphKernelNodeGetParams(d, &dp) == CUDA_SUCCESS && dp.func && cs.owns(dp.func);
  }
  return scanned;
}

}  // namespace

// A node its decoder refused: listed once, as an eager launch's refusal is (list_refusal), and
// said at debug level (a graph-only kernel has no eager launch count to show it by).
void GraphInstrumenter::note_refused_node(const KernelInfo& k, const LaunchArgs& args, const LaunchPlan& plan,
                                          uint64_t graph_id) {
  const std::string why = list_refusal(counters_.coverage, k, args, allocs_, plan.refused);
  if (!why.empty() && log_.debug_enabled())
    log_.debug(fmt::format("graph {}: kernel node {} refused: {}", graph_id, k.demangled, why));
}

// Adds the scan of kernel node `node` right after it; the node's dependents wait for the scan.
GraphInstrumenter::NodeScan GraphInstrumenter::scan_kernel_node(CUgraph g, CUgraphNode node, uint64_t graph_id,
                                                                ContextState& cs, bool in_body) {
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) return NodeScan::failed;
  if (p.func && cs.owns(p.func)) return NodeScan::own_scan;  // a scan captured from a stream
  void* handle = p.func ? static_cast<void*>(p.func) : static_cast<void*>(p.kern);
  if (!handle) return NodeScan::failed;
  const KernelInfo& k = tasks_.kernel_info(handle, nullptr);
  if (!tasks_.worth_a_look(k)) return k.library ? NodeScan::library : NodeScan::not_looked_at;
  NodeDependents deps;
  if (!dependents_of(node, deps)) return NodeScan::failed;
  if (followed_by_scan(deps.nodes, cs)) return NodeScan::already_scanned;
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  const LaunchArgs args_of_node = node_launch_args(handle, p);
  LaunchPlan plan;
  // A graph node's inputs get no initial scan: nothing here would submit one (and one added as a
  // node would rerun every replay), so none is claimed; an input left unjudged stays claimable
  // by its next eager reader.
  plan.capture = LaunchPlan::Capture::yes;
  if (!tasks_.build(k, args_of_node, cs, task, max_bytes, &plan)) {
    if (plan.inspection != Inspection::mismatch) return NodeScan::nothing_to_scan;
    note_refused_node(k, args_of_node, plan, graph_id);
    return NodeScan::refused;
  }
  return add_scan_after(g, node, deps, task, max_bytes, graph_id, cs, in_body);
}

// With the edges' data: asked without it, a node with a programmatic (PDL) edge is a lossy query
// (CUDA_ERROR_LOSSY_QUERY), as every node XLA marks xla.pdl_launch is in its command buffers.
bool GraphInstrumenter::dependents_of(CUgraphNode node, NodeDependents& out) {
  size_t ndeps = 0;
  cuGraphNodeGetDependentNodes(node, nullptr, nullptr, &ndeps);
  out.nodes.resize(ndeps);
  out.edges.resize(ndeps);
  if (!ndeps) return true;
  const CUresult r = cuGraphNodeGetDependentNodes(node, out.nodes.data(), out.edges.data(), &ndeps);
  if (r != CUDA_SUCCESS) failures_.report(r, true);  // counted as dropped and said: the node is not scanned
  return r == CUDA_SUCCESS;
}

// Adds the scan of `task` right after `node`; the node's dependents wait for the scan.
GraphInstrumenter::NodeScan GraphInstrumenter::add_scan_after(CUgraph g, CUgraphNode node, const NodeDependents& deps,
                                                              nanscope_scan_task& task, uint64_t max_bytes,
                                                              uint64_t graph_id, ContextState& cs, bool in_body) {
  task.graph_id = graph_id;
  task.graph_node = registry_.number_scan(graph_id);
  if (!cs.prepare_task(task, /*captured=*/true)) {
    failures_.report(CUDA_ERROR_OUT_OF_MEMORY, true);
    return NodeScan::failed;
  }
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, max_bytes);
  CUgraphNode scan = nullptr;
  const CUresult r = cuGraphAddKernelNode(&scan, g, &node, 1, &sp);
  if (r != CUDA_SUCCESS) {
    failures_.report(r, true);
    return NodeScan::failed;
  }
  // The node's dependents now wait for the scan (and, through it, for the node), over full
  // edges: a programmatic edge from the kernel is removed with its data, and its dependent then
  // starts after the scan has read what the kernel wrote.
  for (size_t i = 0; i < deps.nodes.size(); ++i)
    if (cuGraphRemoveDependencies(g, &node, &deps.nodes[i], &deps.edges[i], 1) == CUDA_SUCCESS)
      cuGraphAddDependencies(g, &scan, &deps.nodes[i], nullptr, 1);
  counters_.scans.fetch_add(1, std::memory_order_relaxed);
  registry_.add_scan(node, {scan, reinterpret_cast<CUdeviceptr>(task.accum), task.graph_id, task.graph_node});
  if (in_body) registry_.note_body_scan(task.graph_id, task.graph_node);
  return NodeScan::scanned;
}

void GraphInstrumenter::on_graph_instantiated(CUgraphExec exec, CUgraph graph) {
  registry_.on_instantiated(exec, graph);
  if (cfg_.tier != Tier::sentinel) return;
  PassClock clock(log_.debug_enabled());
  if (!start_twin_tier(exec, graph)) start_tier(exec, graph);
  clock.lap("sentinel tier start");
  if (clock.on()) log_.debug("graph: after instantiate: " + clock.summary());
}

void GraphInstrumenter::on_graph_copied(CUgraph graph) {
  PassClock clock(log_.debug_enabled());
  planner_.restore_full_edges(graph);
  clock.lap("full edges restored");
  if (clock.on()) log_.debug("graph: after instantiate: " + clock.summary());
}

void GraphInstrumenter::on_kernel_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p,
                                              bool v1) {
  if (!p) return;
  // The twin of an exec whose nodes take new parameters would run the old ones: the exec leaves
  // the tier and runs every scan from now on.
  if (exec && cfg_.tier == Tier::sentinel) end_tier(exec, true);
  const std::optional<ScanNode> found = registry_.scan_after(node);
  if (!found) return;
  const ScanNode& sn = *found;
  ToolScope scope;
  ContextState* cs = contexts_.current();
  if (!cs) return;
  void* handle = p->func ? static_cast<void*>(p->func) : v1 ? nullptr : static_cast<void*>(p->kern);
  if (!handle) return;
  const KernelInfo& k = tasks_.kernel_info(handle, nullptr);
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  // New parameters with nothing to scan leave an empty scan: the node must stay.
  if (tasks_.worth_a_look(k))
    tasks_.build(k, node_launch_args(handle, *p), *cs, task, max_bytes);
  task.kernel_id = k.id;
  task.graph_id = sn.graph_id;
  task.graph_node = sn.graph_node;
  cs->prepare_task(task, true, sn.accum);
  planner_.warn_if_overlap_stale(sn.node, task, *cs);
  if (sn.merge_launch != ScanNode::kAlone) {
    update_merged_member(exec, sn, task, *cs);
    return;
  }
  set_scan_params(exec, sn, task, max_bytes, *cs);
}

void GraphInstrumenter::set_scan_params(CUgraphExec exec, const ScanNode& sn, nanscope_scan_task& task,
                                        uint64_t max_bytes, ContextState& cs) {
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, max_bytes, registry_.is_overlapped(sn.node));
  const CUresult r = exec ? cuGraphExecKernelNodeSetParams(exec, sn.node, &sp) : cuGraphKernelNodeSetParams(sn.node, &sp);
  if (r != CUDA_SUCCESS)
    warn_once(log_, schema::Once::graph_update,
              fmt::format("a scan node could not follow a kernel node's new parameters ({}); it keeps scanning "
                          "the old buffers",
                          error_name(r)));
}

void GraphInstrumenter::on_graph_launch(CUgraphExec exec, CUstream stream) {
  registry_.on_launch(exec, reinterpret_cast<uint64_t>(stream));
  if (cfg_.tier == Tier::sentinel) note_escalated_launch(exec, stream);
}

void GraphInstrumenter::on_graph_node_destroy(CUgraphNode node) { registry_.forget_node(node); }

void GraphInstrumenter::on_node_added(CUpti_CallbackId cbid, const void* params) {
  AddedConditional added = added_conditional(cbid, params);
  if (added.node) registry_.remember_bodies(added.node, std::move(added.bodies));
}

void GraphInstrumenter::on_graph_destroy(CUgraph graph) { registry_.forget_graph(graph); }

void GraphInstrumenter::on_graph_exec_update(CUgraphExec exec) {
  if (!exec) return;
  if (cfg_.tier == Tier::sentinel) end_tier(exec, true);  // it takes another graph's nodes: every scan runs
  registry_.on_exec_update(exec);
}

void GraphInstrumenter::on_graph_exec_destroy(CUgraphExec exec) {
  if (cfg_.tier == Tier::sentinel) end_tier(exec, false);
  registry_.forget_exec(exec);
}

// A kernel node whose scan was merged has new parameters: its part of the merged node follows.
void GraphInstrumenter::update_merged_member(CUgraphExec exec, const ScanNode& sn, const nanscope_scan_task& task,
                                             ContextState& cs) {
  nanscope_scan_group merged{};
  const GraphRegistry::MergedTask last = registry_.merged_task(exec, sn.node);
  const bool known = last.task.has_value(), updated = last.exec_updated;
  if (known) merged = *last.task;
  if (!known && updated) {
    // The exec holds another graph's version of this node, which nanscope cannot read back: setting
    // the node from this graph's version would undo the update for the other members.
    warn_once(log_, schema::Once::graph_update,
              "a merged scan node of an exec changed by cuGraphExecUpdate cannot follow a later kernel-node "
              "parameter update; it keeps scanning what the update gave it (NANSCOPE_GRAPH_MERGE=0 avoids this)");
    return;
  }
  CUDA_KERNEL_NODE_PARAMS current{};
  if (!known && (cuGraphKernelNodeGetParams(sn.node, &current) != CUDA_SUCCESS || !cs.read_merged(current, merged)))
    return;
  if (!replace_launch(merged, sn.merge_launch, task))
    warn_once(log_, schema::Once::graph_update,
              "a kernel node of a merged scan now has more outputs than its scan had: the extra ones are not "
              "scanned (NANSCOPE_GRAPH_MERGE=0 keeps one scan node per kernel)");
  void* slot[1];
  const CUDA_KERNEL_NODE_PARAMS p = cs.merged_node_params(merged, slot);
  const CUresult r = exec ? cuGraphExecKernelNodeSetParams(exec, sn.node, &p) : cuGraphKernelNodeSetParams(sn.node, &p);
  if (r != CUDA_SUCCESS) {
    warn_once(log_, schema::Once::graph_update,
              fmt::format("a merged scan node could not follow a kernel node's new parameters ({}); it keeps "
                          "scanning the old buffers",
                          error_name(r)));
    return;
  }
  if (exec) registry_.set_merged_task(exec, sn.node, merged);
}

// What a held eager scan reads: from the allocation base of each buffer (a later kernel may
// write the whole allocation through its base: eager launches are modelled by their pointer
// words alone) to the buffer's end.
std::vector<overlap::Range> GraphInstrumenter::scan_reads(const nanscope_scan_task& task) {
  std::vector<overlap::Range> reads;
  for (uint32_t b = 0; b < task.buffer_count && b < NANSCOPE_SCAN_MAX_BUFFERS; ++b) {
    const nanscope_scan_buffer& buf = task.buffers[b];
    const uint64_t end = buf.ptr + buf.elements * dtype_size(static_cast<DType>(buf.dtype));
    const auto range = allocs_.extent(buf.ptr);
    reads.push_back({range ? std::min<uint64_t>(range->base, buf.ptr) : buf.ptr, end});
  }
  return reads;
}

}  // namespace nanscope

#include "graph_instrumenter.hpp"

#include <fmt/format.h>

#include "tool_scope.hpp"

namespace nanscope {

uint32_t GraphInstrumenter::number_scan(uint64_t graph_id) {
  std::lock_guard lock(mu_);
  return scans_in_graph_[graph_id]++;
}

void GraphInstrumenter::remember_scan(CUgraphNode app_node, const ScanNode& scan) {
  std::lock_guard lock(mu_);
  scan_after_[app_node] = scan;
}

void GraphInstrumenter::remember_library_io(const std::vector<CUgraphNode>& nodes, const std::vector<uint64_t>& reads,
                                            overlap::Range output, bool exact) {
  constexpr size_t kMaxNodes = size_t{1} << 16;  // beyond it, nodes keep the plain model (all words written)
  std::lock_guard lock(mu_);
  for (CUgraphNode n : nodes) {
    if (library_io_.size() >= kMaxNodes && !library_io_.count(n)) return;
    LibraryIo& io = library_io_[n];
    io.reads.insert(io.reads.end(), reads.begin(), reads.end());
    io.outputs.push_back(output);
    if (exact) io.exact.push_back({output.lo, output.hi - output.lo});
  }
}

void GraphInstrumenter::library_io(CUgraphNode node, std::vector<uint64_t>& inputs,
                                   std::vector<overlap::KnownWrite>& exact) {
  std::lock_guard lock(mu_);
  const auto it = library_io_.find(node);
  if (it == library_io_.end()) return;
  for (uint64_t r : it->second.reads) {
    bool written = false;  // an in-place call's input is its output too
    for (const overlap::Range& o : it->second.outputs) written |= r >= o.lo && r < o.hi;
    if (!written) inputs.push_back(r);
  }
  exact.insert(exact.end(), it->second.exact.begin(), it->second.exact.end());
}

std::optional<uint64_t> GraphInstrumenter::stream_of(uint64_t graph_id) {
  std::lock_guard lock(mu_);
  if (auto it = graph_streams_.find(graph_id); it != graph_streams_.end()) return it->second;
  return std::nullopt;
}

uint64_t GraphInstrumenter::graph_id_for(CUgraph graph) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = graph_ids_.try_emplace(graph, 0);
  if (fresh) it->second = next_graph_id_++;
  return it->second;
}

void GraphInstrumenter::on_end_capture(CUstream stream) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  if (cuStreamGetCaptureInfo(stream, &st, &id, &graph, nullptr, nullptr, nullptr) != CUDA_SUCCESS || !graph) return;
  std::lock_guard lock(mu_);
  graph_ids_[graph] = id;  // findings in it already carry the capture id
}

void GraphInstrumenter::on_graph_instantiate(CUgraph graph) {
  if (!graph) return;
  ToolScope scope;
  ContextState* cs = contexts_.current();
  if (!cs) return;
  instrument_graph(graph, graph_id_for(graph), *cs, 0);
  overlap_scans(graph, *cs);
}

void GraphInstrumenter::instrument_graph(CUgraph g, uint64_t graph_id, ContextState& cs, int depth) {
  size_t count = 0;
  if (cuGraphGetNodes(g, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
  std::vector<CUgraphNode> nodes(count);
  if (cuGraphGetNodes(g, nodes.data(), &count) != CUDA_SUCCESS) return;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && depth < 16) {
      CUgraph child = nullptr;
      if (cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS) instrument_graph(child, graph_id, cs, depth + 1);
      continue;
    }
    if (type == CU_GRAPH_NODE_TYPE_KERNEL && !known_node(node)) scan_kernel_node(g, node, graph_id, cs);
  }
}

bool GraphInstrumenter::known_node(CUgraphNode node) {
  std::lock_guard lock(mu_);
  return scan_after_.count(node) || scan_nodes_.count(node);  // done, or ours
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

// Adds the scan of kernel node `node` right after it; the node's dependents wait for the scan.
void GraphInstrumenter::scan_kernel_node(CUgraph g, CUgraphNode node, uint64_t graph_id, ContextState& cs) {
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) return;
  if (p.func && cs.owns(p.func)) return;  // a scan captured from a stream
  void* handle = p.func ? static_cast<void*>(p.func) : static_cast<void*>(p.kern);
  if (!handle) return;
  const KernelInfo& k = tasks_.kernel_info(handle, nullptr);
  if (!tasks_.worth_a_look(k)) return;
  size_t ndeps = 0;
  cuGraphNodeGetDependentNodes(node, nullptr, nullptr, &ndeps);
  std::vector<CUgraphNode> dependents(ndeps);
  if (ndeps && cuGraphNodeGetDependentNodes(node, dependents.data(), nullptr, &ndeps) != CUDA_SUCCESS) return;
  if (followed_by_scan(dependents, cs)) return;
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  if (!tasks_.build(k, node_launch_args(handle, p), cs, task, max_bytes)) return;
  task.graph_id = graph_id;
  task.graph_node = number_scan(graph_id);
  if (!cs.prepare_task(task, /*captured=*/true)) {
    failures_.report(CUDA_ERROR_OUT_OF_MEMORY, true);
    return;
  }
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, max_bytes);
  CUgraphNode scan = nullptr;
  const CUresult r = cuGraphAddKernelNode(&scan, g, &node, 1, &sp);
  if (r != CUDA_SUCCESS) {
    failures_.report(r, true);
    return;
  }
  // The kernel's dependents now wait for the scan (and, through it, for the kernel).
  for (CUgraphNode d : dependents)
    if (cuGraphRemoveDependencies(g, &node, &d, nullptr, 1) == CUDA_SUCCESS)
      cuGraphAddDependencies(g, &scan, &d, nullptr, 1);
  counters_.scans.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  scan_after_[node] = {scan, reinterpret_cast<CUdeviceptr>(task.accum), task.graph_id, task.graph_node};
  scan_nodes_.insert(scan);
}

void GraphInstrumenter::on_graph_instantiated(CUgraphExec exec, CUgraph graph) {
  std::lock_guard lock(mu_);
  auto it = graph_ids_.find(graph);
  if (it != graph_ids_.end()) exec_graph_ids_[exec] = it->second;
}

void GraphInstrumenter::on_kernel_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p,
                                              bool v1) {
  if (!p) return;
  ScanNode sn;
  {
    std::lock_guard lock(mu_);
    auto it = scan_after_.find(node);
    if (it == scan_after_.end()) return;
    sn = it->second;
  }
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
  warn_if_overlap_stale(sn.node, task, *cs);
  if (sn.merge_launch != ScanNode::kAlone) {
    update_merged_member(exec, sn, task, *cs);
    return;
  }
  set_scan_params(exec, sn, task, max_bytes, *cs);
}

void GraphInstrumenter::set_scan_params(CUgraphExec exec, const ScanNode& sn, nanscope_scan_task& task,
                                        uint64_t max_bytes, ContextState& cs) {
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, max_bytes, is_overlapped(sn.node));
  const CUresult r = exec ? cuGraphExecKernelNodeSetParams(exec, sn.node, &sp) : cuGraphKernelNodeSetParams(sn.node, &sp);
  if (r != CUDA_SUCCESS)
    warn_once(log_, schema::Once::graph_update,
              fmt::format("a scan node could not follow a kernel node's new parameters ({}); it keeps scanning "
                          "the old buffers",
                          error_name(r)));
}

bool GraphInstrumenter::is_overlapped(CUgraphNode scan) {
  std::lock_guard lock(mu_);
  return overlapped_.count(scan) != 0;
}

void GraphInstrumenter::on_graph_launch(CUgraphExec exec, CUstream stream) {
  std::lock_guard lock(mu_);
  auto it = exec_graph_ids_.find(exec);
  if (it != exec_graph_ids_.end()) graph_streams_[it->second] = reinterpret_cast<uint64_t>(stream);
}

void GraphInstrumenter::on_graph_node_destroy(CUgraphNode node) {
  std::lock_guard lock(mu_);
  scan_after_.erase(node);
  scan_nodes_.erase(node);
  overlapped_.erase(node);
  library_io_.erase(node);
}

void GraphInstrumenter::on_graph_destroy(CUgraph graph) {
  std::lock_guard lock(mu_);
  graph_ids_.erase(graph);
  pdl_edges_.erase(graph);
}

void GraphInstrumenter::forget_merged_tasks(CUgraphExec exec) {
  for (auto it = merged_tasks_.lower_bound({exec, nullptr}); it != merged_tasks_.end() && it->first.first == exec;)
    it = merged_tasks_.erase(it);
}

void GraphInstrumenter::on_graph_exec_update(CUgraphExec exec) {
  if (!exec) return;
  std::lock_guard lock(mu_);
  forget_merged_tasks(exec);
  updated_execs_.insert(exec);
}

void GraphInstrumenter::on_graph_exec_destroy(CUgraphExec exec) {
  std::lock_guard lock(mu_);
  exec_graph_ids_.erase(exec);
  forget_merged_tasks(exec);
  updated_execs_.erase(exec);
}

}  // namespace nanscope

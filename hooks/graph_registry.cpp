#include "graph_registry.hpp"

namespace nanscope {

uint64_t GraphRegistry::graph_id_for(CUgraph graph) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = graph_ids_.try_emplace(graph, 0);
  if (fresh) it->second = next_graph_id_++;
  return it->second;
}

void GraphRegistry::set_graph_id(CUgraph graph, uint64_t id) {
  std::lock_guard lock(mu_);
  graph_ids_[graph] = id;
}

void GraphRegistry::on_instantiated(CUgraphExec exec, CUgraph graph) {
  std::lock_guard lock(mu_);
  auto it = graph_ids_.find(graph);
  if (it != graph_ids_.end()) exec_graph_ids_[exec] = it->second;
}

void GraphRegistry::on_launch(CUgraphExec exec, uint64_t stream) {
  std::lock_guard lock(mu_);
  auto it = exec_graph_ids_.find(exec);
  if (it != exec_graph_ids_.end()) graph_streams_[it->second] = stream;
}

std::optional<uint64_t> GraphRegistry::stream_of(uint64_t graph_id) {
  std::lock_guard lock(mu_);
  if (auto it = graph_streams_.find(graph_id); it != graph_streams_.end()) return it->second;
  return std::nullopt;
}

uint32_t GraphRegistry::number_scan(uint64_t graph_id) {
  std::lock_guard lock(mu_);
  return scans_in_graph_[graph_id]++;
}

void GraphRegistry::remember_scan(CUgraphNode app_node, const ScanNode& scan) {
  std::lock_guard lock(mu_);
  scan_after_[app_node] = scan;
}

void GraphRegistry::add_scan(CUgraphNode kernel, const ScanNode& scan) {
  std::lock_guard lock(mu_);
  scan_after_[kernel] = scan;
  scan_nodes_.insert(scan.node);
}

std::optional<ScanNode> GraphRegistry::scan_after(CUgraphNode kernel) {
  std::lock_guard lock(mu_);
  auto it = scan_after_.find(kernel);
  if (it == scan_after_.end()) return std::nullopt;
  return it->second;
}

bool GraphRegistry::known_node(CUgraphNode node) {
  std::lock_guard lock(mu_);
  return scan_after_.count(node) || scan_nodes_.count(node);  // done, or ours
}

std::unordered_map<CUgraphNode, CUgraphNode> GraphRegistry::kernels_of_scans() {
  std::unordered_map<CUgraphNode, CUgraphNode> out;
  std::lock_guard lock(mu_);
  for (const auto& [kernel, sn] : scan_after_) out[sn.node] = kernel;
  return out;
}

void GraphRegistry::mark_overlapped(CUgraphNode scan) {
  std::lock_guard lock(mu_);
  overlapped_.insert(scan);
}

bool GraphRegistry::is_overlapped(CUgraphNode scan) {
  std::lock_guard lock(mu_);
  return overlapped_.count(scan) != 0;
}

void GraphRegistry::on_merged(CUgraphNode merged, const std::vector<CUgraphNode>& members,
                              const std::unordered_map<CUgraphNode, CUgraphNode>& kernel_of) {
  std::lock_guard lock(mu_);
  scan_nodes_.insert(merged);
  overlapped_.insert(merged);
  for (uint32_t l = 0; l < members.size(); ++l) {
    const CUgraphNode member = members[l];
    scan_nodes_.erase(member);
    overlapped_.erase(member);
    const auto k = kernel_of.find(member);
    if (k == kernel_of.end()) continue;
    auto sn = scan_after_.find(k->second);
    if (sn == scan_after_.end()) continue;
    sn->second.node = merged;
    sn->second.merge_launch = l;
  }
}

void GraphRegistry::remember_library_io(const std::vector<CUgraphNode>& nodes, const std::vector<uint64_t>& reads,
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

void GraphRegistry::library_io(CUgraphNode node, std::vector<uint64_t>& inputs,
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

GraphRegistry::MergedTask GraphRegistry::merged_task(CUgraphExec exec, CUgraphNode node) {
  MergedTask out;
  std::lock_guard lock(mu_);
  auto it = merged_tasks_.find({exec, node});
  if (it != merged_tasks_.end()) out.task = it->second;
  out.exec_updated = exec && updated_execs_.count(exec);
  return out;
}

void GraphRegistry::set_merged_task(CUgraphExec exec, CUgraphNode node, const nanscope_scan_group& task) {
  std::lock_guard lock(mu_);
  merged_tasks_[{exec, node}] = task;
}

void GraphRegistry::on_exec_update(CUgraphExec exec) {
  std::lock_guard lock(mu_);
  forget_merged_tasks(exec);
  updated_execs_.insert(exec);
}

void GraphRegistry::add_pdl_edges(CUgraph graph, const std::vector<PdlEdge>& edges) {
  std::lock_guard lock(mu_);
  auto& list = pdl_edges_[graph];
  list.insert(list.end(), edges.begin(), edges.end());
}

std::vector<PdlEdge> GraphRegistry::take_pdl_edges(CUgraph graph) {
  std::vector<PdlEdge> edges;
  std::lock_guard lock(mu_);
  auto it = pdl_edges_.find(graph);
  if (it == pdl_edges_.end()) return edges;
  edges.swap(it->second);
  pdl_edges_.erase(it);
  return edges;
}

void GraphRegistry::remember_bodies(CUgraphNode conditional, std::vector<CUgraph> bodies) {
  std::lock_guard lock(mu_);
  if (bodies_.size() >= kMaxConditionals && !bodies_.count(conditional)) return;
  bodies_[conditional] = std::move(bodies);
}

void GraphRegistry::note_body_scan(uint64_t graph_id, uint32_t graph_node) {
  std::lock_guard lock(mu_);
  body_scans_.emplace(graph_id, graph_node);
}

std::vector<CUgraph> GraphRegistry::bodies_of(CUgraphNode conditional) {
  std::lock_guard lock(mu_);
  const auto it = bodies_.find(conditional);
  return it == bodies_.end() ? std::vector<CUgraph>{} : it->second;
}

void GraphRegistry::forget_node(CUgraphNode node) {
  std::lock_guard lock(mu_);
  scan_after_.erase(node);
  scan_nodes_.erase(node);
  overlapped_.erase(node);
  library_io_.erase(node);
  bodies_.erase(node);
}

void GraphRegistry::forget_graph(CUgraph graph) {
  std::lock_guard lock(mu_);
  graph_ids_.erase(graph);
  pdl_edges_.erase(graph);
  tier_nodes_.erase(graph);
}

void GraphRegistry::forget_merged_tasks(CUgraphExec exec) {
  for (auto it = merged_tasks_.lower_bound({exec, nullptr}); it != merged_tasks_.end() && it->first.first == exec;)
    it = merged_tasks_.erase(it);
}

void GraphRegistry::forget_exec(CUgraphExec exec) {
  std::lock_guard lock(mu_);
  exec_graph_ids_.erase(exec);
  forget_merged_tasks(exec);
  updated_execs_.erase(exec);
}

}  // namespace nanscope

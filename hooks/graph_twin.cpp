// The sentinel tier's twin exec (docs/sentinel.md). A scan node costs its graph about 2 us per
// hop even when disabled, since it stays in the dependency chain (S20-2 on the H200: Llama
// graph-b8 1.22x plain under sentinel with 128 of 140 scan nodes disabled, 1.60x with 369 in
// line); and a disabled node cannot be enabled again once the application destroyed the graph
// its exec came from, as PyTorch does (S20-5). So the tier makes a second exec: the graph as
// instrumented, less its quiet scan nodes (each bypassed: its parents feed its children), the
// sentinels that nothing after them may overwrite moved after the graph's end (one hop, not one
// each), which runs only the sentinels. The application's exec keeps every scan and runs the escalated
// replays; the graph launch interposer (graph_launch_intercept.hpp) launches the twin in its
// place otherwise. Both execs' sentinel nodes have the same parameters, so they share their
// device state (replay counts, origin words): a finding's replay is the same in either.
#include <fmt/format.h>

#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "graph_instrumenter.hpp"
#include "graph_launch_intercept.hpp"
#include "graph_view.hpp"
#include "sentinel.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

// The launch the interposer chose on this thread, for the CUPTI enter site of that launch.
thread_local struct {
  CUgraphExec launched = nullptr, app_exec = nullptr;
  uint64_t replay = 0;
  bool escalated = false;
} t_chosen;

using Pair = std::pair<uint32_t, uint32_t>;

// The clone's edges as the twin wants them (sentinel::twin_edges): an edge that is not wanted, or
// that touches a moved node (its edge data may be programmatic), is removed with its data; the
// removed nodes go with their edges; each wanted edge missing is added as a full edge.
bool reshape(CUgraph clone, const GraphView& v, const std::vector<bool>& removed, const std::vector<bool>& moved) {
  const std::vector<overlap::Edge> want =
      sentinel::twin_edges(static_cast<uint32_t>(v.nodes.size()), v.edges, removed, moved);
  std::set<Pair> wanted, kept;
  for (const overlap::Edge& e : want) wanted.insert({e.from, e.to});
  for (size_t k = 0; k < v.edges.size(); ++k) {
    const overlap::Edge& e = v.edges[k];
    if (removed[e.from] || removed[e.to]) continue;
    if (wanted.count({e.from, e.to}) && !moved[e.from] && !moved[e.to]) {
      kept.insert({e.from, e.to});
      continue;
    }
    if (cuGraphRemoveDependencies(clone, &v.nodes[e.from], &v.nodes[e.to], &v.edge_data[k], 1) != CUDA_SUCCESS)
      return false;
  }
  for (size_t i = 0; i < v.nodes.size(); ++i)
    if (removed[i] && cuGraphDestroyNode(v.nodes[i]) != CUDA_SUCCESS) return false;
  for (const overlap::Edge& e : want)
    if (!kept.count({e.from, e.to}) &&
        cuGraphAddDependencies(clone, &v.nodes[e.from], &v.nodes[e.to], nullptr, 1) != CUDA_SUCCESS)
      return false;
  return true;
}

// Which of the clone's nodes go (the quiet scans) and which move to its end (the sentinels that
// may: GraphPlanner::sentinel_nodes; one merged since, or not found, stays in place). False when
// a quiet node is not in the clone, or the graph allocates (memory nodes: a second exec would own
// other addresses than the ones its kernels were given, so no twin is made).
bool twin_roles(CUgraph clone, const GraphView& v, const std::vector<CUgraphNode>& quiet,
                const std::vector<CUgraphNode>& movable, std::vector<bool>& removed, std::vector<bool>& moved) {
  std::unordered_map<CUgraphNode, uint32_t> index;
  for (uint32_t i = 0; i < v.nodes.size(); ++i) {
    CUgraphNodeType type;
    if (cuGraphNodeGetType(v.nodes[i], &type) != CUDA_SUCCESS || type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
        type == CU_GRAPH_NODE_TYPE_MEM_FREE)
      return false;
    index.emplace(v.nodes[i], i);
  }
  auto in_clone = [&](CUgraphNode n) -> std::optional<uint32_t> {
    CUgraphNode mine = nullptr;
    if (cuGraphNodeFindInClone(&mine, n, clone) != CUDA_SUCCESS) return std::nullopt;
    const auto it = index.find(mine);
    return it == index.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  };
  removed.assign(v.nodes.size(), false);
  moved.assign(v.nodes.size(), false);
  for (CUgraphNode q : quiet) {
    const std::optional<uint32_t> i = in_clone(q);
    if (!i) return false;
    removed[*i] = true;
  }
  for (CUgraphNode m : movable)
    if (const std::optional<uint32_t> i = in_clone(m); i && !removed[*i]) moved[*i] = true;
  return true;
}

CUgraphExec chosen_exec(void* ctx, CUgraphExec exec) { return static_cast<GraphInstrumenter*>(ctx)->choose_launch(exec); }

}  // namespace

void GraphInstrumenter::start_launch_interposer() {
  if (cfg_.tier != Tier::sentinel) return;
  graph_launch::set_launch_sink(new graph_launch::LaunchSink{chosen_exec, this});  // lives on
  on_module_loaded();
}

void GraphInstrumenter::on_module_loaded() {
  if (cfg_.tier != Tier::sentinel) return;
  const got::Report r = graph_launch::patch_all();
  if (r.patched || r.already) launches_interposed_.store(true, std::memory_order_relaxed);
  if (r.walked && r.patched)
    log_.info(fmt::format("graph launches: {} import slots patched in {} loaded objects (sentinel tier)", r.patched,
                          r.objects));
}

// The graph as instrumented, its quiet scan nodes gone and the sentinel scans that may moved
// after its end (sentinel::twin_edges), instantiated; null when any step fails (the tier then
// disables the quiet nodes on the application's exec instead). Merged sentinels, watches with
// rows and fixes stay in place.
CUgraphExec GraphInstrumenter::make_twin(CUgraph graph, const GraphRegistry::TierNodes& nodes) {
  ToolScope scope;
  CUgraph clone = nullptr;
  if (cuGraphClone(&clone, graph) != CUDA_SUCCESS) return nullptr;
  GraphView v;
  std::vector<bool> removed, moved;
  CUgraphExec twin = nullptr;
  if (!read_graph(clone, v) || !twin_roles(clone, v, nodes.quiet, nodes.movable, removed, moved) ||
      !reshape(clone, v, removed, moved) || cuGraphInstantiate(&twin, clone, 0) != CUDA_SUCCESS)
    twin = nullptr;
  cuGraphDestroy(clone);
  return twin;
}

bool GraphInstrumenter::start_twin_tier(CUgraphExec exec, CUgraph graph) {
  const GraphRegistry::TierNodes nodes = registry_.tier_nodes_of(graph);
  const std::vector<CUgraphNode>& quiet = nodes.quiet;
  // No import slot of a graph launch was patched (x86-64 ELF only; or the application calls the
  // driver through cuGetProcAddress): a twin would never run.
  if (quiet.empty() || !launches_interposed_.load(std::memory_order_relaxed)) return false;
  const CUgraphExec twin = make_twin(graph, nodes);
  if (!twin) return false;
  const std::optional<uint64_t> graph_id = registry_.start_twin_tier(exec, quiet, twin, cfg_.escalate);
  if (!graph_id) {
    ToolScope scope;
    cuGraphExecDestroy(twin);
    return false;
  }
  if (log_.debug_enabled())
    log_.debug(fmt::format("graph {}: sentinel tier: a twin exec without its {} quiet scan node(s) runs in its place "
                           "until a sentinel fires",
                           *graph_id, quiet.size()));
  return true;
}

// On the launching thread, before the launch (the interposer's sink).
CUgraphExec GraphInstrumenter::choose_launch(CUgraphExec exec) {
  t_chosen.launched = nullptr;
  const GraphRegistry::TierLaunch launch = registry_.tier_launch(exec, /*twin_only=*/true);
  if (!launch.tiered) return exec;  // not twin-tiered: counted at its CUPTI enter site
  counters_.coverage.on_tier_replay(launch.escalated);
  t_chosen = {launch.escalated ? exec : launch.twin, exec, launch.replay, launch.escalated};
  return t_chosen.launched;
}

// The CUPTI enter site of a launch the interposer chose (true), or of a tiered exec launched
// past it (a caller nanscope did not patch): that replay runs every scan of the application's exec.
bool GraphInstrumenter::twin_launch_enter(CUgraphExec launched) {
  if (t_chosen.launched && t_chosen.launched == launched) {
    if (t_chosen.escalated) mark_escalated_launch(t_chosen.app_exec, t_chosen.replay);
    t_chosen.launched = nullptr;
    return true;
  }
  const bool untwinned = registry_.untwinned_launch(launched);
  if (untwinned) counters_.coverage.on_tier_replay(true);
  return untwinned;
}

void GraphInstrumenter::end_twin(CUgraphExec twin) {
  if (!twin) return;
  ToolScope scope;
  cuGraphExecDestroy(twin);
}

}  // namespace nanscope

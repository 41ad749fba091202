// The sentinel tier's twin exec (docs/sentinel.md). A scan node costs its graph about 2 us per
// hop even when disabled, since it stays in the dependency chain (S20-2 on the H200: Llama
// graph-b8 1.22x plain under sentinel with 128 of 140 scan nodes disabled, 1.60x with 369 in
// line); and a disabled node cannot be enabled again once the application destroyed the graph
// its exec came from, as PyTorch does (S20-5). So the tier makes a second exec: the graph as
// instrumented, less its quiet scan nodes (each bypassed: its parents feed its children), which
// runs only the sentinels. The application's exec keeps every scan and runs the escalated
// replays; the graph launch interposer (graph_launch_intercept.hpp) launches the twin in its
// place otherwise. Both execs' sentinel nodes have the same parameters, so they share their
// device state (replay counts, origin words): a finding's replay is the same in either.
#include <fmt/format.h>

#include <algorithm>

#include "graph_instrumenter.hpp"
#include "graph_launch_intercept.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

// The launch the interposer chose on this thread, for the CUPTI enter site of that launch.
thread_local struct {
  CUgraphExec launched = nullptr, app_exec = nullptr;
  uint64_t replay = 0;
  bool escalated = false;
} t_chosen;

bool node_list(CUgraphNode n, bool parents, std::vector<CUgraphNode>& out) {
  size_t count = 0;
  auto get = [&](CUgraphNode* nodes) {
    return parents ? cuGraphNodeGetDependencies(n, nodes, nullptr, &count)
                   : cuGraphNodeGetDependentNodes(n, nodes, nullptr, &count);
  };
  if (get(nullptr) != CUDA_SUCCESS) return false;
  out.resize(count);
  return count == 0 || get(out.data()) == CUDA_SUCCESS;
}

// Removes `node` from `g`, each parent joined to each child by a full edge (an edge that was
// there already stays as it was). Any failure fails the twin: a lost edge would let the
// application's kernels race.
bool bypass(CUgraph g, CUgraphNode node) {
  std::vector<CUgraphNode> parents, children, already;
  if (!node_list(node, true, parents) || !node_list(node, false, children)) return false;
  if (cuGraphDestroyNode(node) != CUDA_SUCCESS) return false;
  for (CUgraphNode p : parents) {
    if (!node_list(p, false, already)) return false;
    for (CUgraphNode c : children)
      if (std::find(already.begin(), already.end(), c) == already.end() &&
          cuGraphAddDependencies(g, &p, &c, nullptr, 1) != CUDA_SUCCESS)
        return false;
  }
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
  if (r.walked && r.patched)
    log_.info(fmt::format("graph launches: {} import slots patched in {} loaded objects (sentinel tier)", r.patched,
                          r.objects));
}

// The graph as instrumented, less `quiet`, instantiated; null when any step fails (the tier then
// disables the quiet nodes on the application's exec instead). A graph with memory nodes cannot
// have two execs: its instantiation fails here, as it should.
CUgraphExec GraphInstrumenter::make_twin(CUgraph graph, const std::vector<CUgraphNode>& quiet) {
  ToolScope scope;
  CUgraph clone = nullptr;
  if (cuGraphClone(&clone, graph) != CUDA_SUCCESS) return nullptr;
  bool ok = true;
  for (CUgraphNode q : quiet) {
    CUgraphNode mine = nullptr;
    ok = cuGraphNodeFindInClone(&mine, q, clone) == CUDA_SUCCESS && bypass(clone, mine);
    if (!ok) break;
  }
  CUgraphExec twin = nullptr;
  if (ok && cuGraphInstantiate(&twin, clone, 0) != CUDA_SUCCESS) twin = nullptr;
  cuGraphDestroy(clone);
  return twin;
}

bool GraphInstrumenter::start_twin_tier(CUgraphExec exec, CUgraph graph) {
  const std::vector<CUgraphNode> quiet = registry_.quiet_of(graph);
  if (quiet.empty() || !graph_launch::hooks(nullptr)) return false;
  const CUgraphExec twin = make_twin(graph, quiet);
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
  const GraphRegistry::TierLaunch launch = registry_.tier_launch(exec);
  if (!launch.tiered || !launch.twin) return exec;
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
  return registry_.untwinned_launch(launched);
}

void GraphInstrumenter::end_twin(CUgraphExec twin) {
  if (!twin) return;
  ToolScope scope;
  cuGraphExecDestroy(twin);
}

}  // namespace nanscope

// The sentinel tier in CUDA graphs, the GraphInstrumenter's part (docs/sentinel.md): the driver
// calls and the log. The GraphRegistry keeps each exec's quiet scan nodes and sentinel::Escalation
// (hooks/graph_tier.cpp) and says what to change; this file changes it.
//
// An exec is changed only on the thread that launches it, at the enter site of cuGraphLaunch,
// before the launch is made: cuGraphNodeSetEnabled applies to later launches, and launches
// already enqueued keep the state they were launched with. After each launch of an escalated
// replay an event is recorded behind it on its stream; the drain reads the channels only after
// it has seen the event complete, so every finding of that replay is drained when its window
// moves on (a replay that records no finding is known clean only this way).
#include <fmt/format.h>

#include "graph_instrumenter.hpp"
#include "stream_capture.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

// The replay the thread's last cuGraphLaunch enter site escalated: its exit site records the event.
thread_local struct {
  CUgraphExec exec = nullptr;
  uint64_t replay = 0;
} t_escalated;

const char* phase_of(sentinel::Outcome o) {
  switch (o) {
    case sentinel::Outcome::escalate: return schema::escalation_phase_str::escalate;
    case sentinel::Outcome::localized: return schema::escalation_phase_str::localized;
    case sentinel::Outcome::did_not_recur: return schema::escalation_phase_str::did_not_recur;
    case sentinel::Outcome::none: break;
  }
  return schema::escalation_phase_str::incomplete;
}

// The `escalation` event of a window's outcome, with the phase it is logged as.
Json outcome_event(const GraphRegistry::TierOutcome& o, const char* phase) {
  namespace key = schema::key;
  return Json{{key::graph_id, o.graph_id}, {key::phase, phase}, {key::replay, o.replay}, {key::window, o.window}};
}

}  // namespace

void GraphInstrumenter::set_enabled(CUgraphExec exec, const std::vector<CUgraphNode>& nodes, bool enable,
                                    std::vector<CUgraphNode>* done) {
  CUresult failed = CUDA_SUCCESS;
  uint64_t failures = 0;
  for (CUgraphNode n : nodes) {
    const CUresult r = cuGraphNodeSetEnabled(exec, n, enable ? 1u : 0u);
    if (r == CUDA_SUCCESS) {
      if (done) done->push_back(n);
      continue;
    }
    failed = r;
    ++failures;
  }
  if (failures)
    warn_once(log_, schema::Once::graph_tier,
              fmt::format("{} scan node(s) of a graph exec could not be {} ({}); {}", failures,
                          enable ? "enabled for an escalated replay" : "disabled for the sentinel tier",
                          error_name(failed),
                          enable ? "that replay's lineage may miss them" : "they scan on every replay (full tier)"));
}

void GraphInstrumenter::start_tier(CUgraphExec exec, CUgraph graph) {
  const std::vector<CUgraphNode> quiet = registry_.tier_nodes_of(graph).quiet;
  if (quiet.empty()) return;
  ToolScope scope;
  std::vector<CUgraphNode> disabled;
  set_enabled(exec, quiet, false, &disabled);
  const std::optional<uint64_t> graph_id = registry_.start_tier(exec, disabled, cfg_.escalate);
  // An exec whose graph is unknown gets no Escalation: its scans run on every replay (full).
  if (!graph_id) set_enabled(exec, disabled, true);
  if (log_.debug_enabled())
    log_.debug(graph_id ? fmt::format("graph {}: sentinel tier on its exec: {} of {} quiet scan node(s) disabled",
                                      *graph_id, disabled.size(), quiet.size())
                        : fmt::format("graph exec {}: its graph is unknown: no sentinel tier, every scan runs",
                                      fmt::ptr(exec)));
}

void GraphInstrumenter::end_tier(CUgraphExec exec, bool enable_again) {
  std::vector<CUevent> events;
  CUgraphExec twin = nullptr;
  const std::vector<CUgraphNode> disabled = registry_.end_tier(exec, events, twin);
  end_twin(twin);  // launched on the app's streams before this call, as the app's own exec was
  ToolScope scope;
  if (enable_again && !disabled.empty()) set_enabled(exec, disabled, true);
  for (CUevent e : events) cuEventDestroy(e);
}

void GraphInstrumenter::mark_escalated_launch(CUgraphExec exec, uint64_t replay) { t_escalated = {exec, replay}; }

void GraphInstrumenter::on_graph_launch_enter(CUgraphExec exec) {
  if (cfg_.tier != Tier::sentinel) return;
  t_escalated.exec = nullptr;
  if (twin_launch_enter(exec)) return;  // the twin tier: chosen by the interposer, or run full
  const GraphRegistry::TierLaunch launch = registry_.tier_launch(exec);
  if (!launch.tiered) return;
  counters_.coverage.on_tier_replay(launch.escalated);
  if (!launch.change.empty()) {
    ToolScope scope;
    set_enabled(exec, launch.change, launch.enable);
  }
  if (launch.escalated) t_escalated = {exec, launch.replay};
}

void GraphInstrumenter::note_escalated_launch(CUgraphExec exec, CUstream stream) {
  if (t_escalated.exec != exec) return;
  t_escalated.exec = nullptr;
  ToolScope scope;
  // Under stream capture the launch becomes a node of another graph: no event, and the window
  // stays open (`incomplete` at exit).
  if (!surely_not_capturing(stream)) return;
  CUevent done = nullptr;
  if (cuEventCreate(&done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return;
  if (cuEventRecord(done, stream) != CUDA_SUCCESS) {
    cuEventDestroy(done);
    return;
  }
  registry_.add_in_flight(exec, t_escalated.replay, done);
}

void GraphInstrumenter::before_drain() {
  if (cfg_.tier != Tier::sentinel || exiting_.load(std::memory_order_relaxed)) return;
  std::vector<GraphRegistry::InFlight> complete;
  ToolScope scope;
  for (const GraphRegistry::InFlight& f : registry_.in_flight())
    if (cuEventQuery(f.done) == CUDA_SUCCESS) complete.push_back(f);
  if (!complete.empty()) registry_.mark_complete(complete);
}

void GraphInstrumenter::after_drain() {
  if (cfg_.tier != Tier::sentinel) return;
  std::vector<CUevent> spent;
  const std::vector<GraphRegistry::TierOutcome> outcomes = registry_.settle(spent);
  {
    ToolScope scope;
    for (CUevent e : spent) cuEventDestroy(e);
  }
  for (const GraphRegistry::TierOutcome& o : outcomes) {
    log_.emit(schema::event::escalation, outcome_event(o, phase_of(o.outcome)));
    if (o.outcome == sentinel::Outcome::did_not_recur)
      log_.warn(fmt::format("graph {}: the non-finite values a sentinel saw at replay {} did not recur in the next {} "
                            "replays; first cause unknown; rerun with --tier full",
                            o.graph_id, o.replay, o.window));
    else
      log_.info(fmt::format("graph {}: the non-finite values of replay {} recurred in the next {} replays, which "
                            "ran every scan: their lineage is logged",
                            o.graph_id, o.replay, o.window));
  }
}

void GraphInstrumenter::on_judged(const Finding& f, GraphRegistry::ReplayKind kind, bool fault, uint64_t finding_id) {
  const GraphRegistry::SentinelHit hit = registry_.on_judged(f, kind, fault);
  if (!hit.escalate) return;
  const uint32_t window = hit.window;
  namespace key = schema::key;
  log_.emit(schema::event::escalation,
            Json{{key::graph_id, f.graph_id}, {key::phase, schema::escalation_phase_str::escalate},
                 {key::replay, f.replay}, {key::window, window}, {key::finding, finding_id}});
  log_.info(fmt::format("graph {}: a sentinel saw non-finite values at replay {}; the next {} replays run every scan",
                        f.graph_id, f.replay, window));
}

void GraphInstrumenter::at_exit() {
  if (cfg_.tier != Tier::sentinel) return;
  for (const GraphRegistry::TierOutcome& o : registry_.open_windows()) {
    const bool recurred = o.outcome == sentinel::Outcome::localized;
    log_.emit(schema::event::escalation,
              outcome_event(o, recurred ? phase_of(o.outcome) : schema::escalation_phase_str::incomplete));
    if (recurred)
      log_.info(fmt::format("graph {}: the non-finite values of replay {} recurred in the replays after it, which "
                            "ran every scan: their lineage is logged",
                            o.graph_id, o.replay));
    else
      log_.warn(fmt::format("graph {}: the non-finite values a sentinel saw at replay {} were seen, but the {} replays "
                            "after it had not all drained at exit; first cause unknown; rerun with --tier full",
                            o.graph_id, o.replay, o.window));
  }
}

}  // namespace nanscope

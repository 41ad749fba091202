// The sentinel tier's state in the GraphRegistry (docs/sentinel.md): each exec's quiet scan
// nodes, its sentinel::Escalation, the escalated replays in flight. Like the rest of the
// registry, every call holds mu_ over these maps only and calls nothing out: the driver calls
// (enabling nodes, events) are the GraphInstrumenter's, made with what these calls return.
//
// Replay numbers: the Escalation counts an exec's launches from 0; a finding's `replay` is its
// scan node's execution count. For a node that runs on every replay (a sentinel, or any scan that
// is never disabled) the two are the same for an exec instantiated once from its graph. A quiet
// node runs only in escalated replays, so its findings are taken as the open window's.
#include "graph_registry.hpp"

#include <utility>

namespace nanscope {

void GraphRegistry::set_tier_nodes(CUgraph graph, TierNodes nodes) {
  std::lock_guard lock(mu_);
  tier_nodes_[graph] = std::move(nodes);
}

GraphRegistry::TierNodes GraphRegistry::tier_nodes_of(CUgraph graph) {
  std::lock_guard lock(mu_);
  const auto it = tier_nodes_.find(graph);
  return it == tier_nodes_.end() ? TierNodes{} : it->second;
}

GraphRegistry::Tier* GraphRegistry::new_tier(CUgraphExec exec, const std::vector<CUgraphNode>& quiet, uint32_t window) {
  const auto id = exec_graph_ids_.find(exec);
  if (id == exec_graph_ids_.end()) return nullptr;
  tiers_.erase(exec);  // a reused handle
  Tier& t = tiers_.try_emplace(exec, window).first->second;
  t.graph_id = id->second;
  const std::unordered_set<CUgraphNode> q(quiet.begin(), quiet.end());
  for (const auto& [kernel, sn] : scan_after_)
    if (q.count(sn.node)) t.quiet_numbers.insert(sn.graph_node);
  return &t;
}

std::optional<uint64_t> GraphRegistry::start_tier(CUgraphExec exec, const std::vector<CUgraphNode>& disabled,
                                                  uint32_t window) {
  std::lock_guard lock(mu_);
  Tier* t = new_tier(exec, disabled, window);
  if (!t) return std::nullopt;
  t->quiet = disabled;
  return t->graph_id;
}

std::optional<uint64_t> GraphRegistry::start_twin_tier(CUgraphExec exec, const std::vector<CUgraphNode>& quiet,
                                                       CUgraphExec twin, uint32_t window) {
  std::lock_guard lock(mu_);
  Tier* t = new_tier(exec, quiet, window);  // nothing disabled: the twin runs without them
  if (!t) return std::nullopt;
  t->twin = twin;
  exec_graph_ids_[twin] = t->graph_id;  // its launches' stream is the graph's
  return t->graph_id;
}

bool GraphRegistry::untwinned_launch(CUgraphExec exec) {
  std::lock_guard lock(mu_);
  const auto it = tiers_.find(exec);
  if (it == tiers_.end() || !it->second.twin) return false;
  Tier& t = it->second;
  t.escalation.on_full_launch(t.launches++);
  return true;
}

GraphRegistry::TierLaunch GraphRegistry::tier_launch(CUgraphExec exec, bool twin_only) {
  TierLaunch out;
  std::lock_guard lock(mu_);
  const auto it = tiers_.find(exec);
  if (it == tiers_.end() || (twin_only && !it->second.twin)) return out;
  Tier& t = it->second;
  out.tiered = true;
  out.replay = t.launches++;
  out.escalated = t.escalation.on_launch(out.replay) == sentinel::Mode::all;
  out.twin = t.twin;
  if (out.escalated != t.all_enabled) {
    t.all_enabled = out.escalated;
    out.enable = out.escalated;
    out.change = t.quiet;
  }
  return out;
}

void GraphRegistry::add_in_flight(CUgraphExec exec, uint64_t replay, CUevent done) {
  std::lock_guard lock(mu_);
  if (auto it = tiers_.find(exec); it != tiers_.end()) it->second.in_flight.emplace_back(replay, done);
}

GraphRegistry::Tier* GraphRegistry::tier_of_graph(uint64_t graph_id) {
  for (auto& [exec, t] : tiers_)
    if (t.graph_id == graph_id) return &t;
  for (Tier& t : retired_)
    if (t.graph_id == graph_id) return &t;
  return nullptr;
}

GraphRegistry::ReplayKind GraphRegistry::replay_kind(const Finding& f) {
  std::lock_guard lock(mu_);
  if (tiers_.empty() && retired_.empty()) return ReplayKind::untiered;
  const Tier* t = tier_of_graph(f.graph_id);
  if (!t) return ReplayKind::untiered;
  // A body's scan counts its executions: which replay it ran in, and whether every scan ran
  // then, is not known. It claims no origin, and escalates as a sentinel does.
  if (body_scans_.count({f.graph_id, f.graph_node})) return ReplayKind::sentinel_only;
  if (t->quiet_numbers.count(f.graph_node)) return ReplayKind::quiet;
  if (t->escalation.launched_all(f.replay)) return ReplayKind::escalated;
  return ReplayKind::sentinel_only;
}

std::optional<uint64_t> GraphRegistry::quiet_replay(const Finding& f) {
  std::lock_guard lock(mu_);
  const Tier* t = tier_of_graph(f.graph_id);
  return t ? t->escalation.replay_of_full_launch(f.replay) : std::nullopt;
}

GraphRegistry::SentinelHit GraphRegistry::on_judged(const Finding& f, ReplayKind kind, bool fault) {
  SentinelHit out;
  if (!fault || kind == ReplayKind::untiered) return out;
  std::lock_guard lock(mu_);
  Tier* t = tier_of_graph(f.graph_id);
  if (!t) return out;
  switch (kind) {
    case ReplayKind::quiet: t->quiet_fired = t->quiet_fired || t->escalation.escalating(); break;
    case ReplayKind::escalated:  // a full replay outside a window counts toward none
      if (t->escalation.in_window(f.replay)) t->nonfinite.insert(f.replay);
      break;
    case ReplayKind::sentinel_only:
      out.escalate = t->escalation.on_drained(f.replay, true) == sentinel::Outcome::escalate;
      out.window = t->escalation.window();
      break;
    case ReplayKind::untiered: break;
  }
  return out;
}

std::vector<GraphRegistry::InFlight> GraphRegistry::in_flight() {
  std::vector<InFlight> out;
  std::lock_guard lock(mu_);
  for (auto& [exec, t] : tiers_)
    for (const auto& [replay, done] : t.in_flight) out.push_back({exec, replay, done});
  return out;
}

void GraphRegistry::mark_complete(const std::vector<InFlight>& complete) {
  std::lock_guard lock(mu_);
  for (const InFlight& c : complete)
    if (auto it = tiers_.find(c.exec); it != tiers_.end()) it->second.complete.push_back(c.replay);
}

std::vector<GraphRegistry::TierOutcome> GraphRegistry::settle(std::vector<CUevent>& spent) {
  std::vector<TierOutcome> out;
  std::lock_guard lock(mu_);
  for (auto& [exec, t] : tiers_) {
    for (uint64_t replay : t.complete) {
      const bool nonfinite = t.nonfinite.erase(replay) != 0 || std::exchange(t.quiet_fired, false);
      const uint64_t seen = t.escalation.first_seen();
      const sentinel::Outcome o = t.escalation.on_drained(replay, nonfinite);
      if (o == sentinel::Outcome::localized || o == sentinel::Outcome::did_not_recur)
        out.push_back({t.graph_id, seen, t.escalation.window(), o});
      for (auto e = t.in_flight.begin(); e != t.in_flight.end(); ++e)
        if (e->first == replay) {
          spent.push_back(e->second);
          t.in_flight.erase(e);
          break;
        }
    }
    t.complete.clear();
    if (!t.escalation.escalating()) t.quiet_fired = false;
  }
  return out;
}

std::vector<GraphRegistry::TierOutcome> GraphRegistry::open_windows() {
  std::vector<TierOutcome> out;
  std::lock_guard lock(mu_);
  // A window whose replays had not all been seen complete (exit queries no event): one that found
  // the NaN again has its lineage logged all the same (session 21: tier_replay7 `every` said
  // `incomplete` at exit with the softmax's lineage in replays 9-11).
  auto open = [&](const Tier& t) {
    if (!t.escalation.escalating()) return;
    const bool recurred = t.escalation.recurred() || !t.nonfinite.empty() || t.quiet_fired;
    out.push_back({t.graph_id, t.escalation.first_seen(), t.escalation.window(),
                   recurred ? sentinel::Outcome::localized : sentinel::Outcome::escalate});
  };
  for (const auto& [exec, t] : tiers_) open(t);
  for (const Tier& t : retired_) open(t);
  return out;
}

std::vector<CUgraphNode> GraphRegistry::end_tier(CUgraphExec exec, std::vector<CUevent>& events, CUgraphExec& twin) {
  std::lock_guard lock(mu_);
  const auto it = tiers_.find(exec);
  if (it == tiers_.end()) return {};
  Tier& t = it->second;
  twin = std::exchange(t.twin, nullptr);
  if (twin) exec_graph_ids_.erase(twin);
  for (const auto& [replay, done] : t.in_flight) events.push_back(done);
  t.in_flight.clear();  // their events are destroyed: those replays are never known complete
  std::vector<CUgraphNode> quiet = t.all_enabled ? std::vector<CUgraphNode>{} : std::move(t.quiet);
  t.quiet.clear();
  if (retired_.size() >= kRetiredTiers) retired_.pop_back();
  retired_.push_front(std::move(t));
  tiers_.erase(it);
  return quiet;
}

}  // namespace nanscope

#include "sentinel.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <set>

namespace nanscope::sentinel {

using overlap::Edge;
using overlap::is_scan;
using overlap::Node;
using overlap::NodeKind;
using overlap::Range;

namespace {

// The writes of `n` that surely happen: a decoder's exact ones (the first exact_writes), a memset
// or memcpy node's destination. Pointer words may not be written through.
std::vector<Range> exact_writes(const Node& n) {
  if (n.kind != NodeKind::app) return {};
  if (n.model == overlap::WriteModel::node_params) return n.writes;
  if (n.model == overlap::WriteModel::decoded)
    return {n.writes.begin(), n.writes.begin() + std::min<size_t>(n.exact_writes, n.writes.size())};
  return {};
}

struct Adjacency {
  overlap::Children children, parents;
};

// The exact writes of every node after `scan`'s kernel: reachable from its parents, or from the
// scan itself (the scan in line); false when the search passed `max_visits`.
bool later_writes(uint32_t scan, const std::vector<Node>& nodes, const Adjacency& a, uint32_t max_visits,
                  std::vector<Range>& out) {
  std::vector<bool> seen(nodes.size(), false);
  std::deque<uint32_t> queue;
  seen[scan] = true;
  // After its kernel: the kernel's other children (the scan beside the chain) and the scan's
  // own (the scan in line, K -> S -> C).
  for (uint32_t p : a.parents[scan])
    for (uint32_t c : a.children[p])
      if (!seen[c]) seen[c] = true, queue.push_back(c);
  for (uint32_t c : a.children[scan])
    if (!seen[c]) seen[c] = true, queue.push_back(c);
  uint32_t visits = 0;
  while (!queue.empty()) {
    if (++visits > max_visits) return false;
    const uint32_t v = queue.front();
    queue.pop_front();
    for (const Range& r : exact_writes(nodes[v])) out.push_back(r);
    for (uint32_t c : a.children[v])
      if (!seen[c]) seen[c] = true, queue.push_back(c);
  }
  return true;
}

}  // namespace

bool covered(const Range& range, std::vector<Range> cover) {
  if (range.lo >= range.hi) return true;
  std::sort(cover.begin(), cover.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
  uint64_t reached = range.lo;  // every byte below it is covered
  for (const Range& c : cover) {
    if (c.lo > reached) break;
    reached = std::max(reached, c.hi);
    if (reached >= range.hi) return true;
  }
  return false;
}

std::vector<bool> sentinel_scans(const std::vector<Node>& nodes, const std::vector<Edge>& edges,
                                 const std::vector<bool>& watch, const Limits& limits) {
  std::vector<bool> out(nodes.size(), false);
  Adjacency a;
  overlap::adjacency(static_cast<uint32_t>(nodes.size()), edges, a.children, a.parents);
  std::vector<Range> after;
  for (uint32_t s = 0; s < nodes.size(); ++s) {
    if (!is_scan(nodes[s].kind)) continue;
    if (s < watch.size() && watch[s]) {
      out[s] = true;
      continue;
    }
    after.clear();
    if (!later_writes(s, nodes, a, limits.max_visits, after)) {
      out[s] = true;
      continue;
    }
    out[s] = std::any_of(nodes[s].reads.begin(), nodes[s].reads.end(),
                         [&](const Range& r) { return !covered(r, after); });
  }
  return out;
}

namespace {

// Each kept node joined to the kept nodes it reaches through nodes that go (depth-first, stopping
// at each kept node reached); has_child[u]: u got an edge.
std::vector<Edge> kept_edges(uint32_t n, const overlap::Children& children, const std::function<bool(uint32_t)>& kept,
                             std::vector<bool>& has_child) {
  std::vector<Edge> out;
  std::vector<bool> seen(n, false);
  std::vector<uint32_t> stack, visited;
  for (uint32_t u = 0; u < n; ++u) {
    if (!kept(u)) continue;
    for (uint32_t v : visited) seen[v] = false;
    visited.clear();
    stack.assign(children[u].begin(), children[u].end());
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      if (seen[v]) continue;
      seen[v] = true;
      visited.push_back(v);
      if (!kept(v)) {
        stack.insert(stack.end(), children[v].begin(), children[v].end());
        continue;
      }
      out.push_back({u, v});
      has_child[u] = true;
    }
  }
  std::sort(out.begin(), out.end(), [](const Edge& a, const Edge& b) { return a.from != b.from ? a.from < b.from : a.to < b.to; });
  return out;
}

// Past this many nodes the bypass edges stay unreduced (the reachability bitsets would take
// n^2/8 bytes: 8 MiB here).
constexpr uint32_t kMaxReducedNodes = 8192;

// Each node's descendants in `children` as bitsets of `words` words (reach[u * words ...]), or
// nothing when the edges hold a cycle.
std::optional<std::vector<uint64_t>> descendants(uint32_t n, const overlap::Children& children,
                                                 const overlap::Children& parents, size_t words) {
  std::vector<uint32_t> order, pending(n);
  for (uint32_t v = 0; v < n; ++v)
    if ((pending[v] = static_cast<uint32_t>(parents[v].size())) == 0) order.push_back(v);
  for (size_t i = 0; i < order.size(); ++i)
    for (uint32_t c : children[order[i]])
      if (--pending[c] == 0) order.push_back(c);
  if (order.size() != n) return std::nullopt;
  std::vector<uint64_t> reach(size_t{n} * words, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (uint32_t c : children[*it]) {
      for (size_t w = 0; w < words; ++w) reach[*it * words + w] |= reach[c * words + w];
      reach[*it * words + c / 64] |= uint64_t{1} << (c % 64);
    }
  return reach;
}

// Drops each bypass edge (u, v) that another path from u already orders before v: a chain of
// quiet scans (each ordered before the next, S1 -> S2 -> ...) joined u to every kernel after it,
// a quadratic number of edges that the H200 replayed slower than the scans themselves (session
// 21: Llama graph-b8, twin 1.50x plain against full's 1.37x). The graph's own edges
// (`original`) stay as they were, implied or not. A transitive reduction of a DAG may drop all
// its implied edges at once: each keeps a longer path.
void drop_implied(uint32_t n, const std::vector<Edge>& original, std::vector<Edge>& out) {
  if (n > kMaxReducedNodes || out.empty()) return;
  overlap::Children children, parents;
  overlap::adjacency(n, out, children, parents);
  const size_t words = (n + 63) / 64;
  const std::optional<std::vector<uint64_t>> reach = descendants(n, children, parents, words);
  if (!reach) return;  // not a DAG: leave it to the driver to refuse
  auto after = [&](uint32_t u, uint32_t v) { return ((*reach)[u * words + v / 64] >> (v % 64)) & 1u; };
  std::set<std::pair<uint32_t, uint32_t>> own;
  for (const Edge& e : original) own.insert({e.from, e.to});
  auto implied = [&](const Edge& e) {
    if (own.count({e.from, e.to})) return false;
    return std::any_of(children[e.from].begin(), children[e.from].end(),
                       [&](uint32_t w) { return w != e.to && after(w, e.to); });
  };
  out.erase(std::remove_if(out.begin(), out.end(), implied), out.end());
}

}  // namespace

std::vector<Edge> twin_edges(uint32_t n, const std::vector<Edge>& edges, const std::vector<bool>& removed,
                             const std::vector<bool>& moved) {
  auto is = [](const std::vector<bool>& set, uint32_t v) { return v < set.size() && set[v]; };
  const std::function<bool(uint32_t)> kept = [&](uint32_t v) { return !is(removed, v) && !is(moved, v); };
  overlap::Children children, parents;
  overlap::adjacency(n, edges, children, parents);
  std::vector<bool> has_child(n, false);
  std::vector<Edge> out = kept_edges(n, children, kept, has_child);
  drop_implied(n, edges, out);  // a sink stays a sink: only an edge from a node with another child goes
  for (uint32_t m = 0; m < n; ++m) {
    if (!is(moved, m) || is(removed, m)) continue;
    for (uint32_t u = 0; u < n; ++u)
      if (kept(u) && !has_child[u]) out.push_back({u, m});  // after every sink
  }
  return out;
}

namespace {

// Whether a node that may run after the scan may change what it reads.
bool may_write(const Node& n, const std::vector<Range>& reads) {
  if (n.kind == NodeKind::opaque) return true;
  if (n.kind != NodeKind::app && n.kind != NodeKind::pinned_scan) return false;  // a scan writes state words only
  for (const Range& w : n.writes)
    for (const Range& r : reads)
      if (w.overlaps(r)) return true;
  return false;
}

}  // namespace

std::vector<bool> movable_to_end(const std::vector<Node>& nodes, const std::vector<Edge>& edges,
                                 const std::vector<bool>& sentinel, const Limits& limits) {
  std::vector<bool> out(nodes.size(), false);
  if (nodes.size() > limits.max_visits) return out;
  Adjacency a;
  overlap::adjacency(static_cast<uint32_t>(nodes.size()), edges, a.children, a.parents);
  std::vector<bool> ancestor(nodes.size());
  std::vector<uint32_t> stack;
  for (uint32_t s = 0; s < nodes.size(); ++s) {
    if (s >= sentinel.size() || !sentinel[s] || nodes[s].kind != NodeKind::scan) continue;
    std::fill(ancestor.begin(), ancestor.end(), false);
    stack.assign(a.parents[s].begin(), a.parents[s].end());
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      if (ancestor[v]) continue;
      ancestor[v] = true;
      stack.insert(stack.end(), a.parents[v].begin(), a.parents[v].end());
    }
    bool clear = true;
    for (uint32_t v = 0; v < nodes.size() && clear; ++v)
      if (v != s && !ancestor[v]) clear = !may_write(nodes[v], nodes[s].reads);
    out[s] = clear;
  }
  return out;
}

Mode Escalation::on_launch(uint64_t replay) {
  if (!escalated_ || to_launch_ == 0) return Mode::sentinels;
  --to_launch_;
  escalated_replays_.insert(replay);
  note_full_launch(replay);
  return Mode::all;
}

void Escalation::note_full_launch(uint64_t replay) {
  full_launches_.push_back(replay);
  if (full_launches_.size() > kFullLaunches) {
    full_launches_.pop_front();
    ++full_launches_dropped_;
  }
}

std::optional<uint64_t> Escalation::replay_of_full_launch(uint64_t k) const {
  if (k < full_launches_dropped_ || k - full_launches_dropped_ >= full_launches_.size()) return std::nullopt;
  return full_launches_[k - full_launches_dropped_];
}

Outcome Escalation::on_drained(uint64_t replay, bool nonfinite) {
  // Replays run and drain in stream order: a hit on the replay after the last hit (or on the same
  // one) means no clean replay came between them.
  const bool follows_last_hit = last_hit_ && replay <= *last_hit_ + 1;
  if (nonfinite) last_hit_ = std::max(last_hit_.value_or(replay), replay);
  if (!escalated_) {
    if (!nonfinite) return Outcome::none;
    if (localized_ && follows_last_hit) return Outcome::none;  // the localized NaN still recurs
    localized_ = false;
    escalated_ = true;
    to_launch_ = to_drain_ = window_;
    recurred_ = false;
    first_seen_ = replay;
    return Outcome::escalate;
  }
  // Escalating: replays launched before the escalation took effect drain as sentinels; only the
  // window's own replays count.
  if (escalated_replays_.erase(replay) == 0) return Outcome::none;
  recurred_ = recurred_ || nonfinite;
  if (--to_drain_ > 0) return Outcome::none;
  escalated_ = false;
  to_launch_ = 0;
  localized_ = recurred_;
  return recurred_ ? Outcome::localized : Outcome::did_not_recur;
}

void Escalation::on_full_launch(uint64_t replay) {
  if (full_replays_.size() >= kFullReplays) full_replays_.pop_front();
  full_replays_.push_back(replay);
  note_full_launch(replay);
}

bool Escalation::full_replay(uint64_t replay) const {
  return std::find(full_replays_.begin(), full_replays_.end(), replay) != full_replays_.end();
}

bool EagerSample::should_scan(uint64_t launch_id, uint32_t kernel_id, bool always) {
  if (always || launch_id < window_end_ || launch_id % period_ == 0) return true;
  if (seen_kernels_.size() >= max_kernels_ || seen_kernels_.count(kernel_id)) return false;
  seen_kernels_.insert(kernel_id);
  return true;
}

bool EagerSample::on_hit(uint64_t next_launch_id) {
  window_end_ = std::max(window_end_, next_launch_id + window_);
  if (!windows_.empty() && next_launch_id <= windows_.back().second) {  // the open window goes on
    windows_.back().second = window_end_;
    return false;
  }
  windows_.emplace_back(next_launch_id, window_end_);
  if (windows_.size() > kWindows) windows_.pop_front();
  return true;
}

bool EagerSample::in_window(uint64_t launch_id) const {
  return std::any_of(windows_.begin(), windows_.end(),
                     [&](const auto& w) { return launch_id >= w.first && launch_id < w.second; });
}

}  // namespace nanscope::sentinel

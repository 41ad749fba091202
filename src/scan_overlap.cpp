#include "scan_overlap.hpp"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <utility>

#include "decode/written.hpp"

namespace nanscope::overlap {

void adjacency(uint32_t n, const std::vector<Edge>& edges, Children& children, Children& parents) {
  children.assign(n, {});
  parents.assign(n, {});
  for (const Edge& e : edges) {
    if (e.from >= n || e.to >= n || e.from == e.to) continue;
    children[e.from].push_back(e.to);
    parents[e.to].push_back(e.from);
  }
}

namespace {

bool writes_into(const Node& n, const std::vector<Range>& reads) {
  if (n.kind == NodeKind::opaque) return true;
  for (const Range& w : n.writes)
    for (const Range& r : reads)
      if (w.overlaps(r)) return true;
  return false;
}

// Per-search marks over the nodes, told apart by a stamp so nothing is cleared between searches.
struct Marks {
  explicit Marks(uint32_t n)
      : seen_needing_scan(n, 0), seen(n, 0), targeted(n, 0), in_frontier(n, 0), is_child(n, 0), is_parent_child(n, 0) {}
  std::vector<uint32_t> seen_needing_scan, seen, targeted, in_frontier, is_child, is_parent_child;
  uint32_t stamp = 0;

  // Adds v, once per search, to the nodes that must run after the scan.
  void target(uint32_t v, std::vector<uint32_t>& targets) {
    if (targeted[v] != stamp) targeted[v] = stamp, targets.push_back(v);
  }
};


// Kahn's order: every node after all its parents. Shorter than the node count when the graph
// has a cycle.
std::vector<uint32_t> topological_order(const Children& children, const Children& parents) {
  const auto n = static_cast<uint32_t>(children.size());
  std::vector<uint32_t> pending(n), order;
  order.reserve(n);
  for (uint32_t v = 0; v < n; ++v)
    if ((pending[v] = static_cast<uint32_t>(parents[v].size())) == 0) order.push_back(v);
  for (std::size_t i = 0; i < order.size(); ++i)
    for (uint32_t c : children[order[i]])
      if (--pending[c] == 0) order.push_back(c);
  return order;
}

// The search ran out of visits at the front of `queue`: the scan then runs before everything not
// searched yet, at once. A scan on the frontier leaves the path itself, so what follows it is
// ordered instead. True when the frontier grows past max_frontier (the scan is left as it is).
bool target_frontier(std::deque<std::pair<uint32_t, bool>>& queue, const std::vector<Node>& nodes,
                     const Children& children, const Limits& limits, Marks& m, std::vector<uint32_t>& targets) {
  const std::size_t searched = targets.size();
  bool give_up = false;
  while (!queue.empty() && !give_up) {
    auto [f, need] = queue.front();
    queue.pop_front();
    if (m.in_frontier[f] == m.stamp && !need) continue;
    m.in_frontier[f] = m.stamp;
    if (nodes[f].kind == NodeKind::scan) {
      if (need) m.target(f, targets);
      for (uint32_t c : children[f]) queue.emplace_back(c, false);
    } else {
      m.target(f, targets);
    }
    give_up = targets.size() - searched > limits.max_frontier;
  }
  return give_up;
}

// Scan s's edge changes, given the nodes that must run after it (`targets`, marked in
// m.targeted with the stamp before the current one).
ScanPlan plan_for(uint32_t s, uint32_t p, const Children& children, const std::vector<uint32_t>& targets, Marks& m) {
  ScanPlan sp;
  sp.scan = s;
  sp.parent = p;
  ++m.stamp;  // fresh marks for the child sets
  for (uint32_t c : children[p]) m.is_parent_child[c] = m.stamp;
  for (uint32_t c : children[s]) m.is_child[c] = m.stamp;
  const uint32_t target_stamp = m.stamp - 1;
  for (uint32_t c : children[s]) {
    if (m.targeted[c] == target_stamp) continue;  // S -> c stays
    (m.is_parent_child[c] == m.stamp ? sp.dropped : sp.moved).push_back(c);
  }
  for (uint32_t t : targets)
    if (m.is_child[t] != m.stamp) sp.ordered.push_back(t);
  return sp;
}

}  // namespace

std::vector<ScanPlan> plan(const std::vector<Node>& nodes, const std::vector<Edge>& edges, const Limits& limits) {
  const auto n = static_cast<uint32_t>(nodes.size());
  Children children, parents;
  adjacency(n, edges, children, parents);
  Marks m(n);
  std::vector<ScanPlan> plans;

  for (uint32_t s = 0; s < n; ++s) {
    if (nodes[s].kind != NodeKind::scan || parents[s].size() != 1) continue;
    const uint32_t p = parents[s][0];
    if (is_scan(nodes[p].kind) || children[s].empty()) continue;
    ++m.stamp;
    std::vector<uint32_t> targets;
    // BFS over what ran after the scan. `need_scan`: no scan between here and S yet, so the
    // first one met must follow S (it reads the state words S writes).
    std::deque<std::pair<uint32_t, bool>> queue;
    for (uint32_t c : children[s]) queue.emplace_back(c, true);
    uint32_t visits = 0;
    bool give_up = false;
    while (!queue.empty()) {
      auto [v, need_scan] = queue.front();
      queue.pop_front();
      if (m.seen_needing_scan[v] == m.stamp || (!need_scan && m.seen[v] == m.stamp)) continue;
      (need_scan ? m.seen_needing_scan[v] : m.seen[v]) = m.stamp;
      if (++visits > limits.max_visits) {
        queue.emplace_front(v, need_scan);
        give_up = target_frontier(queue, nodes, children, limits, m, targets);
        break;
      }
      const Node& node = nodes[v];
      if (node.kind != NodeKind::scan && writes_into(node, nodes[s].reads)) {
        m.target(v, targets);  // everything below v runs after v, hence after S
        continue;
      }
      if (is_scan(node.kind) && need_scan) {
        m.target(v, targets);
        need_scan = false;
      }
      for (uint32_t c : children[v]) queue.emplace_back(c, need_scan);
    }
    if (give_up) continue;
    ScanPlan sp = plan_for(s, p, children, targets, m);
    if (!sp.moved.empty() || !sp.dropped.empty()) plans.push_back(std::move(sp));
  }
  return plans;
}

namespace {

// The room a merged node keeps (GroupLimits::min_slack): the app nodes (weight 0) in the
// topological order from the latest app parent of its members to their earliest app child, both
// outside the node.
class Room {
 public:
  Room(const std::vector<uint32_t>& order, const std::vector<uint32_t>& weight, const Children& children,
       const Children& parents)
      : weight_(weight), children_(children), parents_(parents), app_rank_(order.size()) {
    uint32_t apps = 0;
    for (uint32_t v : order) app_rank_[v] = apps += is_app(v) ? 1 : 0;  // app nodes up to v
  }
  // Of `members` plus `v` (`inside(x)`: x is one of them); ~0 when no app node follows them.
  template <class Inside>
  uint32_t slack(const std::vector<uint32_t>& members, uint32_t v, Inside inside) const {
    uint32_t latest = 0, earliest = ~0u;
    auto take = [&](uint32_t m) {
      for (uint32_t p : parents_[m])
        if (is_app(p) && !inside(p)) latest = std::max(latest, app_rank_[p]);
      for (uint32_t c : children_[m])
        if (is_app(c) && !inside(c)) earliest = std::min(earliest, app_rank_[c]);
    };
    for (uint32_t m : members) take(m);
    take(v);
    return earliest == ~0u ? ~0u : earliest > latest ? earliest - latest : 0u;
  }

 private:
  bool is_app(uint32_t x) const { return x >= weight_.size() || weight_[x] == 0; }
  const std::vector<uint32_t>& weight_;
  const Children &children_, &parents_;
  std::vector<uint32_t> app_rank_;
};

}  // namespace

std::vector<std::vector<uint32_t>> group(uint32_t n, const std::vector<Edge>& edges, const std::vector<uint32_t>& weight,
                                         const GroupLimits& limits) {
  Children children, parents;
  adjacency(n, edges, children, parents);
  // Every member joins after the members it may depend on.
  const std::vector<uint32_t> order = topological_order(children, parents);
  if (order.size() != n) return {};  // not a DAG: leave it alone

  std::vector<uint32_t> position(n);
  for (uint32_t i = 0; i < n; ++i) position[order[i]] = i;
  const Room room(order, weight, children, parents);

  std::vector<std::vector<uint32_t>> groups;
  std::vector<uint32_t> current;
  std::vector<uint32_t> member(n, 0), seen(n, 0);  // marks told apart by group id / search stamp
  uint32_t id = 1, stamp = 0, total = 0, first = 0;  // first: order position of the group's first member
  std::vector<uint32_t> stack;
  // Whether a parent of `v` outside the group is reached from a member through nodes outside the
  // group. Searches upwards from v's parents; a node placed before the group's first member
  // cannot be reached from it, so the search stays inside the stretch of the order the group
  // spans. Too long a search counts as reached.
  auto reached_from_group = [&](uint32_t v) {
    ++stamp;
    stack.clear();
    uint32_t visits = 0;
    auto visit = [&](uint32_t x) {
      if (member[x] == id) return true;
      if (position[x] > first && seen[x] != stamp) seen[x] = stamp, stack.push_back(x);
      return false;
    };
    for (uint32_t p : parents[v])
      if (member[p] != id) visit(p);
    while (!stack.empty()) {
      const uint32_t x = stack.back();
      stack.pop_back();
      if (++visits > limits.max_visits) return true;
      for (uint32_t q : parents[x])
        if (visit(q)) return true;
    }
    return false;
  };
  std::vector<uint32_t> own_slack(n, ~0u);
  uint32_t tightest = ~0u;  // the least own slack among the current group's members
  auto keeps_slack = [&](uint32_t v) {
    const uint32_t merged = room.slack(current, v, [&](uint32_t x) { return x == v || member[x] == id; });
    return merged >= limits.min_slack || merged >= std::min(tightest, own_slack[v]);
  };
  for (uint32_t v : order) {
    const uint32_t w = v < weight.size() ? weight[v] : 0;
    if (w == 0 || w > limits.max_weight) continue;
    own_slack[v] = room.slack({}, v, [v](uint32_t x) { return x == v; });
    if (!current.empty() && (total + w > limits.max_weight || reached_from_group(v) || !keeps_slack(v))) {
      if (current.size() >= 2) groups.push_back(current);
      current.clear();
      total = 0;
      ++id;
    }
    if (current.empty()) first = position[v], tightest = ~0u;
    member[v] = id;
    current.push_back(v);
    total += w;
    tightest = std::min(tightest, own_slack[v]);
  }
  if (current.size() >= 2) groups.push_back(current);
  return groups;
}

std::vector<Range> launch_writes(const std::vector<uint64_t>& words, const std::vector<KnownWrite>& exact,
                                 const std::vector<uint64_t>& inputs,
                                 const std::function<uint64_t(uint64_t)>& allocation_end) {
  std::vector<Range> out;
  auto listed = [](const auto& list, uint64_t v, auto key) {
    for (const auto& e : list)
      if (key(e) == v) return true;
    return false;
  };
  for (const KnownWrite& w : exact)
    if (w.ptr && w.bytes) out.push_back({w.ptr, w.ptr + w.bytes});
  for (uint64_t v : words) {
    if (!v || listed(exact, v, [](const KnownWrite& w) { return w.bytes ? w.ptr : 0; })) continue;
    if (listed(inputs, v, [](uint64_t p) { return p; })) continue;
    const uint64_t end = allocation_end ? allocation_end(v) : 0;
    out.push_back({v, end > v ? end : v + 1});
  }
  return out;
}

void add_decoded_io(const decode::Decoded& d, std::vector<KnownWrite>& exact, std::vector<uint64_t>& inputs) {
  for (uint32_t i = 0; i < d.write_count; ++i)
    if (!d.writes[i].extent_from_block) exact.push_back({d.writes[i].ptr, d.writes[i].span_bytes});
  inputs.insert(inputs.end(), d.reads, d.reads + d.read_count);
  inputs.insert(inputs.end(), d.no_nan_reads, d.no_nan_reads + d.no_nan_read_count);
}

namespace {

std::string write_source(const Node& n, size_t write) {
  switch (n.model) {
    case WriteModel::node_params: return "a memset or memcpy destination";
    case WriteModel::decoded:
      return write < n.exact_writes ? "its decoder's exact write"
                                    : "a pointer word its decoder names neither written nor read, to the end of its allocation";
    default: return "a pointer word of a kernel without a decoder, to the end of its allocation";
  }
}

}  // namespace

std::string in_line_reason(const Node& scan, uint32_t parents, const Node* parent, const Node* child) {
  if (parents != 1) return "the scan has " + std::to_string(parents) + " parents";
  if (parent && is_scan(parent->kind)) return "the scan follows another scan";
  if (!child) return "nothing runs after the scan";
  if (child->kind == NodeKind::opaque) return "the next node is opaque (may write anything)";
  for (size_t i = 0; i < child->writes.size(); ++i)
    for (const Range& r : scan.reads) {
      const Range& w = child->writes[i];
      if (!w.overlaps(r)) continue;
      const std::string at = w.lo >= r.lo ? "+" + std::to_string(w.lo - r.lo) : "-" + std::to_string(r.lo - w.lo);
      return "the next node writes " + std::to_string(w.hi - w.lo) + " bytes at " + at + " of a " +
             std::to_string(r.hi - r.lo) + "-byte read (" + write_source(*child, i) + ")";
    }
  return "the next node writes none of it (a later node does)";
}

Chain longest_chain(const std::vector<NodeKind>& kinds, const std::vector<Edge>& edges) {
  const auto n = static_cast<uint32_t>(kinds.size());
  Children children, parents;
  adjacency(n, edges, children, parents);
  const std::vector<uint32_t> order = topological_order(children, parents);
  if (order.size() != n) return {};  // not a DAG: nothing to say
  std::vector<Chain> best(n);  // the longest chain ending at v (v included)
  Chain top;
  auto longer = [](const Chain& a, const Chain& b) { return a.nodes > b.nodes || (a.nodes == b.nodes && a.scans > b.scans); };
  for (uint32_t v : order) {
    best[v].nodes += 1;
    best[v].scans += is_scan(kinds[v]) ? 1 : 0;
    if (longer(best[v], top)) top = best[v];
    for (uint32_t c : children[v])
      if (longer(best[v], best[c])) best[c] = best[v];
  }
  return top;
}

EdgePort edge_port(GraphPdl mode, EdgeRole from, EdgeRole to) {
  if (mode == GraphPdl::off) return EdgePort::full;
  if (from == EdgeRole::read_only_scan && to == EdgeRole::app_kernel) return EdgePort::programmatic;
  if (mode == GraphPdl::both && from == EdgeRole::app_kernel && to == EdgeRole::read_only_scan)
    return EdgePort::launch_order;
  return EdgePort::full;
}

std::vector<std::pair<uint32_t, std::string>> in_line_summary(const std::vector<Node>& model,
                                                              const std::vector<Edge>& edges,
                                                              const std::vector<bool>& planned,
                                                              const std::function<std::string(uint32_t)>& name,
                                                              size_t most) {
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> parent(model.size(), kNone), child(model.size(), kNone);  // one edge each way is enough to name it
  std::vector<uint32_t> parent_count(model.size(), 0);
  for (const Edge& e : edges)
    if (e.from < model.size() && e.to < model.size()) parent[e.to] = e.from, child[e.from] = e.to, ++parent_count[e.to];
  std::map<std::string, uint32_t> pairs;
  for (uint32_t s = 0; s < model.size(); ++s) {
    if (model[s].kind != NodeKind::scan || planned[s]) continue;
    const std::string before = parent[s] == kNone ? "?" : name(parent[s]);
    const std::string after = child[s] == kNone ? "(none)" : name(child[s]);
    const Node* before_node = parent[s] == kNone ? nullptr : &model[parent[s]];
    const Node* after_node = child[s] == kNone ? nullptr : &model[child[s]];
    const std::string why = in_line_reason(model[s], parent_count[s], before_node, after_node);
    ++pairs[before + "  ->  " + after + ": " + why];
  }
  std::vector<std::pair<uint32_t, std::string>> top;
  for (auto& [k, n] : pairs) top.emplace_back(n, k);
  std::sort(top.rbegin(), top.rend());
  if (top.size() > most) top.resize(most);
  return top;
}

}  // namespace nanscope::overlap

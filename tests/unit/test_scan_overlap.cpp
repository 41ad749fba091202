// scan_overlap: which edges take a scan node off a graph's critical path, and why the result
// still orders the scan before every later writer of what it reads and before later scans.
#include "scan_overlap.hpp"
#include "pass_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

using namespace nanscope::overlap;
using nanscope::GraphPdl;

namespace {

using EdgeSet = std::set<std::pair<uint32_t, uint32_t>>;

Node app(std::vector<Range> writes) { return Node{NodeKind::app, std::move(writes), {}}; }
Node scan(std::vector<Range> reads) { return Node{NodeKind::scan, {}, std::move(reads)}; }
Range buf(uint64_t i) { return Range{0x1000 * (i + 1), 0x1000 * (i + 1) + 0x800}; }
Range ptr(uint64_t i) { return Range{0x1000 * (i + 1) + 0x10, 0x1000 * (i + 1) + 0x11}; }  // a pointer word into buffer i

EdgeSet edge_set(const std::vector<Edge>& edges) {
  EdgeSet s;
  for (const Edge& e : edges) s.emplace(e.from, e.to);
  return s;
}

EdgeSet with_plans(EdgeSet g, const std::vector<ScanPlan>& plans) {
  for (const ScanPlan& p : plans) {
    for (uint32_t c : p.moved) {
      EXPECT_TRUE(g.erase({p.scan, c})) << "moved edge " << p.scan << "->" << c << " must exist";
      EXPECT_TRUE(g.emplace(p.parent, c).second) << "parent edge " << p.parent << "->" << c << " must be new";
    }
    for (uint32_t c : p.dropped) {
      EXPECT_TRUE(g.erase({p.scan, c}));
      EXPECT_TRUE(g.count({p.parent, c}));
    }
    for (uint32_t t : p.ordered) EXPECT_TRUE(g.emplace(p.scan, t).second) << "ordered edge must be new";
  }
  return g;
}

// reach[a][b]: b runs after a.
std::vector<std::vector<bool>> closure(uint32_t n, const EdgeSet& g) {
  std::vector<std::vector<uint32_t>> ch(n);
  for (auto [a, b] : g) ch[a].push_back(b);
  std::vector<std::vector<bool>> r(n, std::vector<bool>(n, false));
  for (uint32_t s = 0; s < n; ++s) {
    std::vector<uint32_t> st{s};
    while (!st.empty()) {
      const uint32_t v = st.back();
      st.pop_back();
      for (uint32_t c : ch[v])
        if (!r[s][c]) r[s][c] = true, st.push_back(c);
    }
  }
  return r;
}

bool may_write(const Node& n, const std::vector<Range>& reads) {
  if (n.kind == NodeKind::opaque) return true;
  for (const Range& w : n.writes)
    for (const Range& rd : reads)
      if (w.overlaps(rd)) return true;
  return false;
}

// The three promises, checked against the graph before and after.
void expect_sound(const std::vector<Node>& nodes, const EdgeSet& before, const EdgeSet& after) {
  const auto n = static_cast<uint32_t>(nodes.size());
  const auto r0 = closure(n, before), r1 = closure(n, after);
  for (uint32_t a = 0; a < n; ++a) {
    ASSERT_FALSE(r1[a][a]) << "cycle through " << a;
    for (uint32_t b = 0; b < n; ++b) {
      const bool a_scan = nodes[a].kind == NodeKind::scan, b_scan = nodes[b].kind == NodeKind::scan;
      if (!a_scan && !b_scan)
        EXPECT_EQ(r0[a][b], r1[a][b]) << "app order " << a << " -> " << b << " changed";
      if (a_scan && b_scan && r0[a][b]) EXPECT_TRUE(r1[a][b]) << "scan " << a << " must still precede scan " << b;
      if (nodes[b].kind == NodeKind::pinned_scan && a_scan && r0[a][b])
        EXPECT_TRUE(r1[a][b]) << "scan " << a << " must still precede pinned scan " << b;
      if (a_scan && !b_scan && r0[a][b] && may_write(nodes[b], nodes[a].reads))
        EXPECT_TRUE(r1[a][b]) << "scan " << a << " must precede " << b << ", which may write what it reads";
      if (!a_scan && b_scan && r0[a][b]) EXPECT_TRUE(r1[a][b]) << "scan " << b << " must still follow " << a;
    }
  }
}

TEST(ScanOverlap, ChainOfTypedKernelsRunsScansBesideTheChain) {
  // K0 -> S0 -> K1 -> S1 -> K2 -> S2, each K_i writes buffer i (as a captured decode step).
  std::vector<Node> nodes{app({ptr(0)}), scan({buf(0)}), app({ptr(1)}), scan({buf(1)}), app({ptr(2)}), scan({buf(2)})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}};
  const auto plans = plan(nodes, edges);
  ASSERT_EQ(plans.size(), 2u);  // S2 has no dependents: nothing to move
  const EdgeSet after = with_plans(edge_set(edges), plans);
  EXPECT_EQ(after, (EdgeSet{{0, 1}, {0, 2}, {2, 3}, {2, 4}, {4, 5}, {1, 3}, {3, 5}}));
  expect_sound(nodes, edge_set(edges), after);
}

TEST(ScanOverlap, ALaterWriterOfTheBufferWaitsForTheScan) {
  // K0 writes b0; K1 reads it; K2 writes b0 again (in place): S0 must finish before K2.
  std::vector<Node> nodes{app({ptr(0)}), scan({buf(0)}), app({ptr(1)}), app({ptr(0)})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {2, 3}};
  const auto plans = plan(nodes, edges);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].moved, std::vector<uint32_t>{2});
  EXPECT_EQ(plans[0].ordered, std::vector<uint32_t>{3});
  expect_sound(nodes, edge_set(edges), with_plans(edge_set(edges), plans));
}

TEST(ScanOverlap, TheNextWriterOfTheBufferKeepsTheScanInPlace) {
  std::vector<Node> nodes{app({ptr(0)}), scan({buf(0)}), app({ptr(0)})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}};
  EXPECT_TRUE(plan(nodes, edges).empty());
}

TEST(ScanOverlap, OpaqueNodesAndFixingScansAreOrderedAfterTheScan) {
  std::vector<Node> nodes{app({ptr(0)}), scan({buf(0)}), app({ptr(1)}), Node{NodeKind::opaque, {}, {}},
                          app({ptr(2)}), Node{NodeKind::pinned_scan, {buf(2)}, {buf(2)}}, app({})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}};
  const auto plans = plan(nodes, edges);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].ordered, std::vector<uint32_t>{3});  // the opaque node ends the search
  expect_sound(nodes, edge_set(edges), with_plans(edge_set(edges), plans));
  // Without the opaque node the fixing scan is the next scan downstream.
  nodes[3] = app({});
  const auto plans2 = plan(nodes, edges);
  ASSERT_EQ(plans2.size(), 1u);
  EXPECT_EQ(plans2[0].ordered, std::vector<uint32_t>{5});
  expect_sound(nodes, edge_set(edges), with_plans(edge_set(edges), plans2));
}

TEST(ScanOverlap, PinnedScansAndScansWithTwoParentsStay) {
  std::vector<Node> nodes{app({ptr(0)}), Node{NodeKind::pinned_scan, {buf(0)}, {buf(0)}}, app({ptr(1)}),
                          app({ptr(2)}), scan({buf(2)}), app({})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {0, 3}, {2, 4}, {3, 4}, {4, 5}};
  EXPECT_TRUE(plan(nodes, edges).empty());
}

TEST(ScanOverlap, AChildTheParentAlreadyReachesIsDroppedNotMoved) {
  // K0 -> S0 -> K1 and K0 -> K1 (a diamond the capture made).
  std::vector<Node> nodes{app({ptr(0)}), scan({buf(0)}), app({ptr(1)})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {0, 2}};
  const auto plans = plan(nodes, edges);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_TRUE(plans[0].moved.empty());
  EXPECT_EQ(plans[0].dropped, std::vector<uint32_t>{2});
  expect_sound(nodes, edge_set(edges), with_plans(edge_set(edges), plans));
}

TEST(ScanOverlap, ALongChainIsSearchedOnlyUpToTheLimit) {
  // S0 reads b0, and 50 kernels follow that never touch it, the last of which writes b0.
  std::vector<Node> nodes{app({ptr(0)}), scan({buf(0)})};
  std::vector<Edge> edges{{0, 1}};
  for (uint32_t i = 0; i < 50; ++i) {
    nodes.push_back(app({ptr(1 + i % 3)}));
    edges.push_back({static_cast<uint32_t>(nodes.size() - 2), static_cast<uint32_t>(nodes.size() - 1)});
  }
  nodes.back() = app({ptr(0)});
  Limits limits;
  limits.max_visits = 8;
  const auto plans = plan(nodes, edges, limits);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].ordered, std::vector<uint32_t>{10});  // the ninth node after the scan
  expect_sound(nodes, edge_set(edges), with_plans(edge_set(edges), plans));
  limits.max_frontier = 0;  // a frontier it may not order: the scan stays
  EXPECT_TRUE(plan(nodes, edges, limits).empty());
}

TEST(ScanOverlap, ScansInParallelBranchesEachFollowOnlyTheirOwnKernel) {
  // K0 forks into K1 and K2 (each scanned), which join in K3 that writes b1.
  std::vector<Node> nodes{app({ptr(0)}), app({ptr(1)}), scan({buf(1)}), app({ptr(2)}), scan({buf(2)}), app({ptr(1)})};
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {0, 3}, {3, 4}, {2, 5}, {4, 5}};
  const auto plans = plan(nodes, edges);
  const EdgeSet after = with_plans(edge_set(edges), plans);
  EXPECT_TRUE(after.count({2, 5}));   // K3 writes b1: S1 stays before it
  EXPECT_FALSE(after.count({4, 5}));  // S2's buffer is not written by K3
  EXPECT_TRUE(after.count({3, 5}));
  expect_sound(nodes, edge_set(edges), after);
}

// Random DAGs built the way capture and instantiate-time instrumentation build them: app nodes
// with random edges, a scan inserted after some of them (their dependents moved behind it).
TEST(ScanOverlap, RandomGraphsKeepEveryOrderingThatMatters) {
  std::mt19937 rng(7);
  size_t detached = 0;
  for (int round = 0; round < 1000; ++round) {
    const uint32_t apps = 2 + rng() % 18;
    std::vector<Node> nodes;
    EdgeSet g;
    std::vector<uint32_t> id(apps);
    for (uint32_t i = 0; i < apps; ++i) {
      const uint32_t r = rng() % 10;
      if (r == 0) nodes.push_back(Node{NodeKind::opaque, {}, {}});
      else if (r == 1) nodes.push_back(app({}));
      else nodes.push_back(app({ptr(rng() % 4)}));
      id[i] = i;
      for (uint32_t j = 0; j < i; ++j)
        if (rng() % 4 == 0) g.emplace(j, i);
    }
    for (uint32_t i = 0; i < apps; ++i) {
      if (nodes[i].writes.empty() || rng() % 3 == 0) continue;
      const auto s = static_cast<uint32_t>(nodes.size());
      const Range b{nodes[i].writes[0].lo & ~0xfffull, (nodes[i].writes[0].lo & ~0xfffull) + 0x800};
      nodes.push_back(rng() % 5 == 0 ? Node{NodeKind::pinned_scan, {b}, {b}} : scan({b}));
      EdgeSet moved;
      for (auto it = g.begin(); it != g.end();) {
        if (it->first == i) moved.emplace(s, it->second), it = g.erase(it);
        else ++it;
      }
      g.insert(moved.begin(), moved.end());
      g.emplace(i, s);
    }
    std::vector<Edge> edges;
    for (auto [a, b] : g) edges.push_back({a, b});
    Limits limits;
    limits.max_visits = 1 + rng() % 12;
    const auto plans = plan(nodes, edges, limits);
    detached += plans.size();
    expect_sound(nodes, g, with_plans(g, plans));
    // Any subset of the plans is sound too (the engine may fail to apply one).
    std::vector<ScanPlan> some;
    for (const ScanPlan& p : plans)
      if (rng() % 2) some.push_back(p);
    expect_sound(nodes, g, with_plans(g, some));
    if (HasFailure()) {
      std::string d;
      for (uint32_t i = 0; i < nodes.size(); ++i) d += std::to_string(i) + ":" + std::to_string((int)nodes[i].kind) + (nodes[i].writes.empty() ? std::string("") : " w" + std::to_string(nodes[i].writes[0].lo)) + (nodes[i].reads.empty() ? std::string("") : " r" + std::to_string(nodes[i].reads[0].lo)) + "\n";
      for (auto [a, b] : g) d += std::to_string(a) + "->" + std::to_string(b) + " ";
      d += "\nplans:";
      for (auto& p : plans) { d += " S" + std::to_string(p.scan) + " P" + std::to_string(p.parent) + " m"; for (auto c : p.moved) d += std::to_string(c) + ","; d += " o"; for (auto c : p.ordered) d += std::to_string(c) + ","; d += " d"; for (auto c : p.dropped) d += std::to_string(c) + ","; }
      FAIL() << "round " << round << " limit " << limits.max_visits << "\n" << d;
    }
  }
  EXPECT_GT(detached, 2000u);  // the graphs do give it scans to move
}

// ---- group(): scan nodes merged into one.

// The graph with each group contracted into its first member.
EdgeSet contracted(const EdgeSet& g, const std::vector<std::vector<uint32_t>>& groups, std::vector<uint32_t>& rep) {
  for (uint32_t i = 0; i < rep.size(); ++i) rep[i] = i;
  for (const auto& grp : groups)
    for (uint32_t m : grp) rep[m] = grp.front();
  EdgeSet out;
  for (auto [a, b] : g)
    if (rep[a] != rep[b]) out.emplace(rep[a], rep[b]);
  return out;
}

std::vector<Edge> edge_list(const EdgeSet& g) {
  std::vector<Edge> edges;
  for (auto [a, b] : g) edges.push_back({a, b});
  return edges;
}

// The chain after overlap: K_i -> K_i+1, K_i -> S_i, S_i -> S_i+1 (K_i is node 2i, S_i node 2i+1).
EdgeSet scans_beside_chain(uint32_t kernels) {
  EdgeSet g;
  for (uint32_t i = 0; i < kernels; ++i) {
    g.emplace(2 * i, 2 * i + 1);
    if (i + 1 < kernels) g.emplace(2 * i, 2 * i + 2), g.emplace(2 * i + 1, 2 * i + 3);
  }
  return g;
}

TEST(ScanOverlap, InLineReasonNamesTheOverlapBySizeAndOffset) {
  const Node s = scan({buf(0)});  // 0x1000 .. 0x1800
  const Node a_kernel = app({buf(0)});  // the scan's writer
  const Node writes_inside = app({Range{0x1100, 0x1200}});
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &writes_inside), "the next node writes 256 bytes at +256 of a 2048-byte read (a pointer word of a kernel without a decoder, to the end of its allocation)");
  const Node writes_from_below = app({Range{0x0800, 0x2000}});  // a pointer word's "to the end of its allocation"
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &writes_from_below), "the next node writes 6144 bytes at -2048 of a 2048-byte read (a pointer word of a kernel without a decoder, to the end of its allocation)");
  const Node elsewhere = app({buf(3)});
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &elsewhere), "the next node writes none of it (a later node does)");
  const Node opaque{NodeKind::opaque, {}, {}};
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &opaque), "the next node is opaque (may write anything)");
  EXPECT_EQ(in_line_reason(s, 2, &a_kernel, &writes_inside), "the scan has 2 parents");
  EXPECT_EQ(in_line_reason(s, 1, &s, &writes_inside), "the scan follows another scan");
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, nullptr), "nothing runs after the scan");
}

TEST(ScanOverlap, InLineReasonSaysWhereTheOverlappingWriteCameFrom) {
  const Node s = scan({buf(0)});  // 0x1000 .. 0x1800
  const Node a_kernel = app({buf(0)});
  Node decoded = app({Range{0x4000, 0x4100}, Range{0x1000, 0x1100}, Range{0x1000, 0x9000}});
  decoded.model = WriteModel::decoded;
  decoded.exact_writes = 2;  // the first two are exact, the third a word it did not name
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &decoded),
            "the next node writes 256 bytes at +0 of a 2048-byte read (its decoder's exact write)");
  decoded.writes.erase(decoded.writes.begin() + 1);
  decoded.exact_writes = 1;
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &decoded),
            "the next node writes 32768 bytes at +0 of a 2048-byte read (a pointer word its decoder names neither "
            "written nor read, to the end of its allocation)");
  Node memset_node = app({Range{0x1400, 0x1500}});
  memset_node.model = WriteModel::node_params;
  EXPECT_EQ(in_line_reason(s, 1, &a_kernel, &memset_node),
            "the next node writes 256 bytes at +1024 of a 2048-byte read (a memset or memcpy destination)");
}

TEST(ScanGroups, ScansBesideAChainMergeEightAtATime) {
  const uint32_t kernels = 50;
  std::vector<uint32_t> weight(2 * kernels, 0);
  for (uint32_t i = 0; i < kernels; ++i) weight[2 * i + 1] = 1;
  const auto groups = group(2 * kernels, edge_list(scans_beside_chain(kernels)), weight);
  ASSERT_EQ(groups.size(), 7u);  // 6 x 8 + 2
  for (uint32_t g = 0; g < groups.size(); ++g) {
    std::vector<uint32_t> want;
    for (uint32_t i = 8 * g; i < std::min(kernels, 8 * g + 8); ++i) want.push_back(2 * i + 1);
    EXPECT_EQ(groups[g], want) << "group " << g << " holds consecutive scans in chain order";
  }
}

TEST(ScanGroups, AScanOrderedBeforeALaterWriterEndsTheGroupBeforeThatWriter) {
  // S0 must run before K2 (K2 rewrites S0's buffer), so S2, which follows K2, cannot join S0.
  EdgeSet g = scans_beside_chain(4);
  g.emplace(1, 4);
  std::vector<uint32_t> weight{0, 1, 0, 1, 0, 1, 0, 1};
  GroupLimits any_slack;
  any_slack.min_slack = 0;
  EXPECT_EQ(group(8, edge_list(g), weight, any_slack), (std::vector<std::vector<uint32_t>>{{1, 3}, {5, 7}}));
  // With the default slack S0 stays alone: merged with S1, it would wait for K1 and still run
  // before K2, one app node of room where S0 alone has two. S1 then heads the group.
  EXPECT_EQ(group(8, edge_list(g), weight), (std::vector<std::vector<uint32_t>>{{3, 5, 7}}));
}

// Scans beside a chain whose buffers are rewritten `reuse` kernels later (a graph pool handing
// each block out again): S_i -> K_{i+reuse}.
EdgeSet scans_before_reuse(uint32_t kernels, uint32_t reuse) {
  EdgeSet g = scans_beside_chain(kernels);
  for (uint32_t i = 0; i + reuse < kernels; ++i) g.emplace(2 * i + 1, 2 * (i + reuse));
  return g;
}

TEST(ScanGroups, ScansWhoseBuffersAreSoonRewrittenStayApart) {
  // Each scan has two kernels of room; any two merged would have one: no merge.
  const uint32_t kernels = 40;
  std::vector<uint32_t> weight(2 * kernels, 0);
  for (uint32_t i = 0; i < kernels; ++i) weight[2 * i + 1] = 1;
  const auto g = edge_list(scans_before_reuse(kernels, 2));
  const auto groups = group(2 * kernels, g, weight);
  ASSERT_EQ(groups.size(), 1u);  // only the last two, which no kernel rewrites
  EXPECT_EQ(groups[0], (std::vector<uint32_t>{2 * (kernels - 2) + 1, 2 * (kernels - 1) + 1}));
  GroupLimits tight;
  tight.min_slack = 1;
  EXPECT_EQ(group(2 * kernels, g, weight, tight).size(), kernels / 2);  // pairs, as room allows
}

TEST(ScanGroups, ScansWithRoomMergeEightAtATime) {
  // Rewritten 20 kernels later: eight merged still have 13 kernels of room.
  const uint32_t kernels = 64;
  std::vector<uint32_t> weight(2 * kernels, 0);
  for (uint32_t i = 0; i < kernels; ++i) weight[2 * i + 1] = 1;
  const auto groups = group(2 * kernels, edge_list(scans_before_reuse(kernels, 20)), weight);
  ASSERT_EQ(groups.size(), kernels / 8);
  for (const auto& grp : groups) EXPECT_EQ(grp.size(), 8u);
}

TEST(ScanGroups, BuffersBeyondTheLimitStartANewGroupAndSingletonsStay) {
  std::vector<uint32_t> weight{0, 3, 0, 3, 0, 3, 0, 9};
  const auto groups = group(8, edge_list(scans_beside_chain(4)), weight);
  EXPECT_EQ(groups, (std::vector<std::vector<uint32_t>>{{1, 3}}));  // 5 alone; 7 never fits
}

TEST(ScanGroups, AScanInLineCannotMerge) {
  // K0 -> S0 -> K1 -> S1: S1 follows K1, which waits for S0.
  const std::vector<Edge> edges{{0, 1}, {1, 2}, {2, 3}};
  EXPECT_TRUE(group(4, edges, {0, 1, 0, 1}).empty());
}

TEST(ScanGroups, ASearchOverItsLimitClosesTheGroup) {
  // K0 -> S0 and K0 -> A1 -> ... -> A10 -> S1, S0 -> S1: S1 may join S0, but proving it walks up
  // the ten app nodes placed after S0.
  EdgeSet g{{0, 1}, {0, 2}, {1, 12}, {11, 12}};
  for (uint32_t a = 2; a < 11; ++a) g.emplace(a, a + 1);
  std::vector<uint32_t> weight(13, 0);
  weight[1] = weight[12] = 1;
  EXPECT_EQ(group(13, edge_list(g), weight), (std::vector<std::vector<uint32_t>>{{1, 12}}));
  GroupLimits limits;
  limits.max_visits = 3;
  EXPECT_TRUE(group(13, edge_list(g), weight, limits).empty());
}

TEST(ScanGroups, ALongChainMergesAllTheWayDown) {
  // 2,000 kernels with their scans beside: every group is full, however far down the chain.
  const uint32_t kernels = 2000;
  std::vector<uint32_t> weight(2 * kernels, 0);
  for (uint32_t i = 0; i < kernels; ++i) weight[2 * i + 1] = 1;
  const auto groups = group(2 * kernels, edge_list(scans_beside_chain(kernels)), weight);
  ASSERT_EQ(groups.size(), kernels / 8);
  for (const auto& grp : groups) EXPECT_EQ(grp.size(), 8u);
}

TEST(ScanGroups, RandomGraphsStayAcyclicAndKeepEveryOrder) {
  std::mt19937 rng(11);
  size_t merged = 0;
  for (int round = 0; round < 2000; ++round) {
    const auto n = static_cast<uint32_t>(3 + rng() % 24);
    EdgeSet g;
    for (uint32_t j = 0; j < n; ++j)
      for (uint32_t i = j + 1; i < n; ++i)
        if (rng() % 5 == 0) g.emplace(j, i);
    std::vector<uint32_t> weight(n);
    for (uint32_t v = 0; v < n; ++v) weight[v] = rng() % 2 ? 1 + rng() % 4 : 0;
    GroupLimits limits;
    limits.max_visits = 1 + rng() % 30;
    const auto groups = group(n, edge_list(g), weight, limits);
    std::vector<uint32_t> rep(n);
    const EdgeSet after = contracted(g, groups, rep);
    const auto r0 = closure(n, g), r1 = closure(n, after);
    std::vector<uint32_t> seen(n, 0);
    for (const auto& grp : groups) {
      ASSERT_GE(grp.size(), 2u);
      uint32_t total = 0;
      for (uint32_t i = 0; i < grp.size(); ++i) {
        ASSERT_GT(weight[grp[i]], 0u);
        ASSERT_EQ(seen[grp[i]]++, 0u) << "a node in two groups";
        total += weight[grp[i]];
        for (uint32_t j = i + 1; j < grp.size(); ++j) EXPECT_FALSE(r0[grp[j]][grp[i]]) << "members out of order";
      }
      EXPECT_LE(total, limits.max_weight);
      merged += grp.size();
    }
    for (uint32_t a = 0; a < n; ++a) {
      ASSERT_FALSE(r1[a][a]) << "round " << round << ": cycle through " << a;
      for (uint32_t b = 0; b < n; ++b)
        if (r0[a][b] && rep[a] != rep[b]) EXPECT_TRUE(r1[rep[a]][rep[b]]) << "order " << a << " -> " << b << " lost";
    }
    if (HasFailure()) FAIL() << "round " << round;
  }
  EXPECT_GT(merged, 3000u);  // the graphs do give it scans to merge
}

}  // namespace

// --- launch_writes: what a kernel node may write, for the model -------------------------------

namespace {
// Two allocations: [0x10000, 0x20000) and [0x40000, 0x48000).
uint64_t alloc_end(uint64_t v) {
  if (v >= 0x10000 && v < 0x20000) return 0x20000;
  if (v >= 0x40000 && v < 0x48000) return 0x48000;
  return 0;
}
bool writes_any(const std::vector<Range>& writes, Range r) {
  return std::any_of(writes.begin(), writes.end(), [&](const Range& w) { return w.overlaps(r); });
}
}  // namespace

TEST(LaunchWrites, ADecodersExactWriteIsTakenAsItIs) {
  // data[0] = 0x18000 (the output, 0x100 bytes), data[1] = 0x10000 (an input it names).
  const auto w = launch_writes({0x18000}, {{0x18000, 0x100}}, {0x10000}, alloc_end);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].lo, 0x18000u);
  EXPECT_EQ(w[0].hi, 0x18100u);
  EXPECT_FALSE(writes_any(w, {0x18100, 0x18200})) << "a buffer right after the output is not written";
  EXPECT_FALSE(writes_any(w, {0x10000, 0x10100})) << "the input is only read";
}

TEST(LaunchWrites, AWordNoDecoderExplainsWritesToTheEndOfItsAllocation) {
  // An integer output the decoder left out, at 0x12000: it may reach anything above it in its
  // allocation, as a pointer below a buffer may (a block reused by a larger tensor).
  const auto w = launch_writes({0x12000, 0x40010}, {}, {}, alloc_end);
  EXPECT_TRUE(writes_any(w, {0x1f000, 0x1f100}));
  EXPECT_TRUE(writes_any(w, {0x12000, 0x12001}));
  EXPECT_FALSE(writes_any(w, {0x11000, 0x12000})) << "below the pointer: not written";
  EXPECT_TRUE(writes_any(w, {0x47ff0, 0x48000}));
  EXPECT_FALSE(writes_any(w, {0x20000, 0x30000})) << "another allocation is not reached";
}

TEST(LaunchWrites, AWordInNoAllocationIsTheWordAlone) {
  const auto w = launch_writes({0x90000}, {}, {}, alloc_end);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].hi, 0x90001u);
  EXPECT_TRUE(launch_writes({0x90000}, {}, {}, nullptr).size() == 1u);
}

TEST(LaunchWrites, AnExtentTheDecoderDoesNotKnowFallsBackToTheAllocation) {
  // A Triton output (pointer and dtype, no extent): bytes 0.
  const auto w = launch_writes({0x14000}, {{0x14000, 0}}, {}, alloc_end);
  EXPECT_TRUE(writes_any(w, {0x1e000, 0x1e100}));
}

TEST(LaunchWrites, WithTheModelAScanBesideAReaderOfItsBufferIsNotHeldByIt) {
  // K0 writes buffer A exactly; K1 reads A (an input its decoder names) and writes B exactly;
  // K2 writes an integer output (left out by its decoder) below A in A's allocation. The scan of
  // A runs beside K1 and before K2.
  const Range a{0x18000, 0x18100}, b{0x19000, 0x19100};
  std::vector<Node> nodes = {app(launch_writes({a.lo}, {{a.lo, 0x100}}, {}, alloc_end)), scan({a}),
                             app(launch_writes({b.lo, a.lo}, {{b.lo, 0x100}}, {a.lo}, alloc_end)), scan({b}),
                             app(launch_writes({0x11000}, {}, {}, alloc_end))};
  const std::vector<Edge> edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  const auto plans = plan(nodes, edges);
  const EdgeSet g = with_plans(edge_set(edges), plans);
  EXPECT_TRUE(g.count({0, 2})) << "K1 no longer waits for the scan of A";
  EXPECT_TRUE(g.count({1, 4})) << "the scan of A runs before K2, which may write A";
}

// --- longest_chain -------------------------------------------------------------------------

TEST(LongestChain, CountsNodesAndTheScansOnTheLongestChain) {
  // 0 -> 1(scan) -> 2 -> 3(scan) -> 4, and 0 -> 2 (a shortcut that does not shorten it).
  const std::vector<NodeKind> kinds = {NodeKind::app, NodeKind::scan, NodeKind::app, NodeKind::scan, NodeKind::app};
  const Chain c = longest_chain(kinds, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 2}});
  EXPECT_EQ(c.nodes, 5u);
  EXPECT_EQ(c.scans, 2u);
  // Scans beside: 0 -> 2 -> 4 with 0 -> 1 -> 4 and 2 -> 3: the chain is 3 nodes, with one scan
  // among the chains of three (ties prefer more scans).
  const Chain beside = longest_chain(kinds, {{0, 1}, {0, 2}, {2, 4}, {1, 4}, {2, 3}});
  EXPECT_EQ(beside.nodes, 3u);
  EXPECT_EQ(beside.scans, 1u);
  EXPECT_EQ(longest_chain(kinds, {{0, 1}, {1, 0}}).nodes, 0u) << "a cycle: nothing to say";
  EXPECT_EQ(longest_chain({}, {}).nodes, 0u);
}

TEST(EdgePort, OnlyAReadOnlyScanBesideTheChainAndTheAppsKernelsAroundItGetProgrammaticEdges) {
  const EdgeRole roles[] = {EdgeRole::app_kernel, EdgeRole::read_only_scan, EdgeRole::other};
  for (EdgeRole from : roles)
    for (EdgeRole to : roles) {
      EXPECT_EQ(edge_port(GraphPdl::off, from, to), EdgePort::full);
      const bool release = from == EdgeRole::read_only_scan && to == EdgeRole::app_kernel;
      const bool start = from == EdgeRole::app_kernel && to == EdgeRole::read_only_scan;
      EXPECT_EQ(edge_port(GraphPdl::release, from, to), release ? EdgePort::programmatic : EdgePort::full);
      EXPECT_EQ(edge_port(GraphPdl::both, from, to),
                release ? EdgePort::programmatic : start ? EdgePort::launch_order : EdgePort::full);
    }
}

// The instantiate passes' debug line (src/pass_clock.hpp).
TEST(PassClock, FormatsEachLapAndTheTotal) {
  EXPECT_EQ(nanscope::format_laps({{"scan nodes", 1.2}, {"overlap", 3.4}}),
            "scan nodes 1.20 ms, overlap 3.40 ms; 4.60 ms in all");
  EXPECT_EQ(nanscope::format_laps({}), "no pass ran");
}

TEST(PassClock, OffRecordsNothing) {
  nanscope::PassClock off(false);
  off.lap("scan nodes");
  EXPECT_FALSE(off.on());
  EXPECT_EQ(off.summary(), "no pass ran");
  nanscope::PassClock on(true);
  on.lap("scan nodes");
  on.lap("overlap");
  const std::string s = on.summary();
  EXPECT_EQ(s.rfind("scan nodes ", 0), 0u) << s;
  EXPECT_NE(s.find(", overlap "), std::string::npos) << s;
  EXPECT_NE(s.find(" ms in all"), std::string::npos) << s;
}

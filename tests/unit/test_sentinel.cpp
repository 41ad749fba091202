// Tests for src/sentinel.cpp: which scans a graph keeps under the sentinel tier, the escalation
// window over replays, and the eager sample. The graphs are the shapes the engine models
// (src/scan_overlap.hpp): K -> S -> next, a decode layer's reused buffers.
#include <gtest/gtest.h>

#include "sentinel.hpp"

namespace nanscope::sentinel {
namespace {

using overlap::Edge;
using overlap::Node;
using overlap::NodeKind;
using overlap::Range;
using overlap::WriteModel;

Node kernel(std::vector<Range> writes, WriteModel model = WriteModel::decoded) {
  Node n;
  n.kind = NodeKind::app;
  n.writes = std::move(writes);
  n.model = model;
  n.exact_writes = model == WriteModel::decoded ? static_cast<uint32_t>(n.writes.size()) : 0;
  return n;
}
Node scan(std::vector<Range> reads) {
  Node n;
  n.kind = NodeKind::scan;
  n.reads = std::move(reads);
  return n;
}

constexpr Range kScores{0x1000, 0x2000}, kProbs{0x2000, 0x3000}, kOut{0x3000, 0x4000};

TEST(Covered, TheUnionMustHoldEveryByte) {
  EXPECT_TRUE(covered({10, 20}, {{0, 15}, {15, 30}}));
  EXPECT_TRUE(covered({10, 20}, {{12, 20}, {5, 13}}));
  EXPECT_FALSE(covered({10, 20}, {{0, 15}, {16, 30}}));  // a gap at 15
  EXPECT_FALSE(covered({10, 20}, {}));
  EXPECT_FALSE(covered({10, 20}, {{10, 19}}));
  EXPECT_TRUE(covered({10, 10}, {}));  // nothing to cover
}

// scores = matmul; S0; probs = softmax(scores); S1; scores = matmul (reused); S2; out = probs@v; S3.
// The first scores are overwritten by the second matmul: not a sentinel. probs and out are live-out.
TEST(SentinelScans, BuffersOverwrittenLaterAreNotSentinels) {
  std::vector<Node> nodes = {kernel({kScores}), scan({kScores}), kernel({kProbs}), scan({kProbs}),
                             kernel({kScores}), scan({kScores}), kernel({kOut}),   scan({kOut})};
  std::vector<Edge> edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}};
  const auto s = sentinel_scans(nodes, edges, {});
  EXPECT_EQ(s, (std::vector<bool>{false, false, false, true, false, true, false, true}));
}

// A scan beside the chain (the overlap planner moved it: K -> S, K -> C) sees C as later too.
TEST(SentinelScans, ADetachedScanStillSeesTheNodesAfterItsKernel) {
  std::vector<Node> nodes = {kernel({kScores}), scan({kScores}), kernel({kScores})};
  const auto s = sentinel_scans(nodes, {{0, 1}, {0, 2}}, {});
  EXPECT_FALSE(s[1]);
}

// Overwritten only in part, through a pointer word (may not write), on a parallel branch, or by an
// opaque node: the scan stays. A watch always stays.
TEST(SentinelScans, WhenUnsureTheScanStays) {
  std::vector<Node> part = {kernel({kScores}), scan({kScores}), kernel({{0x1000, 0x1800}})};
  EXPECT_TRUE(sentinel_scans(part, {{0, 1}, {1, 2}}, {})[1]);
  std::vector<Node> words = {kernel({kScores}), scan({kScores}), kernel({{0x1000, 0x9000}}, WriteModel::pointer_words)};
  EXPECT_TRUE(sentinel_scans(words, {{0, 1}, {1, 2}}, {})[1]);
  // 0 -> 1 (scan), and 2 on its own branch: not after the kernel.
  std::vector<Node> parallel = {kernel({kScores}), scan({kScores}), kernel({kScores})};
  EXPECT_TRUE(sentinel_scans(parallel, {{0, 1}}, {})[1]);
  std::vector<Node> opaque = {kernel({kScores}), scan({kScores}), Node{NodeKind::opaque, {}, {}, {}, 0}};
  EXPECT_TRUE(sentinel_scans(opaque, {{0, 1}, {1, 2}}, {})[1]);
  std::vector<Node> watched = {kernel({kScores}), scan({kScores}), kernel({kScores})};
  EXPECT_TRUE(sentinel_scans(watched, {{0, 1}, {1, 2}}, {false, true, false})[1]);
  // A memset of the whole buffer is an exact write.
  std::vector<Node> memset = {kernel({kScores}), scan({kScores}), kernel({kScores}, WriteModel::node_params)};
  EXPECT_FALSE(sentinel_scans(memset, {{0, 1}, {1, 2}}, {})[1]);
}

TEST(SentinelScans, ASearchPastItsBoundKeepsTheScan) {
  std::vector<Node> nodes = {kernel({kScores}), scan({kScores})};
  std::vector<Edge> edges = {{0, 1}};
  for (uint32_t i = 0; i < 10; ++i) {
    nodes.push_back(kernel({kOut}));
    edges.push_back({static_cast<uint32_t>(nodes.size() - 2), static_cast<uint32_t>(nodes.size() - 1)});
  }
  nodes.push_back(kernel({kScores}));
  edges.push_back({static_cast<uint32_t>(nodes.size() - 2), static_cast<uint32_t>(nodes.size() - 1)});
  EXPECT_FALSE(sentinel_scans(nodes, edges, {})[1]);
  EXPECT_TRUE(sentinel_scans(nodes, edges, {}, Limits{5})[1]);
}

// Replays 1..: the sentinel fires on replay 7 (drained after replay 8 was launched), every scan
// runs for 3 replays from the next launch, then the tier goes back to sentinels.
TEST(Escalation, ARecurringNaNIsLocalizedInTheWindow) {
  Escalation e(3);
  for (uint64_t r = 1; r <= 8; ++r) EXPECT_EQ(e.on_launch(r), Mode::sentinels);
  for (uint64_t r = 1; r <= 6; ++r) EXPECT_EQ(e.on_drained(r, false), Outcome::none);
  EXPECT_EQ(e.on_drained(7, true), Outcome::escalate);
  EXPECT_EQ(e.first_seen(), 7u);
  EXPECT_EQ(e.on_drained(8, true), Outcome::none);  // launched before the escalation
  EXPECT_EQ(e.on_launch(9), Mode::all);
  EXPECT_EQ(e.on_launch(10), Mode::all);
  EXPECT_EQ(e.on_drained(9, true), Outcome::none);
  EXPECT_EQ(e.on_launch(11), Mode::all);
  EXPECT_EQ(e.on_launch(12), Mode::sentinels);  // the window is spent; it drains later
  EXPECT_EQ(e.on_drained(10, false), Outcome::none);
  EXPECT_EQ(e.on_drained(11, true), Outcome::localized);
  EXPECT_FALSE(e.escalating());
  EXPECT_EQ(e.on_drained(12, false), Outcome::none);
}

// A quiet scan node runs only in launches with every scan: its k-th run is the k-th such launch.
TEST(Escalation, AQuietNodesRunIsNumberedByTheLaunchesThatRanEveryScan) {
  Escalation e(2);
  for (uint64_t r = 0; r < 5; ++r) e.on_launch(r);
  EXPECT_FALSE(e.replay_of_full_launch(0));
  e.on_full_launch(5);  // past the interposer
  EXPECT_EQ(e.on_drained(4, true), Outcome::escalate);
  EXPECT_EQ(e.on_launch(6), Mode::all);
  EXPECT_EQ(e.on_launch(7), Mode::all);
  EXPECT_EQ(e.replay_of_full_launch(0), 5u);
  EXPECT_EQ(e.replay_of_full_launch(1), 6u);
  EXPECT_EQ(e.replay_of_full_launch(2), 7u);
  EXPECT_FALSE(e.replay_of_full_launch(3));
  // Bounded: the oldest are forgotten, never misnumbered.
  for (uint64_t r = 8; r < 8 + 5000; ++r) e.on_full_launch(r);
  EXPECT_FALSE(e.replay_of_full_launch(0));
  EXPECT_EQ(e.replay_of_full_launch(3 + 4999), 8u + 4999);
}

// The NaN of replay 7 only: the window drains clean, so the cause is unknown.
TEST(Escalation, ANaNThatDoesNotRecurIsSaidSo) {
  Escalation e(3);
  e.on_launch(7);
  EXPECT_EQ(e.on_drained(7, true), Outcome::escalate);
  for (uint64_t r = 8; r <= 10; ++r) EXPECT_EQ(e.on_launch(r), Mode::all);
  EXPECT_EQ(e.on_drained(8, false), Outcome::none);
  EXPECT_EQ(e.on_drained(9, false), Outcome::none);
  EXPECT_TRUE(e.escalating());
  EXPECT_EQ(e.on_drained(10, false), Outcome::did_not_recur);
  EXPECT_EQ(e.first_seen(), 7u);
  // A later one escalates again.
  e.on_launch(11);
  EXPECT_EQ(e.on_drained(11, true), Outcome::escalate);
  EXPECT_EQ(e.first_seen(), 11u);
  EXPECT_EQ(Escalation(0).window(), 1u);
}

// A NaN on every replay from 7: localized once, then it keeps recurring at the sentinels without
// a new window each time (that would run the tier as full); when it stops and comes back (a
// replay without a hit between), it escalates again.
TEST(Escalation, ALocalizedNaNThatPersistsDoesNotEscalateAgain) {
  Escalation e(3);
  e.on_launch(7);
  EXPECT_EQ(e.on_drained(7, true), Outcome::escalate);
  for (uint64_t r = 8; r <= 10; ++r) EXPECT_EQ(e.on_launch(r), Mode::all);
  EXPECT_EQ(e.on_launch(11), Mode::sentinels);
  EXPECT_EQ(e.on_drained(11, true), Outcome::none);  // a sentinel replay drained inside the window
  EXPECT_EQ(e.on_drained(8, true), Outcome::none);
  EXPECT_EQ(e.on_drained(9, true), Outcome::none);
  EXPECT_EQ(e.on_drained(10, true), Outcome::localized);
  for (uint64_t r = 12; r <= 20; ++r) {
    EXPECT_EQ(e.on_launch(r), Mode::sentinels);
    EXPECT_EQ(e.on_drained(r, true), Outcome::none) << "replay " << r;
    EXPECT_EQ(e.on_drained(r, true), Outcome::none);  // another sentinel of the same replay
  }
  EXPECT_FALSE(e.escalating());
  // Replays 21 and 22 clean (no hit), then it is back: a new occurrence, a new window.
  e.on_launch(21), e.on_launch(22), e.on_launch(23);
  EXPECT_EQ(e.on_drained(23, true), Outcome::escalate);
  EXPECT_EQ(e.first_seen(), 23u);
  EXPECT_TRUE(e.escalating());
}

// After did_not_recur nothing is known: the next hit escalates, even on the very next replay.
TEST(Escalation, AfterANaNThatDidNotRecurTheNextHitEscalates) {
  Escalation e(1);
  e.on_launch(3);
  EXPECT_EQ(e.on_drained(3, true), Outcome::escalate);
  e.on_launch(4);
  EXPECT_EQ(e.on_drained(4, false), Outcome::did_not_recur);
  e.on_launch(5);
  EXPECT_EQ(e.on_drained(5, true), Outcome::escalate);
}

// What the engine asks per finding (hooks/graph_tier.cpp): a replay launched with every scan and
// not drained yet is the window's; any other ran only the sentinels.
TEST(Escalation, SaysWhichReplaysRanEveryScan) {
  Escalation e(2);
  e.on_launch(0);
  EXPECT_FALSE(e.launched_all(0));
  EXPECT_EQ(e.on_drained(0, true), Outcome::escalate);
  e.on_launch(1);
  e.on_launch(2);
  EXPECT_TRUE(e.launched_all(1));
  EXPECT_TRUE(e.launched_all(2));
  EXPECT_EQ(e.on_drained(1, false), Outcome::none);
  EXPECT_FALSE(e.launched_all(1));  // drained: forgotten
  EXPECT_EQ(e.on_drained(2, false), Outcome::did_not_recur);
  e.on_launch(3);
  EXPECT_FALSE(e.launched_all(3));
}

// A graph as the engine models it at instantiation (each scan in line after its kernel): a memset
// node clearing a buffer later overwrites it exactly, a kernel without a decoder (pointer words)
// never does, and a child graph (opaque) is no overwrite either: when unsure, scan.
TEST(SentinelScans, OnTheInstantiatedModel) {
  Node memset_scores;
  memset_scores.kind = NodeKind::app;
  memset_scores.model = WriteModel::node_params;
  memset_scores.writes = {kScores};
  Node child;
  child.kind = NodeKind::opaque;
  // 0 K(scores) 1 S 2 K(probs, pointer words) 3 S 4 memset(scores) 5 child 6 K(out) 7 S
  const std::vector<Node> nodes = {kernel({kScores}), scan({kScores}),  kernel({kProbs}, WriteModel::pointer_words),
                                   scan({kProbs}),    memset_scores,     child,
                                   kernel({kOut}),    scan({kOut})};
  const std::vector<Edge> edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}};
  const std::vector<bool> s = sentinel_scans(nodes, edges, {});
  EXPECT_FALSE(s[1]);  // scores: cleared by the memset
  EXPECT_TRUE(s[3]);   // probs: nothing after writes it exactly
  EXPECT_TRUE(s[7]);   // out: live-out
  for (uint32_t i : {0u, 2u, 4u, 5u, 6u}) EXPECT_FALSE(s[i]) << i;  // not scans
}

TEST(EagerSample, WatchesFirstLaunchesPeriodAndTheWindowAfterAHit) {
  EagerSample s(/*period=*/100, /*window=*/50, /*max_kernels=*/2);
  EXPECT_TRUE(s.should_scan(1, 7, false));   // kernel 7's first launch
  EXPECT_FALSE(s.should_scan(2, 7, false));
  EXPECT_TRUE(s.should_scan(3, 7, true));    // a watch or a host copy
  EXPECT_TRUE(s.should_scan(100, 7, false)); // the period
  EXPECT_TRUE(s.should_scan(101, 8, false));
  EXPECT_FALSE(s.should_scan(102, 9, false));  // past max_kernels: only the period
  EXPECT_TRUE(s.on_hit(150));  // a window opens
  EXPECT_TRUE(s.in_window(150));
  EXPECT_FALSE(s.in_window(149)) << "launched before the window: not preceded by scans of all it read";
  EXPECT_TRUE(s.should_scan(199, 7, false));
  EXPECT_FALSE(s.should_scan(201, 7, false));
  EXPECT_FALSE(s.on_hit(120));  // an older hit drained late never shortens the window, nor opens one
  EXPECT_TRUE(s.in_window(199));
  EXPECT_FALSE(s.in_window(130));
  EXPECT_FALSE(s.on_hit(190));  // a hit in the window extends it
  EXPECT_TRUE(s.in_window(235));
  EXPECT_FALSE(s.in_window(240));
  EXPECT_TRUE(s.on_hit(400));   // after it closed: a new window
  EXPECT_FALSE(s.in_window(300));
  EXPECT_TRUE(s.in_window(449));
}

// A replay launched with every scan outside a window (a launch the tier could not turn into a
// sentinel one) has its lineage, counts toward no window, and is remembered only so long.
TEST(Escalation, AFullLaunchOutsideAWindowHasItsLineageAndOpensNoWindow) {
  Escalation e(3);
  EXPECT_EQ(e.on_launch(0), Mode::sentinels);
  e.on_full_launch(1);
  EXPECT_TRUE(e.launched_all(1));
  EXPECT_FALSE(e.in_window(1));
  EXPECT_FALSE(e.launched_all(0));
  EXPECT_FALSE(e.escalating());
  for (uint64_t r = 2; r < 2 + 64; ++r) e.on_full_launch(r);
  EXPECT_FALSE(e.launched_all(1)) << "bounded: the oldest full replays are forgotten";
  EXPECT_TRUE(e.launched_all(65));
  // A sentinel's hit still escalates, and the window's replays are told apart from full ones.
  EXPECT_EQ(e.on_drained(66, true), Outcome::escalate);
  EXPECT_EQ(e.on_launch(67), Mode::all);
  EXPECT_TRUE(e.in_window(67));
}

// The twin's edges: quiet scans go (their kernel joined to what followed them), sentinels move
// after every sink of the app's nodes, the app's own order is kept.
TEST(TwinEdges, AScanInLineIsBypassedAndASentinelMovesToTheEnd) {
  // 0 -> S1(quiet) -> 2 -> S3(sentinel) -> 4, and 0 -> 2 beside; 4 is the sink.
  const std::vector<Edge> edges = {{0, 1}, {1, 2}, {0, 2}, {2, 3}, {3, 4}};
  const std::vector<bool> removed = {false, true, false, false, false};
  const std::vector<bool> moved = {false, false, false, true, false};
  const std::vector<Edge> got = twin_edges(5, edges, removed, moved);
  const std::vector<Edge> want = {{0, 2}, {2, 4}, {4, 3}};
  EXPECT_EQ(got, want);
}

TEST(TwinEdges, ChainsOfScansAndBranchesKeepEveryOrderOfTheApp) {
  // Two branches from 0: 0 -> S1 -> S2 -> 3 and 0 -> 4 -> S5; sinks 3 and 4 (S5 is moved).
  const std::vector<Edge> edges = {{0, 1}, {1, 2}, {2, 3}, {0, 4}, {4, 5}};
  const std::vector<bool> removed = {false, true, false, false, false, false};
  const std::vector<bool> moved = {false, false, true, false, false, true};
  const std::vector<Edge> got = twin_edges(6, edges, removed, moved);
  const std::vector<Edge> want = {{0, 3}, {0, 4}, {3, 2}, {4, 2}, {3, 5}, {4, 5}};
  EXPECT_EQ(got, want);
}

// A layer chain as the overlap planner leaves it: each kernel K_i has its scan S_i beside it,
// S_i runs before the next writer K_{i+1} ... and before the next scan S_{i+1} (its state
// words). Bypassing the quiet scans must give the chain back, not join each kernel to every
// kernel after it (a quadratic number of edges, slower on the H200 than the scans were).
TEST(TwinEdges, AChainOfQuietScansGivesTheChainBackWithoutImpliedEdges) {
  constexpr uint32_t kLayers = 40;  // node 2i is K_i, 2i+1 is S_i
  std::vector<Edge> edges;
  std::vector<bool> removed(2 * kLayers, false);
  for (uint32_t i = 0; i < kLayers; ++i) {
    edges.push_back({2 * i, 2 * i + 1});
    removed[2 * i + 1] = true;
    if (i + 1 < kLayers) {
      edges.push_back({2 * i, 2 * i + 2});      // K_i -> K_{i+1}: the app's own order
      edges.push_back({2 * i + 1, 2 * i + 2});  // S_i before the next writer
      edges.push_back({2 * i + 1, 2 * i + 3});  // S_i before the next scan
    }
  }
  const std::vector<Edge> got = twin_edges(2 * kLayers, edges, removed, {});
  std::vector<Edge> want;
  for (uint32_t i = 0; i + 1 < kLayers; ++i) want.push_back({2 * i, 2 * i + 2});
  EXPECT_EQ(got, want);
}

// The graph's own edges stay even when implied; only the edges the bypass adds are reduced.
TEST(TwinEdges, TheAppsOwnImpliedEdgesStay) {
  // 0 -> 1 -> 2 and 0 -> 2 (the app's, implied); 0 -> S3 -> 2 (S3 quiet).
  const std::vector<Edge> edges = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {3, 2}};
  const std::vector<bool> removed = {false, false, false, true};
  EXPECT_EQ(twin_edges(4, edges, removed, {}), (std::vector<Edge>{{0, 1}, {0, 2}, {1, 2}}));
  // Without the app's 0 -> 2, the bypass's 0 -> 2 is implied by 0 -> 1 -> 2 and goes.
  const std::vector<Edge> no_direct = {{0, 1}, {1, 2}, {0, 3}, {3, 2}};
  EXPECT_EQ(twin_edges(4, no_direct, removed, {}), (std::vector<Edge>{{0, 1}, {1, 2}}));
}

TEST(TwinEdges, NothingRemovedOrMovedIsTheGraphItself) {
  const std::vector<Edge> edges = {{0, 1}, {0, 2}, {1, 2}};  // in (from, to) order, as returned
  EXPECT_EQ(twin_edges(3, {{1, 2}, {0, 2}, {0, 1}}, {}, {}), edges);
  // A graph of scans only: the moved ones have no app node to follow.
  EXPECT_TRUE(twin_edges(2, {{0, 1}}, {false, false}, {true, true}).empty());
}

// Which sentinels may run at the graph's end: none that a later or parallel node may overwrite.
TEST(MovableToEnd, OnlyAScanWhoseBufferNothingAfterItMayWriteMoves) {
  // K0 writes A; S1 scans A; K2 writes B (pointer words reach into A: it may write A); S3 scans
  // B; K4 writes C; S5 scans C; an opaque node O6 on a branch of its own, beside everything.
  std::vector<Node> nodes(7);
  nodes[0] = {NodeKind::app, {{0, 100}}, {}, WriteModel::decoded, 1};
  nodes[1] = {NodeKind::scan, {}, {{0, 100}}};
  nodes[2] = {NodeKind::app, {{200, 300}, {0, 1000}}, {}, WriteModel::decoded, 1};
  nodes[3] = {NodeKind::scan, {}, {{200, 300}}};
  nodes[4] = {NodeKind::app, {{400, 500}}, {}, WriteModel::decoded, 1};
  nodes[5] = {NodeKind::scan, {}, {{400, 500}}};
  nodes[6] = {NodeKind::app, {{5000, 6000}}, {}, WriteModel::decoded, 1};
  const std::vector<Edge> edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}};
  const std::vector<bool> all = {false, true, false, true, false, true, false};
  std::vector<bool> got = movable_to_end(nodes, edges, all);
  EXPECT_EQ(got, (std::vector<bool>{false, false, false, true, false, true, false}))
      << "S1's buffer may be written by K2's pointer word";
  // A parallel node that may write C (no path between them) keeps S5 in place too.
  nodes[6].writes = {{450, 460}};
  got = movable_to_end(nodes, edges, all);
  EXPECT_FALSE(got[5]);
  // An opaque node anywhere after it (or beside it) may write anything.
  nodes[6] = {NodeKind::opaque};
  got = movable_to_end(nodes, edges, all);
  EXPECT_FALSE(got[3]);
  EXPECT_FALSE(got[5]);
  // Too large a graph: nothing moves.
  EXPECT_EQ(movable_to_end(nodes, edges, all, Limits{4}), std::vector<bool>(7, false));
}

}  // namespace
}  // namespace nanscope::sentinel

// The sentinel tier's bookkeeping in the GraphRegistry (hooks/graph_tier.cpp), on made-up handles
// (no driver: the registry only keeps them): the twin launched while only sentinels run, the
// application's exec for an escalated window, a launch past the interposer counted as full,
// only faults escalating, quiet scans' findings taken as the window's, and a destroyed exec's tier
// kept for the findings still in the channel.
#include <gtest/gtest.h>

#include "graph_registry.hpp"

namespace nanscope {
namespace {

template <class T>
T handle(uintptr_t v) {
  return reinterpret_cast<T>(v);
}

constexpr uint64_t kGraphId = 7;

struct TwinTier : ::testing::Test {
  GraphRegistry reg;
  const CUgraph graph = handle<CUgraph>(0x10);
  const CUgraphExec exec = handle<CUgraphExec>(0x20), twin = handle<CUgraphExec>(0x30);
  const CUgraphNode quiet_scan = handle<CUgraphNode>(0x40), sentinel_scan = handle<CUgraphNode>(0x41);

  void SetUp() override {
    reg.set_graph_id(graph, kGraphId);
    reg.add_scan(handle<CUgraphNode>(0x50), {quiet_scan, 0, kGraphId, /*graph_node=*/3});
    reg.add_scan(handle<CUgraphNode>(0x51), {sentinel_scan, 0, kGraphId, /*graph_node=*/9});
    reg.on_instantiated(exec, graph);
    ASSERT_EQ(reg.start_twin_tier(exec, {quiet_scan}, twin, /*window=*/2), kGraphId);
  }
  static Finding at(uint32_t graph_node, uint32_t replay, uint64_t nan = 1) {
    Finding f;
    f.captured = true, f.graph_id = kGraphId, f.graph_node = graph_node, f.replay = replay, f.nan = nan;
    return f;
  }
};

TEST_F(TwinTier, TheTwinRunsUntilASentinelFaultsThenTheAppsExecForTheWindow) {
  GraphRegistry::TierLaunch l = reg.tier_launch(exec);
  EXPECT_TRUE(l.tiered);
  EXPECT_EQ(l.twin, twin);
  EXPECT_FALSE(l.escalated);
  EXPECT_TRUE(l.change.empty()) << "nothing is ever disabled on the application's exec";
  // Replay 0 drains: the sentinel saw NaN, a sentinel-only finding, a fault: escalate.
  const Finding seen = at(9, 0);
  ASSERT_EQ(reg.replay_kind(seen), GraphRegistry::ReplayKind::sentinel_only);
  const GraphRegistry::SentinelHit hit = reg.on_judged(seen, GraphRegistry::ReplayKind::sentinel_only, true);
  EXPECT_TRUE(hit.escalate);
  EXPECT_EQ(hit.window, 2u);
  // The next two launches are the window's: the application's exec, every scan.
  for (uint64_t r = 1; r <= 2; ++r) {
    l = reg.tier_launch(exec);
    EXPECT_EQ(l.replay, r);
    EXPECT_TRUE(l.escalated) << r;
    EXPECT_EQ(reg.replay_kind(at(9, static_cast<uint32_t>(r))), GraphRegistry::ReplayKind::escalated);
  }
  // The quiet scan's finding (its node runs only in the window): the window's.
  EXPECT_EQ(reg.replay_kind(at(3, 0)), GraphRegistry::ReplayKind::quiet);
  EXPECT_FALSE(reg.tier_launch(exec).escalated) << "the window is spent: the twin again";
}

// A scan inside a loop's body runs each iteration: its accumulator counts executions, not
// replays, so its finding claims no origin even when its count is an escalated replay's number.
TEST_F(TwinTier, AScanInALoopBodyNeverClaimsItsReplay) {
  reg.note_body_scan(kGraphId, 12);
  ASSERT_FALSE(reg.tier_launch(exec).escalated);  // replay 0: the twin
  ASSERT_TRUE(reg.on_judged(at(9, 0), GraphRegistry::ReplayKind::sentinel_only, true).escalate);
  ASSERT_TRUE(reg.tier_launch(exec).escalated);  // replay 1: the window's, every scan runs
  EXPECT_EQ(reg.replay_kind(at(9, 1)), GraphRegistry::ReplayKind::escalated);
  EXPECT_EQ(reg.replay_kind(at(12, 1)), GraphRegistry::ReplayKind::sentinel_only);
  EXPECT_EQ(reg.replay_kind(at(12, 40)), GraphRegistry::ReplayKind::sentinel_only);
  GraphRegistry untiered;
  untiered.note_body_scan(kGraphId, 12);
  EXPECT_EQ(untiered.replay_kind(at(12, 1)), GraphRegistry::ReplayKind::untiered) << "no tier: nothing to tell";
}

// A quiet node runs only in the window: its k-th run is the window's k-th replay. At exit, with the
// window's completion events never queried, a window whose replays found the NaN again says
// localized (its lineage is in the log), not incomplete.
TEST_F(TwinTier, QuietFindingsTakeTheirWindowsReplayAndARecurrenceIsLocalizedAtExit) {
  for (int r = 0; r < 3; ++r) (void)reg.tier_launch(exec);  // replays 0-2 on the twin
  ASSERT_TRUE(reg.on_judged(at(9, 1), GraphRegistry::ReplayKind::sentinel_only, true).escalate);
  for (uint64_t r = 3; r <= 4; ++r) ASSERT_TRUE(reg.tier_launch(exec).escalated) << r;
  EXPECT_EQ(reg.quiet_replay(at(3, 0)), 3u);
  EXPECT_EQ(reg.quiet_replay(at(3, 1)), 4u);
  EXPECT_FALSE(reg.quiet_replay(at(3, 2)).has_value()) << "no third launch with every scan";
  ASSERT_EQ(reg.open_windows().size(), 1u);
  EXPECT_EQ(reg.open_windows()[0].outcome, sentinel::Outcome::escalate) << "nothing drained yet: incomplete";
  (void)reg.on_judged(at(9, 3), GraphRegistry::ReplayKind::escalated, true);  // the NaN again, in the window
  ASSERT_EQ(reg.open_windows().size(), 1u);
  EXPECT_EQ(reg.open_windows()[0].outcome, sentinel::Outcome::localized);
  EXPECT_EQ(reg.open_windows()[0].replay, 1u);
}

TEST_F(TwinTier, AnInfinityThatIsNoFaultNeverEscalates) {
  (void)reg.tier_launch(exec);
  const Finding mask = at(9, 0, /*nan=*/0);
  EXPECT_FALSE(reg.on_judged(mask, GraphRegistry::ReplayKind::sentinel_only, /*fault=*/false).escalate);
  EXPECT_FALSE(reg.tier_launch(exec).escalated);
}

TEST_F(TwinTier, ALaunchPastTheInterposerRunsFullAndOpensNoWindow) {
  EXPECT_TRUE(reg.untwinned_launch(exec));
  EXPECT_EQ(reg.replay_kind(at(9, 0)), GraphRegistry::ReplayKind::escalated) << "replay 0 ran every scan";
  // A fault on that replay has its lineage and escalates nothing.
  EXPECT_FALSE(reg.on_judged(at(9, 0), GraphRegistry::ReplayKind::escalated, true).escalate);
  const GraphRegistry::TierLaunch next = reg.tier_launch(exec);
  EXPECT_EQ(next.replay, 1u);
  EXPECT_FALSE(next.escalated);
  EXPECT_FALSE(reg.untwinned_launch(handle<CUgraphExec>(0x99))) << "not tiered";
}

TEST_F(TwinTier, ADestroyedExecsTierStaysForItsFindingsAndGivesItsTwinBack) {
  (void)reg.tier_launch(exec);
  std::vector<CUevent> events;
  CUgraphExec gone = nullptr;
  EXPECT_TRUE(reg.end_tier(exec, events, gone).empty());
  EXPECT_EQ(gone, twin) << "the caller destroys it";
  // Replay 0's finding drains after the destroy (PyTorch destroys its graph at exit).
  EXPECT_EQ(reg.replay_kind(at(9, 0)), GraphRegistry::ReplayKind::sentinel_only);
  EXPECT_TRUE(reg.on_judged(at(9, 0), GraphRegistry::ReplayKind::sentinel_only, true).escalate);
  ASSERT_EQ(reg.open_windows().size(), 1u) << "at exit: incomplete";
  EXPECT_FALSE(reg.tier_launch(exec).tiered) << "the exec itself is gone";
}

// The interposer asks about every exec it launches; an exec tiered without a twin (the fallback)
// is counted once, at its CUPTI enter site, not by the interposer too.
TEST(FallbackTier, TheInterposerLeavesAnExecWithoutATwinUncounted) {
  GraphRegistry reg;
  const CUgraph graph = handle<CUgraph>(0x10);
  const CUgraphExec exec = handle<CUgraphExec>(0x20);
  reg.set_graph_id(graph, kGraphId);
  reg.on_instantiated(exec, graph);
  ASSERT_EQ(reg.start_tier(exec, {handle<CUgraphNode>(0x40)}, 2), kGraphId);
  EXPECT_FALSE(reg.tier_launch(exec, /*twin_only=*/true).tiered);
  EXPECT_FALSE(reg.untwinned_launch(exec));
  const GraphRegistry::TierLaunch l = reg.tier_launch(exec);
  EXPECT_TRUE(l.tiered);
  EXPECT_EQ(l.replay, 0u) << "the interposer's question counted no replay";
  EXPECT_EQ(l.twin, nullptr);
}

// Conditional nodes' bodies (hooks/launch_params.hpp added_conditional): kept per node until the
// node is destroyed (its handle may come back for another node), and bounded.
TEST(ConditionalBodies, KeptUntilTheNodeIsDestroyedAndBounded) {
  GraphRegistry reg;
  const CUgraphNode loop = handle<CUgraphNode>(0x60);
  const std::vector<CUgraph> body{handle<CUgraph>(0x70)};
  EXPECT_TRUE(reg.bodies_of(loop).empty());
  reg.remember_bodies(loop, body);
  EXPECT_EQ(reg.bodies_of(loop), body);
  reg.forget_node(loop);
  EXPECT_TRUE(reg.bodies_of(loop).empty());
  for (uintptr_t i = 0; i < GraphRegistry::kMaxConditionals; ++i) reg.remember_bodies(handle<CUgraphNode>(0x1000 + i), body);
  reg.remember_bodies(loop, body);
  EXPECT_TRUE(reg.bodies_of(loop).empty()) << "past the bound: unknown, and said as such at instantiate";
  const std::vector<CUgraph> other{handle<CUgraph>(0x71), handle<CUgraph>(0x72)};
  reg.remember_bodies(handle<CUgraphNode>(0x1000), other);  // a known node's bodies are replaced
  EXPECT_EQ(reg.bodies_of(handle<CUgraphNode>(0x1000)), other);
}

}  // namespace
}  // namespace nanscope

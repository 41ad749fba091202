// Tests for src/launch_facts.cpp: one scan's facts filed under a slot its records carry back,
// a slot another launch took over reads as evicted, and the bounds of the three tables the store
// replaced (eager first in first out, captured kept up to a cap).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "launch_facts.hpp"

namespace nanscope {
namespace {

CandidateList one_candidate(uint32_t kernel_id, uint64_t launch_id, uint64_t python = 0) {
  CandidateList c;
  c.add({kernel_id, launch_id, false, 0, python});
  return c;
}

LaunchFacts python_only(uint64_t launch_id) { return {launch_id, 1000 + launch_id, std::nullopt, std::nullopt}; }

TEST(LaunchFactsStore, FactsAreFoundByTheirSlotForTheirLaunchOnly) {
  LaunchFactsStore store;
  EXPECT_FALSE(store.find(1, 7).has_value());  // nothing filed yet
  const uint32_t slot = store.file({7, 0x55, one_candidate(3, 5), std::nullopt}, false);
  ASSERT_NE(slot, 0u);
  const auto facts = store.find(slot, 7);
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->launch_id, 7u);
  EXPECT_EQ(facts->python, 0x55u);
  ASSERT_TRUE(facts->candidates.has_value());
  EXPECT_EQ(facts->candidates->w[0].kernel_id, 3u);
  EXPECT_FALSE(facts->collective.has_value());
  EXPECT_FALSE(store.find(slot, 8).has_value());     // another launch's record naming this slot
  EXPECT_FALSE(store.find(0, 7).has_value());        // a record that carries no slot
  EXPECT_FALSE(store.find(1u << 30, 7).has_value());  // out of range: never trusted
}

TEST(LaunchFactsStore, NothingToKeepTakesNoSlot) {
  LaunchFactsStore store;
  EXPECT_EQ(store.file({7, 0, std::nullopt, std::nullopt}, false), 0u);
  EXPECT_EQ(store.file({7, 0, CandidateList{}, std::nullopt}, true), 0u);  // an empty list is none
  EXPECT_EQ(store.refused(), 0u);
}

// An initial scan after a device copy is named after launch 0: its facts are kept too.
TEST(LaunchFactsStore, LaunchZeroIsFiledLikeAnyOther) {
  LaunchFactsStore store;
  const uint32_t slot = store.file({0, 0, one_candidate(3, 5), std::nullopt}, false);
  ASSERT_NE(slot, 0u);
  ASSERT_TRUE(store.find(slot, 0).has_value());
  EXPECT_TRUE(store.find(slot, 0)->candidates.has_value());
}

TEST(LaunchFactsStore, AnEagerSlotTakenOverByALaterLaunchReadsAsEvicted) {
  LaunchFactsStore store({.eager = 2});
  const uint32_t a = store.file(python_only(10), false);
  const uint32_t b = store.file(python_only(11), false);
  const uint32_t c = store.file(python_only(12), false);  // the ring wraps: 10's slot
  EXPECT_EQ(c, a);
  EXPECT_FALSE(store.find(a, 10).has_value());
  EXPECT_EQ(store.find(b, 11)->python, 1011u);
  EXPECT_EQ(store.find(c, 12)->python, 1012u);
}

// Candidate lists and collectives of eager scans age apart from the slots (the old books' caps):
// the oldest goes, the launch's Python line stays.
TEST(LaunchFactsStore, EagerCandidatesAndCollectivesGoFirstInFirstOut) {
  LaunchFactsStore store({.eager = 16, .eager_candidates = 2, .eager_collectives = 1});
  uint32_t slots[3];
  for (uint64_t i = 0; i < 3; ++i) slots[i] = store.file({20 + i, 1, one_candidate(3, 5), std::nullopt}, false);
  EXPECT_FALSE(store.find(slots[0], 20)->candidates.has_value());
  EXPECT_EQ(store.find(slots[0], 20)->python, 1u);
  EXPECT_TRUE(store.find(slots[1], 21)->candidates.has_value());
  EXPECT_TRUE(store.find(slots[2], 22)->candidates.has_value());

  CollectiveFacts coll;
  coll.where.seq = 7;
  const uint32_t first = store.file({30, 0, std::nullopt, coll}, false);
  const uint32_t second = store.file({31, 0, std::nullopt, coll}, false);
  ASSERT_TRUE(store.find(first, 30).has_value());  // its slot is still its own...
  EXPECT_FALSE(store.find(first, 30)->collective.has_value());  // ...its collective aged out
  ASSERT_TRUE(store.find(second, 31).has_value());
  EXPECT_EQ(store.find(second, 31)->collective->where.seq, 7u);
}

// A graph's scans post on every replay for as long as it lives: eager traffic never pushes their
// facts out; past the cap a captured filing is refused (counted) rather than evict another's.
TEST(LaunchFactsStore, CapturedFactsStayForEveryReplayUpToTheCap) {
  LaunchFactsStore store({.eager = 1, .captured = 2, .eager_candidates = 1, .captured_candidates = 2});
  CollectiveFacts coll;
  const uint32_t a = store.file({20, 1, one_candidate(3, 5), std::nullopt}, true);
  const uint32_t b = store.file({21, 1, std::nullopt, coll}, true);
  EXPECT_EQ(store.file({22, 1, one_candidate(3, 5), std::nullopt}, true), 0u);
  for (uint64_t eager = 100; eager < 110; ++eager) store.file({eager, 1, one_candidate(3, 5), coll}, false);
  ASSERT_TRUE(store.find(a, 20).has_value());
  EXPECT_TRUE(store.find(a, 20)->candidates.has_value());
  ASSERT_TRUE(store.find(b, 21).has_value());
  EXPECT_TRUE(store.find(b, 21)->collective.has_value());
  EXPECT_EQ(store.refused(), 1u);
}

TEST(LaunchFactsStore, CapturedCandidatesPastTheirCapAreRefusedTheRestIsKept) {
  LaunchFactsStore store({.captured_candidates = 1});
  const uint32_t a = store.file({20, 1, one_candidate(3, 5), std::nullopt}, true);
  const uint32_t b = store.file({21, 2, one_candidate(3, 5), std::nullopt}, true);
  EXPECT_TRUE(store.find(a, 20)->candidates.has_value());
  ASSERT_TRUE(store.find(b, 21).has_value());
  EXPECT_FALSE(store.find(b, 21)->candidates.has_value());
  EXPECT_EQ(store.find(b, 21)->python, 2u);
  EXPECT_EQ(store.refused(), 1u);
}

// The launch path files while the drain thread reads: a record finds its own launch's facts or
// none (its slot taken over meanwhile), never another launch's.
TEST(LaunchFactsStore, AReaderRacingTheWriterSeesOneFilingOrNone) {
  LaunchFactsStore store({.eager = 8});
  constexpr uint64_t kFilings = 200000;
  std::vector<std::atomic<uint32_t>> slots(kFilings + 1);
  std::atomic<uint64_t> filed{0};
  std::thread writer([&] {
    for (uint64_t id = 1; id <= kFilings; ++id) {
      slots[id].store(store.file({id, 2 * id + 1, std::nullopt, std::nullopt}, false), std::memory_order_relaxed);
      filed.store(id, std::memory_order_release);
    }
  });
  uint64_t found = 0, wrong = 0;
  for (uint64_t last = 0; last < kFilings;) {
    last = filed.load(std::memory_order_acquire);
    for (uint64_t id = last; id > 0 && id + 8 > last; --id)
      if (const auto f = store.find(slots[id].load(std::memory_order_relaxed), id)) ++found, wrong += f->python != 2 * id + 1;
  }
  writer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(found, 0u);
}

// An initial scan is named after the last launch that may have written its buffer: that launch's
// line, from its candidate entry; any other scan takes its own launch's line.
TEST(FindingPython, AnInitialScanTakesItsNamedWritersLine) {
  const CandidateList writers = one_candidate(5, 40, 0x40);
  const std::optional<LaunchFacts> initial = LaunchFacts{40, 0x41, writers, std::nullopt};
  EXPECT_EQ(finding_python(40, 5, initial, writers), 0x40u);
  EXPECT_EQ(finding_python(40, 6, initial, writers), 0x41u);  // another kernel: not named after it
  EXPECT_EQ(finding_python(41, 5, initial, writers), 0x41u);
  EXPECT_EQ(finding_python(40, 5, initial, std::nullopt), 0x41u);  // candidates not attached
  EXPECT_EQ(finding_python(40, 5, std::nullopt, std::nullopt), 0u);  // evicted or never filed
}

}  // namespace
}  // namespace nanscope

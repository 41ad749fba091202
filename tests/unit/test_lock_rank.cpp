// The lock order of hooks/engine.hpp as checked at run time (src/lock_rank.hpp).
#include "lock_rank.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <shared_mutex>
#include <thread>

namespace nanscope::lock_rank {
namespace {

int a, b, c;  // stand-ins for three locks' addresses

TEST(LockRank, LaterLevelsKeepTheOrder) {
  HeldLocks held;
  EXPECT_EQ(held.conflict(LockLevel::drain), nullptr);
  ASSERT_TRUE(held.push(&a, "drain", LockLevel::drain));
  EXPECT_EQ(held.conflict(LockLevel::contexts), nullptr);
  ASSERT_TRUE(held.push(&b, "contexts", LockLevel::contexts));
  EXPECT_EQ(held.conflict(LockLevel::part), nullptr);
  EXPECT_EQ(held.conflict(LockLevel::container), nullptr);
}

TEST(LockRank, TheSameLevelOrAnEarlierOneIsNamed) {
  HeldLocks held;
  held.push(&a, "contexts", LockLevel::contexts);
  held.push(&b, "KernelTable::mu_", LockLevel::part);
  const HeldLocks::Held* same = held.conflict(LockLevel::part);
  ASSERT_NE(same, nullptr);
  EXPECT_STREQ(same->name, "KernelTable::mu_");
  const HeldLocks::Held* earlier = held.conflict(LockLevel::drain);
  ASSERT_NE(earlier, nullptr);
  EXPECT_STREQ(earlier->name, "contexts");  // the first held lock that forbids it
}

TEST(LockRank, ReleaseOutOfOrderForgetsTheRightLock) {
  HeldLocks held;
  held.push(&a, "a", LockLevel::contexts);
  held.push(&b, "b", LockLevel::part);
  held.push(&c, "c", LockLevel::container);
  held.pop(&b);  // a unique_lock released before the lock taken after it
  EXPECT_EQ(held.depth(), 2u);
  EXPECT_EQ(held.conflict(LockLevel::part), held.conflict(LockLevel::container));
  EXPECT_STREQ(held.conflict(LockLevel::part)->name, "c");
  held.pop(&c);
  EXPECT_EQ(held.conflict(LockLevel::part), nullptr);
  held.pop(&c);  // not held: nothing happens
  EXPECT_EQ(held.depth(), 1u);
}

TEST(LockRank, AFullStackRecordsNoMore) {
  HeldLocks held;
  int locks[HeldLocks::kMax + 1];
  for (uint32_t i = 0; i < HeldLocks::kMax; ++i) EXPECT_TRUE(held.push(&locks[i], "x", LockLevel::container));
  EXPECT_FALSE(held.push(&locks[HeldLocks::kMax], "x", LockLevel::container));
  EXPECT_EQ(held.depth(), HeldLocks::kMax);
}

TEST(LockRank, TheWrapperTracksTheCallingThread) {
  if (!kChecked) GTEST_SKIP() << "lock-rank checks are compiled out (NDEBUG without NANSCOPE_LOCK_RANKS)";
  Ranked<std::shared_mutex, LockLevel::contexts> outer{"outer"};
  Ranked<std::mutex, LockLevel::part> inner{"inner"};
  const uint32_t before = this_thread().depth();
  {
    std::shared_lock o(outer);
    std::lock_guard i(inner);
    EXPECT_EQ(this_thread().depth(), before + 2);
    std::thread other([&] { EXPECT_EQ(this_thread().depth(), 0u); });  // per thread
    other.join();
  }
  EXPECT_EQ(this_thread().depth(), before);
  std::unique_lock tried(inner, std::try_to_lock);
  EXPECT_TRUE(tried.owns_lock());
  EXPECT_EQ(this_thread().depth(), before + 1);
}

TEST(LockRankDeathTest, TakingAnEarlierLevelAbortsNamingBoth) {
  if (!kChecked) GTEST_SKIP() << "lock-rank checks are compiled out (NDEBUG without NANSCOPE_LOCK_RANKS)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Ranked<std::shared_mutex, LockLevel::contexts> contexts{"Contexts::mu_"};
  Ranked<std::mutex, LockLevel::part> part{"KernelTable::mu_"};
  EXPECT_DEATH(
      {
        std::lock_guard p(part);
        std::shared_lock c(contexts);
      },
      "taking Contexts::mu_ \\(level 2\\) while holding KernelTable::mu_ \\(level 3\\)");
  EXPECT_DEATH(
      {
        std::shared_lock c1(contexts);
        std::shared_lock c2(contexts);  // a shared lock twice: deadlocks once a writer waits
      },
      "taking Contexts::mu_ \\(level 2\\) while holding Contexts::mu_");
}

}  // namespace
}  // namespace nanscope::lock_rank

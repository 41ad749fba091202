#include <gtest/gtest.h>

#include "alloc_map.hpp"

using nanscope::AllocationMap;

TEST(AllocationMap, FindsPointersInsideAllocations) {
  AllocationMap m;
  m.insert(0x1000, 0x100);
  m.insert(0x2000, 0x800);
  auto r = m.find(0x1080);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->base, 0x1000u);
  EXPECT_EQ(r->size, 0x100u);
  EXPECT_TRUE(m.find(0x2000));
  EXPECT_TRUE(m.find(0x27ff));
}

TEST(AllocationMap, MissesGapsAndEnds) {
  AllocationMap m;
  m.insert(0x1000, 0x100);
  EXPECT_FALSE(m.find(0x0fff));
  EXPECT_FALSE(m.find(0x1100));  // one past the end
  EXPECT_FALSE(m.find(0));
}

TEST(AllocationMap, EraseForgetsTheAllocation) {
  AllocationMap m;
  m.insert(0x1000, 0x100);
  EXPECT_TRUE(m.erase(0x1000));
  EXPECT_FALSE(m.erase(0x1000));
  EXPECT_FALSE(m.find(0x1000));
  EXPECT_EQ(m.size(), 0u);
}

TEST(AllocationMap, NewAllocationReplacesStaleOverlaps) {
  AllocationMap m;
  m.insert(0x1000, 0x1000);  // freed without us seeing it
  m.insert(0x1800, 0x100);   // the driver reuses part of the range
  auto r = m.find(0x1880);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->base, 0x1800u);
  EXPECT_FALSE(m.find(0x1000));
  EXPECT_EQ(m.size(), 1u);
}

TEST(AllocationMap, EraseRangeDropsEveryMappingInside) {
  AllocationMap m;  // VMM: several maps inside one reservation, one unmap for all
  m.insert(0x10000, 0x1000);
  m.insert(0x11000, 0x1000);
  m.insert(0x20000, 0x1000);
  m.erase_range(0x10000, 0x2000);
  EXPECT_FALSE(m.find(0x10000));
  EXPECT_FALSE(m.find(0x11000));
  EXPECT_TRUE(m.find(0x20000));
}

TEST(AllocationMap, ZeroSizeIsIgnored) {
  AllocationMap m;
  m.insert(0x1000, 0);
  EXPECT_EQ(m.size(), 0u);
}

TEST(AllocationMap, SpanCoversEveryLiveAllocation) {
  AllocationMap m;
  EXPECT_EQ(m.span().size, 0u);
  m.insert(0x5000, 0x100);
  m.insert(0x1000, 0x100);
  m.insert(0x9000, 0x800);
  EXPECT_EQ(m.span().base, 0x1000u);
  EXPECT_EQ(m.span().size, 0x9800u - 0x1000u);
  m.erase(0x9000);
  EXPECT_EQ(m.span().size, 0x5100u - 0x1000u);
}

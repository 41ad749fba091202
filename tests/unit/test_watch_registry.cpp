#include <gtest/gtest.h>

#include <vector>

#include "watch_registry.hpp"

using namespace nanscope;

namespace {
WatchSpec spec(uint64_t ptr, uint64_t rows, uint64_t row_elements) {
  WatchSpec w;
  w.name = "w";
  w.ptr = ptr;
  w.dtype = DType::f32;
  w.rows = rows;
  w.row_elements = row_elements;
  return w;
}
std::vector<uint32_t> containing(const WatchRegistry& r, uint64_t p) {
  std::vector<uint32_t> ids;
  WatchRegistry::for_each_containing(*r.snapshot(), p, [&](const WatchEntry& e) { ids.push_back(e.id); });
  return ids;
}
}  // namespace

TEST(WatchRegistry, FindsPointersAnywhereInsideTheWatchedExtent) {
  WatchRegistry r;
  const uint32_t a = r.add(spec(0x1000, 4, 16));  // 4 x 16 f32 = 256 bytes
  EXPECT_EQ(containing(r, 0x1000), std::vector<uint32_t>{a});
  EXPECT_EQ(containing(r, 0x10ff), std::vector<uint32_t>{a});
  EXPECT_TRUE(containing(r, 0x1100).empty());
  EXPECT_TRUE(containing(r, 0x0fff).empty());
}

TEST(WatchRegistry, StridedExtentEndsAtTheLastRow) {
  WatchRegistry r;
  WatchSpec w = spec(0x1000, 3, 10);
  w.row_stride = 16;  // (2 * 16 + 10) * 4 = 168 bytes
  r.add(w);
  EXPECT_EQ(containing(r, 0x1000 + 167).size(), 1u);
  EXPECT_TRUE(containing(r, 0x1000 + 168).empty());
}

TEST(WatchRegistry, OverlappingWatchesAreAllReported) {
  WatchRegistry r;
  const uint32_t a = r.add(spec(0x1000, 1, 1024));
  const uint32_t b = r.add(spec(0x1100, 1, 16));
  auto ids = containing(r, 0x1104);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_NE(std::find(ids.begin(), ids.end(), a), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), b), ids.end());
}

TEST(WatchRegistry, RemoveTakesEffectInNewSnapshotsOnly) {
  WatchRegistry r;
  const uint32_t a = r.add(spec(0x1000, 1, 16));
  auto before = r.snapshot();
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(r.remove(a));
  EXPECT_FALSE(r.remove(a));
  EXPECT_TRUE(r.empty());
  EXPECT_TRUE(containing(r, 0x1000).empty());
  EXPECT_EQ(before->size(), 1u);  // a hook holding the old snapshot stays valid
}

TEST(WatchRegistry, IdsAreUniqueAndNonZero) {
  WatchRegistry r;
  const uint32_t a = r.add(spec(0x1000, 1, 1));
  const uint32_t b = r.add(spec(0x1000, 1, 1));
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
}

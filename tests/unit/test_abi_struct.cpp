// Tests for the versioned-struct helper (src/abi_struct.hpp) that nanscope_watch and
// nanscope_get_stats use: older (smaller) and newer (larger) callers are both served.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "abi_struct.hpp"
#include "nanscope/nanscope.h"

namespace nanscope {
namespace {

// A struct in its second version; version 1 ended after `a`.
struct V2 {
  std::size_t struct_size;
  std::uint64_t a;
  std::uint64_t b;
};
constexpr std::size_t kV1 = offsetof(V2, a) + sizeof(std::uint64_t);

// A newer caller's struct: ours plus a field we do not know.
struct Newer {
  V2 known;
  std::uint64_t tail;
};

TEST(AbiStruct, BytesAreTheSmallerOfBothVersionsAndZeroBelowV1) {
  EXPECT_EQ(abi_struct_bytes(kV1 - 1, kV1, sizeof(V2)), 0u);
  EXPECT_EQ(abi_struct_bytes(0, kV1, sizeof(V2)), 0u);
  EXPECT_EQ(abi_struct_bytes(kV1, kV1, sizeof(V2)), kV1);
  EXPECT_EQ(abi_struct_bytes(sizeof(V2), kV1, sizeof(V2)), sizeof(V2));
  EXPECT_EQ(abi_struct_bytes(sizeof(Newer), kV1, sizeof(V2)), sizeof(V2));
}

TEST(AbiStruct, ReadOfAnOlderStructKeepsTheDefaultsOfFieldsItLacks) {
  V2 in{kV1, 7, 99};  // b lies past the caller's struct: must not be read
  V2 out{0, 0, 42};
  ASSERT_TRUE(abi_read(in, kV1, out));
  EXPECT_EQ(out.a, 7u);
  EXPECT_EQ(out.b, 42u);
  EXPECT_EQ(out.struct_size, sizeof(V2));
}

TEST(AbiStruct, ReadOfANewerStructReadsOurFields) {
  Newer in{{sizeof(Newer), 1, 2}, 3};
  V2 out{};
  ASSERT_TRUE(abi_read(in.known, kV1, out));
  EXPECT_EQ(out.a, 1u);
  EXPECT_EQ(out.b, 2u);
}

TEST(AbiStruct, TooSmallIsRejectedAndNothingIsTouched) {
  V2 in{kV1 - 1, 7, 8};
  V2 out{0, 5, 6};
  EXPECT_FALSE(abi_read(in, kV1, out));
  EXPECT_EQ(out.a, 5u);
  V2 ours{sizeof(V2), 1, 2};
  EXPECT_FALSE(abi_write(ours, kV1, in));
  EXPECT_EQ(in.a, 7u);
  EXPECT_EQ(in.struct_size, kV1 - 1);
}

TEST(AbiStruct, WriteToAnOlderStructStopsAtItsEnd) {
  V2 ours{sizeof(V2), 1, 2};
  V2 caller{kV1, 0, 77};  // b is past the caller's struct
  ASSERT_TRUE(abi_write(ours, kV1, caller));
  EXPECT_EQ(caller.a, 1u);
  EXPECT_EQ(caller.b, 77u);
  EXPECT_EQ(caller.struct_size, kV1);
}

TEST(AbiStruct, WriteToANewerStructLeavesItsTailUntouched) {
  V2 ours{sizeof(V2), 1, 2};
  Newer caller{{sizeof(Newer), 0, 0}, 0xdead};
  ASSERT_TRUE(abi_write(ours, kV1, caller.known));
  EXPECT_EQ(caller.known.a, 1u);
  EXPECT_EQ(caller.known.b, 2u);
  EXPECT_EQ(caller.tail, 0xdeadu);
  EXPECT_EQ(caller.known.struct_size, sizeof(Newer));
}

// The public structs are in their first version: V1_SIZE ends at their last field.
TEST(AbiStruct, PublicV1SizesCoverTheFirstVersion) {
  static_assert(NANSCOPE_STATS_V1_SIZE == sizeof(nanscope_stats_t));
  static_assert(NANSCOPE_WATCH_DESC_V1_SIZE == sizeof(nanscope_watch_desc_t));
  nanscope_stats_t small{};
  small.struct_size = NANSCOPE_STATS_V1_SIZE - 1;
  nanscope_stats_t ours{};
  ours.launches = 3;
  EXPECT_FALSE(abi_write(ours, NANSCOPE_STATS_V1_SIZE, small));
  small.struct_size = NANSCOPE_STATS_V1_SIZE;
  EXPECT_TRUE(abi_write(ours, NANSCOPE_STATS_V1_SIZE, small));
  EXPECT_EQ(small.launches, 3u);
}

}  // namespace
}  // namespace nanscope

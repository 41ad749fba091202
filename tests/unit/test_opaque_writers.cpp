// Tests for src/opaque_writers.cpp: the cheap word filter over a launch's parameter bytes, the
// last opaque launch per buffer, forgetting once a scan judged the buffer, and the cap.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "opaque_writers.hpp"
#include "scan_abi.h"

namespace nanscope {
namespace {

TEST(OpaqueWriters, OnlyAlignedWordsInsideTheLiveSpanAreCandidates) {
  // A cuBLASLt-like parameter blob: sizes, a pointer, zeros, a pointer past the span, a pointer.
  const uint64_t words[] = {128, 0x7f0000001000, 0, 0x7f9000000000, 4096, 0x7f0000200040};
  char bytes[sizeof(words) + 4];
  std::memcpy(bytes, words, sizeof(words));
  std::vector<uint64_t> out;
  OpaqueWriters::candidate_words(bytes, sizeof(bytes), 0x7f0000000000, 0x7f0001000000, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], 0x7f0000001000u);
  EXPECT_EQ(out[1], 0x7f0000200040u);
  out.clear();
  OpaqueWriters::candidate_words(bytes, 20, 0x7f0000000000, 0x7f0001000000, out);  // a trailing half word is no word
  EXPECT_EQ(out.size(), 1u);
  OpaqueWriters::candidate_words(nullptr, 64, 0, ~0ull, out);
  EXPECT_EQ(out.size(), 1u);
}

TEST(OpaqueWriters, NamesTheLastOpaqueLaunchUntilAScanJudgesTheBuffer) {
  OpaqueWriters w;
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(w.last(0x1000).has_value());
  w.note(0x1000, {7, 100});
  EXPECT_FALSE(w.empty());
  w.note(0x1000, {9, 101});  // a later opaque launch referenced it again
  ASSERT_TRUE(w.last(0x1000).has_value());
  EXPECT_EQ(w.last(0x1000)->kernel_id, 9u);
  EXPECT_EQ(w.last(0x1000)->launch_id, 101u);
  w.forget(0x1000);
  EXPECT_FALSE(w.last(0x1000).has_value());
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(w.complete());
}

TEST(OpaqueWriters, AtTheCapNewBuffersAreRefusedAndTheMapSaysItIsIncomplete) {
  OpaqueWriters w(2);
  w.note(0x1000, {1, 1});
  w.note(0x2000, {2, 2});
  w.note(0x3000, {3, 3});  // refused
  w.note(0x1000, {4, 4});  // known buffers still update
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.dropped(), 1u);
  EXPECT_FALSE(w.complete());
  EXPECT_FALSE(w.last(0x3000).has_value());
  EXPECT_EQ(w.last(0x1000)->kernel_id, 4u);
}

// A mask filled into a slice of a buffer: the buffer's next initial scan learns the signs, with or
// without an opaque writer noted; judging the buffer forgets them.
TEST(OpaqueWriters, IntendedInfinitiesAreNotedPerBuffer) {
  OpaqueWriters w;
  w.note_intended(0x1000, 0);  // nothing intended: nothing noted
  EXPECT_FALSE(w.history(0x1000));
  w.note_intended(0x1000, NS_INTENT_NEG_INF);
  ASSERT_TRUE(w.history(0x1000));
  EXPECT_EQ(w.history(0x1000)->intended_inf, NS_INTENT_NEG_INF);
  EXPECT_FALSE(w.history(0x1000)->last());  // no writer to name
  OpaqueWrite op;
  op.kernel_id = 3;
  op.launch_id = 9;
  w.note(0x1000, op);
  w.note_intended(0x1000, NS_INTENT_POS_INF);
  EXPECT_EQ(w.history(0x1000)->intended_inf, NS_INTENT_NEG_INF | NS_INTENT_POS_INF);
  EXPECT_EQ(w.history(0x1000)->last()->launch_id, 9u);
  CandidateList merged;
  merged.merge(*w.history(0x1000));
  EXPECT_EQ(merged.intended_inf, NS_INTENT_NEG_INF | NS_INTENT_POS_INF);
  w.forget(0x1000);
  EXPECT_FALSE(w.history(0x1000));
}

}  // namespace
}  // namespace nanscope

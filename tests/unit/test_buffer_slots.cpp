// Tests for src/buffer_slots.cpp: slot references (slot | generation << 16), the same ref for the
// same buffer, LRU eviction that reuses the slot under a new generation (never 0), lookups by an
// address inside a tracked extent, and freed ranges giving their slots back.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <set>

#include "buffer_slots.hpp"

namespace nanscope {
namespace {

uint32_t slot_of(uint32_t ref) { return ref & 0xffffu; }
uint32_t gen_of(uint32_t ref) { return ref >> 16; }

constexpr uint64_t kA = 0x10000, kB = 0x20000, kC = 0x30000;

TEST(BufferSlots, SamePtrGetsTheSameRef) {
  BufferSlots s(4);
  const uint32_t r = s.ref_for(kA, DType::f32, 256);
  EXPECT_LT(slot_of(r), 4u);
  EXPECT_NE(gen_of(r), 0u);
  EXPECT_EQ(s.ref_for(kA), r);                     // seen again as an input
  EXPECT_EQ(s.ref_for(kA, DType::f16, 128), r);    // rescanned with another extent
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.evictions(), 0u);
}

TEST(BufferSlots, DifferentPtrsGetDifferentSlots) {
  BufferSlots s(3);
  const uint32_t ra = s.ref_for(kA), rb = s.ref_for(kB), rc = s.ref_for(kC);
  const std::set<uint32_t> slots = {slot_of(ra), slot_of(rb), slot_of(rc)};
  EXPECT_EQ(slots.size(), 3u);
  for (uint32_t r : {ra, rb, rc}) {
    EXPECT_LT(slot_of(r), 3u);
    EXPECT_NE(gen_of(r), 0u);
  }
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.evictions(), 0u);
}

TEST(BufferSlots, FullEvictsTheLeastRecentlyUsedUnderANewGeneration) {
  BufferSlots s(2);
  const uint32_t ra = s.ref_for(kA, DType::f32, 64);
  const uint32_t rb = s.ref_for(kB, DType::f32, 64);
  EXPECT_EQ(s.ref_for(kA), ra);  // A is now the most recently used: B goes first
  const uint32_t rc = s.ref_for(kC, DType::f32, 64);
  EXPECT_EQ(s.evictions(), 1u);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(slot_of(rc), slot_of(rb));  // B's slot, reused
  EXPECT_NE(gen_of(rc), gen_of(rb));    // so a stale word of B's never matches C
  EXPECT_NE(rc, rb);
  EXPECT_NE(gen_of(rc), 0u);
  EXPECT_FALSE(s.containing(kB));       // B is no longer tracked
  ASSERT_TRUE(s.containing(kC));
  EXPECT_EQ(s.containing(kC)->ref, rc);
  EXPECT_EQ(s.ref_for(kA), ra);         // A kept its slot; C is now the least recently used

  // B comes back: a new buffer as far as the slots know, in C's slot under yet another generation.
  const uint32_t rb2 = s.ref_for(kB, DType::f32, 64);
  EXPECT_EQ(s.evictions(), 2u);
  EXPECT_EQ(slot_of(rb2), slot_of(rc));
  EXPECT_NE(rb2, rb);
  EXPECT_NE(rb2, rc);
  EXPECT_EQ(s.ref_for(kA), ra);
  EXPECT_FALSE(s.containing(kC));
}

TEST(BufferSlots, GenerationIsNeverZeroEvenWhenItWraps) {
  BufferSlots s(1);  // every new buffer evicts the last one and bumps slot 0's generation
  uint32_t prev = s.ref_for(kA);
  EXPECT_EQ(slot_of(prev), 0u);
  for (uint32_t i = 1; i < 70000; ++i) {  // past 2^16 handouts
    const uint32_t r = s.ref_for(i % 2 ? kB : kA);
    ASSERT_EQ(slot_of(r), 0u) << i;
    ASSERT_NE(gen_of(r), 0u) << i;
    ASSERT_NE(r, prev) << i;
    prev = r;
  }
  EXPECT_EQ(s.evictions(), 69999u);
  EXPECT_EQ(s.size(), 1u);
}

TEST(BufferSlots, ZeroSlotsMeansOne) {
  BufferSlots s(0);
  const uint32_t ra = s.ref_for(kA);
  EXPECT_EQ(slot_of(ra), 0u);
  EXPECT_NE(gen_of(ra), 0u);
  EXPECT_EQ(s.ref_for(kA), ra);
  s.ref_for(kB);
  EXPECT_EQ(s.evictions(), 1u);
  EXPECT_EQ(s.size(), 1u);
}

TEST(BufferSlots, ContainingFindsTheTrackedExtent) {
  BufferSlots s(4);
  const uint32_t ra = s.ref_for(kA, DType::f32, 256);
  s.ref_for(kB);  // only seen as an input: no dtype, no extent
  std::optional<TrackedBuffer> hit = s.containing(kA);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->ptr, kA);
  EXPECT_EQ(hit->bytes, 256u);
  EXPECT_EQ(hit->dtype, DType::f32);
  EXPECT_EQ(hit->ref, ra);
  ASSERT_TRUE(s.containing(kA + 100));
  EXPECT_EQ(s.containing(kA + 100)->ptr, kA);
  ASSERT_TRUE(s.containing(kA + 255));  // last byte
  EXPECT_FALSE(s.containing(kA + 256));  // one past the end
  EXPECT_FALSE(s.containing(kA - 1));
  EXPECT_FALSE(s.containing(0));
  EXPECT_FALSE(s.containing(kB));        // dtype unknown: not a copy target
  EXPECT_FALSE(s.containing(kB + 8));
  EXPECT_FALSE(s.containing(kC));

  s.ref_for(kA);  // seen as an input again: the extent and dtype stay
  ASSERT_TRUE(s.containing(kA + 200));
  EXPECT_EQ(s.containing(kA + 200)->dtype, DType::f32);

  const uint32_t rb = s.ref_for(kB, DType::f16, 64);  // now scanned: it has an extent
  ASSERT_TRUE(s.containing(kB + 63));
  EXPECT_EQ(s.containing(kB + 63)->ref, rb);
  EXPECT_EQ(s.containing(kB + 63)->dtype, DType::f16);
  EXPECT_FALSE(s.containing(kB + 64));
}

TEST(BufferSlots, ForgetRangeDropsEveryBufferInsideAndGivesSlotsBack) {
  BufferSlots s(4);
  const uint64_t base = 0x100000, size = 0x1000;
  const uint32_t r0 = s.ref_for(base, DType::f32, 64);
  s.ref_for(base + 0x100, DType::f32, 64);
  s.ref_for(base + 0xfff, DType::f32, 1);
  const uint32_t rend = s.ref_for(base + size, DType::f32, 64);  // the next allocation
  EXPECT_EQ(s.size(), 4u);

  s.forget_range(base, size);
  EXPECT_EQ(s.size(), 1u);
  EXPECT_FALSE(s.containing(base));
  EXPECT_FALSE(s.containing(base + 0x110));
  ASSERT_TRUE(s.containing(base + size));
  EXPECT_EQ(s.containing(base + size)->ref, rend);

  // Three slots are free again: no eviction needed, and the same address is a new buffer.
  const uint32_t again = s.ref_for(base, DType::f32, 64);
  EXPECT_NE(again, r0);
  EXPECT_NE(gen_of(again), 0u);
  s.ref_for(base + 0x100);
  s.ref_for(base + 0x200);
  EXPECT_EQ(s.evictions(), 0u);
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.ref_for(base + size), rend);
}

TEST(BufferSlots, ForgottenSlotReusedWithANewGeneration) {
  BufferSlots s(2);
  const uint32_t ra = s.ref_for(kA, DType::f32, 64);
  const uint32_t rb = s.ref_for(kB, DType::f32, 64);
  s.forget_range(kA, 64);
  EXPECT_EQ(s.size(), 1u);
  const uint32_t ra2 = s.ref_for(kA, DType::f32, 64);
  EXPECT_EQ(s.evictions(), 0u);           // the freed slot, not B's
  EXPECT_EQ(slot_of(ra2), slot_of(ra));
  EXPECT_NE(gen_of(ra2), gen_of(ra));
  EXPECT_NE(ra2, ra);
  EXPECT_EQ(s.ref_for(kB), rb);

  s.forget_range(kC, 0x1000);  // nothing there: nothing changes
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.ref_for(kA), ra2);
}

// A buffer first seen as an input (written by the host, or before nanscope attached) is handed
// out once for an initial scan, so the first reader's scan judges it from a known state.
TEST(BufferSlots, AnInputNeverScannedIsClaimedForOneInitialScan) {
  BufferSlots s(4);
  const auto first = s.claim_initial_scan(kA, DType::bf16, 512);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->ptr, kA);
  EXPECT_EQ(first->bytes, 512u);
  EXPECT_EQ(first->dtype, DType::bf16);
  EXPECT_EQ(first->ref, s.ref_for(kA));
  EXPECT_FALSE(s.claim_initial_scan(kA, DType::bf16, 512).has_value());  // once only
}

TEST(BufferSlots, AnOutputNeedsNoInitialScan) {
  BufferSlots s(4);
  s.ref_for_output(kA, DType::f32, 256);
  EXPECT_FALSE(s.claim_initial_scan(kA, DType::f32, 256).has_value());
  // Seen only as an input (no scan wrote its word yet): still claimable.
  s.ref_for(kB, DType::f32, 256);
  EXPECT_TRUE(s.claim_initial_scan(kB, DType::f32, 256).has_value());
}

TEST(BufferSlots, AnInitialScanNeedsAnExtentAndAType) {
  BufferSlots s(4);
  EXPECT_FALSE(s.claim_initial_scan(kA, DType::none, 256).has_value());
  EXPECT_FALSE(s.claim_initial_scan(kA, DType::f32, 2).has_value());  // less than one element
  EXPECT_TRUE(s.claim_initial_scan(kA, DType::f32, 4).has_value());
}

TEST(BufferSlots, AFreedOrEvictedBufferIsUnknownAgain) {
  BufferSlots s(1);
  s.ref_for_output(kA, DType::f32, 256);
  s.forget_range(kA, 256);
  EXPECT_TRUE(s.claim_initial_scan(kA, DType::f32, 256).has_value());
  s.ref_for_output(kB, DType::f32, 256);  // evicts kA (one slot)
  EXPECT_TRUE(s.claim_initial_scan(kA, DType::f32, 256).has_value());
}

// An opaque launch (a GEMM) may have rewritten a buffer a scan judged: its word must no longer
// speak for it, so the next reader's initial scan judges it again.
TEST(BufferSlots, InvalidateMovesAJudgedBufferToANewGenerationOnce) {
  BufferSlots s(4);
  const uint32_t r = s.ref_for_output(kA, DType::f16, 256);
  const auto inv = s.invalidate(kA + 64);  // a pointer inside it
  ASSERT_TRUE(inv.has_value());
  EXPECT_EQ(slot_of(inv->ref), slot_of(r));
  EXPECT_NE(gen_of(inv->ref), gen_of(r));
  EXPECT_EQ(s.ref_for(kA), inv->ref);
  EXPECT_FALSE(s.invalidate(kA).has_value());  // already unknown
  const auto again = s.claim_initial_scan(kA, DType::f16, 256);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->ref, inv->ref);
  EXPECT_FALSE(s.invalidate(kB).has_value());  // not tracked
}

// The sentinel tier's eager window opens: every judged buffer moves to a new generation at once,
// so each is scanned again before its first reader in the window claims an origin.
TEST(BufferSlots, InvalidateAllForgetsEveryJudgedBuffer) {
  BufferSlots s(4);
  const uint32_t a = s.ref_for_output(kA, DType::f16, 256), b = s.ref_for_output(kB, DType::f32, 128);
  s.ref_for(kB + 4096);  // seen as an input only: nothing judged to forget
  EXPECT_EQ(s.invalidate_all(), 2u);
  EXPECT_NE(gen_of(s.ref_for(kA)), gen_of(a));
  EXPECT_NE(gen_of(s.ref_for(kB)), gen_of(b));
  EXPECT_EQ(s.invalidate_all(), 0u) << "already unknown";
  EXPECT_TRUE(s.claim_initial_scan(kA, DType::f16, 256).has_value());
  EXPECT_TRUE(s.claim_initial_scan(kB, DType::f32, 128).has_value());
  EXPECT_EQ(s.invalidate_all(), 2u) << "the initial scans judge them again";
}

// A view inside an output (the key half of a fused QKV GEMM output), judged clean by an initial
// scan on a clean step, must not keep that state once the output is written again: its next
// reader scans it (H200 S21: GPT-2's key copy was judged `introduced` on the sick step).
TEST(BufferSlots, WritingABufferForgetsTheViewsJudgedInsideIt) {
  BufferSlots s(8);
  s.ref_for_output(kA, DType::f16, 1536);                      // qkv, step 1
  ASSERT_TRUE(s.claim_initial_scan(kA + 512, DType::f16, 1024));  // the key view's initial scan
  EXPECT_FALSE(s.ref_for_input(kA + 512, DType::f16).second) << "judged, for step 1";
  s.ref_for_output(kB, DType::f16, 64);  // a write elsewhere changes nothing
  EXPECT_FALSE(s.ref_for_input(kA + 512, DType::f16).second);
  s.ref_for_output(kA, DType::f16, 1536);  // qkv, step 2
  EXPECT_TRUE(s.ref_for_input(kA + 512, DType::f16).second) << "step 2's reader must scan the view again";
  EXPECT_TRUE(s.claim_initial_scan(kA + 512, DType::f16, 1024).has_value());
  EXPECT_FALSE(s.ref_for_input(kA, DType::f16).second) << "the output itself was just judged";
  // A buffer enclosing a write keeps its state (a cache a step writes a slice of).
  s.ref_for_output(kC, DType::f32, 4096);
  s.ref_for_output(kC + 1024, DType::f32, 256);
  EXPECT_FALSE(s.ref_for_input(kC, DType::f32).second);
}

// PyTorch's caching allocator gives one address to tensors of other sizes and types: the initial
// scan takes the reader's extent and type, never what an earlier tensor there left.
TEST(BufferSlots, AnInitialScanTakesTheReadersExtentNotAStaleOne) {
  BufferSlots s(4);
  s.ref_for(kA, DType::f32, 65536);  // an earlier tensor at kA, seen as an input
  const auto claimed = s.claim_initial_scan(kA, DType::f16, 262144);
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->dtype, DType::f16);
  EXPECT_EQ(claimed->bytes, 262144u);
}

TEST(BufferSlots, AnInputSaysWhetherAScanJudgedIt) {
  BufferSlots s(4);
  auto [ref, unjudged] = s.ref_for_input(kA, DType::f32);
  EXPECT_TRUE(unjudged);
  EXPECT_EQ(ref, s.ref_for(kA));
  s.ref_for_output(kA, DType::f32, 256);
  EXPECT_FALSE(s.ref_for_input(kA, DType::f32).second);
  s.invalidate(kA);
  EXPECT_TRUE(s.ref_for_input(kA, DType::f32).second);
}

// Which launch last judged a buffer travels with its slot: an opaque launch's words are looked up
// there before it makes them unknown (candidates given NaN, lineage_candidate.cpp).
TEST(BufferSlots, TheLastJudgementIsNamedByItsLaunch) {
  BufferSlots s(4);
  s.ref_for_output(kA, DType::f32, 256, 60);
  ASSERT_TRUE(s.containing(kA + 16).has_value());
  EXPECT_EQ(s.containing(kA + 16)->judged_by, 60u);
  s.ref_for_output(kA, DType::f32, 256, 61);  // a later scan of the same buffer
  EXPECT_EQ(s.containing(kA)->judged_by, 61u);
  const auto initial = s.claim_initial_scan(kB, DType::f32, 256, 70);  // named after its opaque writer
  ASSERT_TRUE(initial.has_value());
  EXPECT_EQ(initial->judged_by, 70u);
  s.invalidate(kA);  // an opaque launch may have written it: no judgement stands
  EXPECT_FALSE(s.containing(kA)->state_known);
}

// A memset's scan (f32 for a D32 set of zero) judges the bytes it set but is no evidence of their
// type: a later copy into the buffer finds no typed buffer to rescan, and its invalidate still
// reaches the judged state.
TEST(BufferSlots, AnUntypedBufferKeepsItsStateButOffersNoTypeToRescan) {
  BufferSlots s(4);
  const uint32_t r = s.ref_for_output(kA, DType::f32, 1024);
  s.untype(kA);
  EXPECT_FALSE(s.containing(kA).has_value());
  EXPECT_FALSE(s.ref_for_input(kA, DType::bf16).second);  // judged: its reader claims no initial scan
  EXPECT_EQ(s.ref_for(kA), r);
  const auto inv = s.invalidate(kA);  // a copy into it
  ASSERT_TRUE(inv.has_value());
  EXPECT_TRUE(s.ref_for_input(kA, DType::bf16).second);  // its reader judges it again
  s.untype(kB);  // untracked: nothing happens
  EXPECT_FALSE(s.containing(kB).has_value());
}

// The allocator's block serial at the scan that typed a buffer travels with it (typed_at), so a
// later reader of the type can ask whether the memory still holds that tensor.
TEST(BufferSlots, AScanThatTypesABufferRecordsWhenItDid) {
  BufferSlots s(4);
  s.ref_for_output(kA, DType::bf16, 256, 10, 7);
  EXPECT_EQ(s.containing(kA)->typed_at, 7u);
  s.ref_for_output(kA, DType::f32, 512, 11, 9);  // a new tensor there, typed by its writer
  EXPECT_EQ(s.containing(kA)->typed_at, 9u);
  EXPECT_EQ(s.containing(kA)->dtype, DType::f32);
  s.invalidate(kA);
  const auto claimed = s.claim_initial_scan(kA, DType::f16, 128, 12, 11);
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->typed_at, 11u);
  EXPECT_EQ(s.containing(kA)->typed_at, 11u);
}

}  // namespace
}  // namespace nanscope

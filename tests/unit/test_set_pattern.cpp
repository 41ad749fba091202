#include "set_pattern.hpp"

#include <gtest/gtest.h>

namespace nanscope {
namespace {

TEST(SetPattern, ZeroIsCleanAtEveryWidth) {
  for (uint32_t w : {1u, 2u, 4u}) EXPECT_TRUE(set_pattern_finite(0, w)) << w;
}

TEST(SetPattern, AllOnesIsNaNInEveryFloat) {
  // XLA's Memset32BitValue of an int32 -1 (jax_pool's healthy run, H100, session 27: read as f32,
  // 524,288 NaN that were never a float).
  EXPECT_FALSE(set_pattern_finite(0xffffffffu, 4));
  EXPECT_FALSE(set_pattern_finite(0xffffu, 2));
  EXPECT_FALSE(set_pattern_finite(0xffu, 1));  // the autotuner's redzone bytes
}

TEST(SetPattern, AFiniteF32CanStillBeNonFiniteAsAHalf) {
  EXPECT_TRUE(set_pattern_finite(0x00000000u, 4));
  // 1.0f is 0x3f800000: its halves read as f16 are 0x0000 and 0x3f80 (finite), as bf16 1.0 and 0.
  EXPECT_TRUE(set_pattern_finite(0x3f800000u, 4));
  // 0x7c00 in the low half: f16 +inf, although the f32 (a subnormal, 4.4e-41) is finite.
  EXPECT_FALSE(set_pattern_finite(0x00007c00u, 4));
  // -inf as f32 (a max reduction's init): not finite.
  EXPECT_FALSE(set_pattern_finite(0xff800000u, 4));
}

TEST(SetPattern, EveryPhaseOfThePatternIsRead) {
  // 0x7f80 as a 16-bit pattern is bf16 +inf at phase 0; as bytes 0x80 0x7f it is also e4m3 NaN
  // (0x7f) at phase 1.
  EXPECT_FALSE(set_pattern_finite(0x7f80u, 2));
  // 0x807f: bytes 0x7f 0x80: e4m3's 0x7f (NaN) at phase 0, and bf16 0x807f (finite), read
  // shifted by one byte 0x7f80 (+inf).
  EXPECT_FALSE(set_pattern_finite(0x807fu, 2));
  // 0x40 repeated is finite in every type (32.50196... as f64, 2.125 as f16).
  EXPECT_TRUE(set_pattern_finite(0x40u, 1));
  // 0x7c as bytes: e5m2 +inf.
  EXPECT_FALSE(set_pattern_finite(0x7cu, 1));
}

TEST(SetPattern, OnlyMemsetWidthsAreKnown) {
  EXPECT_FALSE(set_pattern_finite(0, 0));
  EXPECT_FALSE(set_pattern_finite(0, 3));
  EXPECT_FALSE(set_pattern_finite(0, 8));
  EXPECT_EQ(set_pattern_scan_dtype(4), DType::f32);
  EXPECT_EQ(set_pattern_scan_dtype(2), DType::f16);
  EXPECT_EQ(set_pattern_scan_dtype(1), DType::f8e4m3);
}

TEST(SetPattern, TheScanReadsWhatTheSetWroteAndNoMore) {
  // cuMemsetD32Async(dst, 0, 16384): XLA's memzero of f32[64,256].
  const auto eager = set_scan(0x1000, 0, 4, 16384, 1, 0, 0);
  ASSERT_TRUE(eager.has_value());
  EXPECT_EQ(eager->ptr, 0x1000u);
  EXPECT_EQ(eager->elements, 16384u);
  EXPECT_EQ(eager->dtype, DType::f32);
  EXPECT_EQ(eager->bytes(), 65536u);
  // A graph memset node of 4 contiguous rows of 100 bytes (pitch = row).
  const auto rows = set_scan(0x1000, 0, 1, 100, 4, 100, 0);
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->elements, 400u);
  EXPECT_EQ(rows->dtype, DType::f8e4m3);
  // Rows with gaps between them: the gaps hold anything.
  EXPECT_FALSE(set_scan(0x1000, 0, 1, 100, 4, 128, 0).has_value());
  // NANSCOPE_MAX_SCAN_BYTES caps it; a cap below one element leaves nothing.
  EXPECT_EQ(set_scan(0x1000, 0, 2, 1000, 1, 0, 64)->elements, 32u);
  EXPECT_FALSE(set_scan(0x1000, 0, 4, 1000, 1, 0, 2).has_value());
  // A pattern that is NaN in some type: no scan.
  EXPECT_FALSE(set_scan(0x1000, 0xffffffffu, 4, 16, 1, 0, 0).has_value());
  EXPECT_FALSE(set_scan(0x1000, 0, 4, 16, 0, 0, 0).has_value());
}

// Each case from a real run: H100, session 27.
TEST(SetPattern, WhatACopyDoesToTheStateKept) {
  using J = CopyJudgement;
  // A host copy into a torch tensor an earlier kernel's scan typed: rescanned at that type.
  EXPECT_EQ(judge_copy(false, 0, 0, true, false, false), J::rescan_typed);
  // jax_stax_train's healthy twin: an int32 scalar copied from the host into XLA's pool where an
  // f32 had been: not read as f32.
  EXPECT_EQ(judge_copy(false, 0, 0, true, true, false), J::forget);
  // jax_pool's healthy twin: XLA set 0xFFFFFFFF where f32 buffers had been.
  EXPECT_EQ(judge_copy(true, 0xffffffffu, 4, true, true, false), J::forget);
  // jax_scan_rnn: XLA's memzero of the loop's carried state, in the pool or untyped: scanned.
  EXPECT_EQ(judge_copy(true, 0, 4, true, true, false), J::scan_set);
  EXPECT_EQ(judge_copy(true, 0, 4, false, false, false), J::scan_set);
  // cuBLASLt zeroing its workspace inside a GEMM: the call's scan judges its output.
  EXPECT_EQ(judge_copy(true, 0, 4, false, false, true), J::forget);
  // A typed torch buffer set to NaN bytes (a test's poison): rescanned at its own type.
  EXPECT_EQ(judge_copy(true, 0xffu, 1, true, false, false), J::rescan_typed);
  // A host copy into memory no scan typed: forgotten, for the next typed reader.
  EXPECT_EQ(judge_copy(false, 0, 0, false, false, false), J::forget);
  // XLA copying a loop's carried f32 out of a typed buffer into its pool: the source's type.
  EXPECT_EQ(judge_copy(false, 0, 0, true, true, false, true), J::rescan_as_source);
  EXPECT_EQ(judge_copy(false, 0, 0, false, false, false, true), J::rescan_as_source);
  // ... but a typed destination outside a pool keeps its own type (as before).
  EXPECT_EQ(judge_copy(false, 0, 0, true, false, false, true), J::rescan_typed);
}

}  // namespace
}  // namespace nanscope

// Tests for src/extent_policy.cpp: an extent that only the end of a driver allocation larger than
// NANSCOPE_MAX_WHOLE_ALLOC_BYTES bounds is an allocator pool's (not scanned, not truncated);
// exact extents and PyTorch tensor blocks are unaffected whatever their allocation's size; and a
// copy's or memset's rescan, which reads the tracked buffer holding its destination
// (LaunchInstrumenter::on_copy), never reads a pool: the pool's buffers were never tracked with
// the pool's extent.
#include <gtest/gtest.h>

#include <cstdint>

#include "buffer_slots.hpp"
#include "config.hpp"
#include "extent_policy.hpp"

namespace nanscope {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kBound = kDefaultMaxWholeAllocBytes;
// JAX's preallocated BFC pool on an H200: 75% of the GPU as one driver allocation.
constexpr uint64_t kPoolBase = 0x7f0000000000, kPoolBytes = 105 * kGiB;

TEST(ExtentPolicy, TheDefaultBoundIsOneGiB) { EXPECT_EQ(kDefaultMaxWholeAllocBytes, kGiB); }

TEST(ExtentPolicy, AnAllocationEndOverTheBoundIsAPool) {
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, kPoolBytes, kBound), ExtentVerdict::pool);
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, kBound + 1, kBound), ExtentVerdict::pool);
}

TEST(ExtentPolicy, AnAllocationEndUpToTheBoundIsScanned) {
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, kBound, kBound), ExtentVerdict::scan);
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, 4096, kBound), ExtentVerdict::scan);
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, 0, kBound), ExtentVerdict::scan);
}

TEST(ExtentPolicy, ExactExtentsAndTensorBlocksAreNeverRefusedWhateverTheAllocation) {
  for (const uint64_t allocation : {uint64_t{4096}, kBound, kBound + 1, kPoolBytes, UINT64_MAX}) {
    EXPECT_EQ(extent_policy(ExtentSource::exact, allocation, kBound), ExtentVerdict::scan) << allocation;
    EXPECT_EQ(extent_policy(ExtentSource::tensor_block, allocation, kBound), ExtentVerdict::scan) << allocation;
    EXPECT_EQ(extent_policy(ExtentSource::exact, allocation, 0), ExtentVerdict::scan) << allocation;
  }
}

TEST(ExtentPolicy, BoundZeroRefusesEveryAllocationEndAndTheLargestBoundNone) {
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, 1, 0), ExtentVerdict::pool);
  EXPECT_EQ(extent_policy(ExtentSource::allocation_end, kPoolBytes, UINT64_MAX), ExtentVerdict::scan);
}

TEST(ScanBytesFrom, APointerIntoAPoolIsRefusedNotTruncated) {
  const ScanBytes s = scan_bytes_from(kPoolBase + 3 * kGiB, kPoolBase, kPoolBytes, ExtentSource::allocation_end, kBound);
  EXPECT_TRUE(s.pool);
  EXPECT_EQ(s.bytes, 0u);  // not even the first bound's worth: that would read neighbours too
}

TEST(ScanBytesFrom, ASmallAllocationIsScannedFromThePointerToItsEnd) {
  const ScanBytes s = scan_bytes_from(0x1000 + 256, 0x1000, 4096, ExtentSource::allocation_end, kBound);
  EXPECT_FALSE(s.pool);
  EXPECT_EQ(s.bytes, 4096u - 256u);
}

TEST(ScanBytesFrom, ATensorBlockInsideABigSegmentIsScannedToTheBlocksEnd) {
  // The block's range is the tensor's, however large the segment around it.
  const ScanBytes s = scan_bytes_from(kPoolBase + 64, kPoolBase, 8 * kGiB, ExtentSource::tensor_block, kBound);
  EXPECT_FALSE(s.pool);
  EXPECT_EQ(s.bytes, 8 * kGiB - 64);
}

TEST(ScanBytesFrom, APointerOutsideTheRangeHasNoExtent) {
  EXPECT_EQ(scan_bytes_from(0x500, 0x1000, 4096, ExtentSource::allocation_end, kBound).bytes, 0u);
  EXPECT_EQ(scan_bytes_from(0x2000, 0x1000, 4096, ExtentSource::allocation_end, kBound).bytes, 0u);
  EXPECT_FALSE(scan_bytes_from(0x2000, 0x1000, 4096, ExtentSource::allocation_end, kBound).pool);
}

TEST(ExtentPolicy, TheReasonIsTheOneTheLogSchemaDocuments) {
  EXPECT_EQ(kPoolExtentReason, "extent unknown (allocator pool)");
}

// The defect measured on the H200: XLA's comparison kernel's typed output in the pool was scanned
// over the whole pool, that extent was tracked, and the autotuner's cuMemsetD32Async into it was
// rescanned over the pool too. A refused output is never tracked, so the memset finds no buffer
// to rescan (its bytes carry no type: it is only noted as the next reader's possible writer).
TEST(CopyRescan, AMemsetIntoAPoolWhoseOutputWasRefusedRescansNothing) {
  BufferSlots slots(64);
  const uint64_t output = kPoolBase + 5 * kGiB;
  const ScanBytes s = scan_bytes_from(output, kPoolBase, kPoolBytes, ExtentSource::allocation_end, kBound);
  ASSERT_TRUE(s.pool);
  if (s.bytes) slots.ref_for_output(output, DType::f32, s.bytes);  // as TypedOutputsCollector: nothing
  EXPECT_FALSE(slots.containing(output + 1024));  // the memset's destination
  EXPECT_EQ(slots.size(), 0u);
}

// A buffer in the pool with an exact extent (a decoder's write, a library call's output) is
// rescanned after a memset into it: that buffer's bytes, never the pool's.
TEST(CopyRescan, AMemsetIntoAnExactBufferInAPoolRescansThatBufferOnly) {
  BufferSlots slots(64);
  const uint64_t buffer = kPoolBase + 7 * kGiB, bytes = 1 << 20;
  const ScanBytes s = scan_bytes_from(buffer, buffer, bytes, ExtentSource::exact, kBound);
  ASSERT_FALSE(s.pool);
  slots.ref_for_output(buffer, DType::f32, s.bytes);
  const auto held = slots.containing(buffer + 4096);  // a memset of 256 bytes at +4 KiB
  ASSERT_TRUE(held);
  EXPECT_EQ(held->ptr, buffer);
  EXPECT_EQ(held->bytes, bytes);
  EXPECT_FALSE(slots.containing(buffer + bytes));  // the pool's next bytes are nobody's
}

}  // namespace
}  // namespace nanscope

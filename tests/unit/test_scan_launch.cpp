// Launch geometry of the scan kernels (src/scan_launch.hpp): which tasks run the zero-rows
// kernel, and its grid (a block per (padding row, chunk) item, at most one per SM).
#include <gtest/gtest.h>

#include "scan_launch.hpp"

namespace {

nanscope_scan_task zero_task(uint64_t rows, uint64_t row_elements, uint32_t dtype) {
  nanscope_scan_task t{};
  t.buffers[0] = {0x10000, rows * row_elements, dtype, 0};
  t.buffer_count = 1;
  t.row_aware_mask = 1;
  t.row_specs[0].rows = rows;
  t.row_specs[0].row_elements = t.row_specs[0].row_stride = row_elements;
  t.row_specs[0].source = NS_PAD_SEQ_LENS;
  t.row_specs[0].fix = 1;
  t.row_specs[0].chunked = 1;
  t.row_specs[0].zero_only = 1;
  return t;
}

TEST(ScanLaunch, ZeroRowsTaskIsEveryBufferZeroPadding) {
  EXPECT_TRUE(nanscope::zero_rows_task(zero_task(8, 128 * 512, NS_BF16)));
  auto fix = zero_task(8, 64, NS_F32);
  fix.row_specs[0].zero_only = 0;  // the fused scan + fix reads every row
  EXPECT_FALSE(nanscope::zero_rows_task(fix));
  auto unaligned = zero_task(8, 63, NS_F32);
  unaligned.row_specs[0].chunked = 0;  // rows not 16-byte aligned: zeroed element by element at the edges
  EXPECT_TRUE(nanscope::zero_rows_task(unaligned));
  auto two = zero_task(8, 64, NS_F32);
  two.buffers[1] = two.buffers[0];
  two.buffer_count = 2;  // another output of the same launch, scanned without a watch
  EXPECT_FALSE(nanscope::zero_rows_task(two));
  two.row_aware_mask = 3;
  two.row_specs[1] = two.row_specs[0];  // two zero_padding watches written by one launch
  EXPECT_TRUE(nanscope::zero_rows_task(two));
  nanscope_scan_task none{};
  EXPECT_FALSE(nanscope::zero_rows_task(none));
  EXPECT_FALSE(nanscope::zero_rows_task(zero_task(0, 64, NS_F32)));  // no rows: the kernel reads row rows - 1
  auto no_source = zero_task(8, 64, NS_F32);
  no_source.row_specs[0].source = NS_PAD_NONE;
  EXPECT_FALSE(nanscope::zero_rows_task(no_source));
}

TEST(ScanLaunch, ZeroRowsGridIsOneBlockPerItemUpToOnePerSm) {
  const nanscope::ScanPolicy p;  // 16 KiB chunks
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(1, 128 * 512, NS_BF16), 132), 8u);     // 128 KiB row
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(8, 128 * 512, NS_BF16), 132), 64u);
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(1024, 128 * 512, NS_BF16), 132), 132u);
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(3, 256, NS_BF16), 132), 3u);           // a chunk per row
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(5, 4, NS_F8E4M3), 132), 5u);           // rows shorter than a vector
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(1, 4097, NS_F32), 132), 1u);  // a chunk + a 4-byte tail it takes
  EXPECT_EQ(nanscope::zero_rows_grid(p, zero_task(1, 4100, NS_F32), 132), 2u);  // one whole vector past a chunk
}

}  // namespace

namespace {

TEST(ScanLaunch, ZeroTaskCarriesWhatTheKernelAndGraphPassesNeed) {
  auto t = zero_task(16, 1500, NS_F16);
  t.row_specs[0].row_stride = 1503;
  t.row_specs[0].source_ptr = 0xabc0;
  t.row_specs[0].pad_value = -1;
  t.row_specs[0].index_i64 = 1;
  t.row_specs[0].host_count = 7;
  unsigned long long states = 0;
  t.buffer_state = &states;
  t.out_state[0] = 5 | 3u << 16;
  const nanscope_zero_task z = nanscope::zero_task_of(t);
  ASSERT_EQ(z.buffer_count, 1u);
  EXPECT_EQ(z.buffer_state, &states);
  const nanscope_zero_buffer& b = z.buffers[0];
  EXPECT_EQ(b.ptr, t.buffers[0].ptr);
  EXPECT_EQ(b.elements, t.buffers[0].elements);
  EXPECT_EQ(b.rows, 16u);
  EXPECT_EQ(b.row_elements, 1500u);
  EXPECT_EQ(b.row_stride, 1503u);
  EXPECT_EQ(b.source_ptr, 0xabc0u);
  EXPECT_EQ(b.pad_value, -1);
  EXPECT_EQ(b.index_i64, 1u);
  EXPECT_EQ(b.host_count, 7u);
  EXPECT_EQ(b.source, static_cast<uint32_t>(NS_PAD_SEQ_LENS));
  EXPECT_EQ(b.dtype, static_cast<uint32_t>(NS_F16));
  EXPECT_EQ(b.out_state, t.out_state[0]);

  // Read back (graph passes): the buffer, its row spec, and that it is a zero_padding fix.
  const nanscope_scan_task back = nanscope::scan_task_of(z);
  EXPECT_TRUE(nanscope::zero_rows_task(back));
  EXPECT_EQ(back.buffers[0].ptr, t.buffers[0].ptr);
  EXPECT_EQ(back.buffers[0].elements, t.buffers[0].elements);
  EXPECT_EQ(back.buffers[0].dtype, t.buffers[0].dtype);
  EXPECT_EQ(back.row_specs[0].row_stride, 1503u);
  EXPECT_EQ(back.out_state[0], t.out_state[0]);

  t.buffer_state = nullptr;  // origin off: the kernel must not touch a state word
  EXPECT_EQ(nanscope::zero_task_of(t).buffers[0].out_state, NANSCOPE_ORIGIN_NONE);
}

}  // namespace

namespace {

TEST(ScanLaunch, ZeroRowsEntryFollowsThePaddingSource) {
  auto t = zero_task(8, 64, NS_BF16);
  EXPECT_STREQ(nanscope::kZeroRowsEntries[nanscope::zero_rows_entry(t)], "nanscope_zero_rows_seq32");
  t.row_specs[0].index_i64 = 1;
  EXPECT_STREQ(nanscope::kZeroRowsEntries[nanscope::zero_rows_entry(t)], "nanscope_zero_rows_seq64");
  t.row_specs[0].source = NS_PAD_MASK;
  EXPECT_STREQ(nanscope::kZeroRowsEntries[nanscope::zero_rows_entry(t)], "nanscope_zero_rows_mask");
  t.row_specs[0].source = NS_PAD_COUNT_DEVICE;
  EXPECT_STREQ(nanscope::kZeroRowsEntries[nanscope::zero_rows_entry(t)], "nanscope_zero_rows_count");
  t.row_specs[0].source = NS_PAD_COUNT_HOST;
  EXPECT_STREQ(nanscope::kZeroRowsEntries[nanscope::zero_rows_entry(t)], "nanscope_zero_rows_count");
  t.buffers[1] = t.buffers[0];
  t.row_specs[1] = t.row_specs[0];
  t.buffer_count = 2;
  t.row_aware_mask = 3;
  EXPECT_STREQ(nanscope::kZeroRowsEntries[nanscope::zero_rows_entry(t)], "nanscope_zero_rows");
}

}  // namespace

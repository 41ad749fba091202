// Launch geometry of the scan kernels (src/scan_launch.hpp): which tasks run the zero-rows
// kernel, and its grid (a block per (padding row, chunk) item, at most one per SM).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

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

// Which entry point a task runs: the detection-only row kernel only when no row spec asks for
// the fix (it has no fix code), the general one for the fix, its zero_padding variant when a
// buffer is zero_padding, and the plain kernel without row specs.
TEST(ScanLaunch, ScanEntryFollowsTheRowSpecs) {
  using nanscope::ScanEntry;
  auto t = zero_task(8, 64, NS_F32);
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::rows_zero);
  t.row_specs[0].zero_only = 0;
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::rows);
  t.row_specs[0].fix = 0;
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::rows_detect);
  t.row_specs[0].fix = 1, t.row_specs[0].source = NS_PAD_NONE;  // nothing to fix without a source
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::rows_detect);
  t.row_specs[0].source = NS_PAD_SEQ_LENS;
  t.buffers[1] = t.buffers[0], t.buffer_count = 2, t.row_aware_mask = 3;
  t.row_specs[1] = t.row_specs[0], t.row_specs[0].fix = 0;  // one fix among detections: the general kernel
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::rows);
  t.row_aware_mask = 1;  // the fixing spec belongs to a buffer scanned plainly: not a fix
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::rows_detect);
  t.row_aware_mask = 0;
  EXPECT_EQ(nanscope::scan_entry(t), ScanEntry::plain);
  EXPECT_STREQ(nanscope::kScanEntryNames[static_cast<unsigned>(ScanEntry::rows_detect)], "nanscope_scan_rows_detect");
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

// ---- merged scan nodes (nanscope_scan_group)

nanscope_scan_task plain_task(uint64_t launch, uint32_t buffers, uint64_t base) {
  nanscope_scan_task t{};
  t.launch_id = launch;
  t.correlation_id = launch * 10;
  t.kernel_id = static_cast<uint32_t>(launch + 100);
  t.graph_node = static_cast<uint32_t>(launch);
  t.graph_id = 7;
  t.accum = reinterpret_cast<nanscope_scan_accum*>(base + 0xa000);
  t.channel_capacity = 4096;
  for (uint32_t b = 0; b < buffers; ++b) {
    t.buffers[b] = {base + 0x1000 * b, 256 * (b + 1), NS_F32, b};
    t.out_state[b] = static_cast<uint32_t>(launch * 16 + b);
  }
  t.buffer_count = buffers;
  t.in_count = 2;
  t.in_state[0] = 11, t.in_state[1] = static_cast<uint32_t>(launch);
  t.origin_flags = NS_ORIGIN_READS_UNTRACKED;
  return t;
}

TEST(ScanGroup, LaunchesAppendInOrderAndReadBackAsTheirTasks) {
  nanscope_scan_group g{};
  const auto a = plain_task(1, 2, 0x100000), b = plain_task(2, 1, 0x200000);
  ASSERT_TRUE(nanscope::append_launch(g, a));
  ASSERT_TRUE(nanscope::append_launch(g, b));
  EXPECT_EQ(g.launch_count, 2u);
  EXPECT_EQ(g.buffer_count, 3u);
  EXPECT_EQ(g.accum, a.accum) << "the first member's accumulator";
  EXPECT_EQ(g.graph_id, 7u);
  EXPECT_EQ((std::vector<int>{g.launch_of[0], g.launch_of[1], g.launch_of[2]}), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(g.launches[1].kernel_id, 102u);
  EXPECT_EQ(g.launches[1].in_state[1], 2u);
  const auto back = nanscope::launch_task(g, 1);
  EXPECT_EQ(back.buffer_count, 1u);
  EXPECT_EQ(back.buffers[0].ptr, b.buffers[0].ptr);
  EXPECT_EQ(back.out_state[0], b.out_state[0]);
  EXPECT_EQ(back.launch_id, 2u);
  EXPECT_EQ(back.correlation_id, 20u);
  EXPECT_EQ(back.graph_node, 2u);
  EXPECT_EQ(back.origin_flags, NS_ORIGIN_READS_UNTRACKED);
  EXPECT_EQ(nanscope::group_max_bytes(g), 512u * 4);
}

TEST(ScanGroup, AppendRefusesWhatDoesNotFit) {
  nanscope_scan_group g{};
  ASSERT_TRUE(nanscope::append_launch(g, plain_task(1, 5, 0x100000)));
  const auto before = g;
  EXPECT_FALSE(nanscope::append_launch(g, plain_task(2, 4, 0x200000)));  // 9 buffers
  EXPECT_FALSE(nanscope::append_launch(g, plain_task(3, 0, 0x300000)));  // nothing to scan
  EXPECT_EQ(0, std::memcmp(&before, &g, sizeof g)) << "a refused launch leaves the group unchanged";
  EXPECT_TRUE(nanscope::append_launch(g, plain_task(4, 3, 0x400000)));
}

TEST(ScanGroup, ReplaceKeepsTheLaunchPlacesAndEmptiesTheRest) {
  nanscope_scan_group g{};
  ASSERT_TRUE(nanscope::append_launch(g, plain_task(1, 2, 0x100000)));
  ASSERT_TRUE(nanscope::append_launch(g, plain_task(2, 2, 0x200000)));
  auto fewer = plain_task(9, 1, 0x900000);
  fewer.graph_node = 1;
  EXPECT_TRUE(nanscope::replace_launch(g, 0, fewer));
  EXPECT_EQ(g.buffers[0].ptr, 0x900000u);
  EXPECT_EQ(g.buffers[1].elements, 0u) << "a place left over scans nothing";
  EXPECT_EQ(g.out_state[1], NANSCOPE_ORIGIN_NONE);
  EXPECT_EQ(g.buffers[2].ptr, 0x200000u) << "the other launch is untouched";
  EXPECT_EQ(g.launches[0].launch_id, 9u);
  EXPECT_FALSE(nanscope::replace_launch(g, 1, plain_task(3, 3, 0x300000))) << "three buffers in two places";
  EXPECT_EQ(g.buffers[2].ptr, 0x300000u);
  EXPECT_EQ(g.buffers[3].ptr, 0x301000u);
  EXPECT_FALSE(nanscope::replace_launch(g, 2, plain_task(3, 1, 0x300000))) << "no such launch";
}

TEST(ScanGroup, SmallNodesGetABlockPerBufferStep) {
  nanscope_scan_group g{};
  ASSERT_TRUE(nanscope::append_launch(g, plain_task(1, 2, 0x100000)));  // 1 KiB and 2 KiB of f32
  const nanscope::ScanPolicy beside = nanscope::overlap_policy();
  EXPECT_EQ(nanscope::group_part_grid(g), 2u) << "one block per buffer";
  EXPECT_EQ(nanscope::group_grid(beside, g, 132), 2u);
  const uint64_t step = NANSCOPE_GROUP_PART_BYTES;
  g.buffers[1].elements = (step + 4) / 4;  // one f32 past a block step: two blocks
  EXPECT_EQ(nanscope::group_part_grid(g), 3u);
  g.buffers[1].elements = 0;  // a place left over still takes its block, as the kernel counts it
  EXPECT_EQ(nanscope::group_part_grid(g), 2u);
  g.buffers[1].elements = 31 * step / 4;
  EXPECT_EQ(nanscope::group_part_grid(g), 32u) << "up to NANSCOPE_GROUP_MAX_PART_BLOCKS";
  g.buffers[1].elements = 32 * step / 4;
  EXPECT_EQ(nanscope::group_part_grid(g), 0u) << "a larger node shares every buffer among its blocks";
  EXPECT_EQ(nanscope::group_grid(beside, g, 132), nanscope::scan_grid(beside, nanscope::group_max_bytes(g), 132));
  EXPECT_EQ(nanscope_group_part_blocks(0), 1u);
  EXPECT_EQ(nanscope_group_part_blocks(step), 1u);
  EXPECT_EQ(nanscope_group_part_blocks(step + 1), 2u);
}

}  // namespace

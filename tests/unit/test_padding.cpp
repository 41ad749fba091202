// Tests for src/padding.cpp: names, row-range compaction, verdict regions and the validation
// of padding specs and watches.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "padding.hpp"

namespace nanscope {
namespace {

// "first-last:p|r ..." for a compact comparison.
std::string show(const std::vector<RowRange>& ranges) {
  std::string s;
  for (const auto& r : ranges) {
    if (!s.empty()) s += ' ';
    s += std::to_string(r.first) + '-' + std::to_string(r.last) + (r.padding ? ":p" : ":r");
  }
  return s;
}

std::string compact(std::vector<std::pair<uint64_t, bool>> rows, std::size_t max_ranges = 64,
                    bool* truncated = nullptr) {
  return show(compact_rows(std::move(rows), max_ranges, truncated));
}

TEST(PaddingNames, SourcesAndActions) {
  EXPECT_STREQ(padding_source_name(PaddingSource::none), "none");
  EXPECT_STREQ(padding_source_name(PaddingSource::seq_lens), "seq_lens");
  EXPECT_STREQ(padding_source_name(PaddingSource::real_count_device), "real_count_device");
  EXPECT_STREQ(padding_source_name(PaddingSource::real_count_host), "real_count_host");
  EXPECT_STREQ(padding_source_name(PaddingSource::mask), "mask");
  EXPECT_STREQ(action_name(Action::detect), "detect");
  EXPECT_STREQ(action_name(Action::fix), "fix");
  EXPECT_STREQ(action_name(Action::abort), "abort");
}

TEST(CompactRows, EmptyInput) {
  bool truncated = true;
  EXPECT_TRUE(compact_rows({}, 8, &truncated).empty());
  EXPECT_FALSE(truncated);
}

TEST(CompactRows, ConsecutiveRowsMerge) {
  EXPECT_EQ(compact({{0, false}, {1, false}, {2, false}}), "0-2:r");
  EXPECT_EQ(compact({{5, true}}), "5-5:p");
}

TEST(CompactRows, GapsSplitRanges) {
  EXPECT_EQ(compact({{0, false}, {1, false}, {3, false}, {4, false}, {9, false}}),
            "0-1:r 3-4:r 9-9:r");
}

TEST(CompactRows, UnsortedInputIsSorted) {
  EXPECT_EQ(compact({{7, true}, {2, false}, {6, true}, {3, false}, {5, true}, {1, false}}),
            "1-3:r 5-7:p");
}

TEST(CompactRows, DuplicatesCollapse) {
  EXPECT_EQ(compact({{4, true}, {4, true}, {3, true}, {4, true}, {3, true}}), "3-4:p");
}

TEST(CompactRows, StatusChangeSplitsConsecutiveRows) {
  // Rows 0..2 real, 3..5 padding, 6 real again: three ranges though the rows touch.
  EXPECT_EQ(compact({{0, false}, {1, false}, {2, false}, {3, true}, {4, true}, {5, true},
                     {6, false}}),
            "0-2:r 3-5:p 6-6:r");
  EXPECT_EQ(compact({{0, true}, {1, false}, {2, true}, {3, false}}), "0-0:p 1-1:r 2-2:p 3-3:r");
}

TEST(CompactRows, RowWithBothStatusesStaysVisible) {
  // A caller bug, but nothing is hidden: both statuses are reported.
  EXPECT_EQ(compact({{2, true}, {2, false}}), "2-2:r 2-2:p");
}

TEST(CompactRows, TruncatesAtTheBound) {
  std::vector<std::pair<uint64_t, bool>> rows;
  for (uint64_t r = 0; r < 20; r += 2) rows.push_back({r, false});  // 10 single-row ranges
  bool truncated = false;
  auto out = compact_rows(rows, 3, &truncated);
  EXPECT_EQ(show(out), "0-0:r 2-2:r 4-4:r");
  EXPECT_TRUE(truncated);

  out = compact_rows(rows, 10, &truncated);  // exactly at the bound: not truncated
  EXPECT_EQ(out.size(), 10u);
  EXPECT_FALSE(truncated);

  out = compact_rows(rows, 0, &truncated);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(truncated);

  EXPECT_EQ(compact(rows, 2), "0-0:r 2-2:r");  // a null `truncated` is allowed
}

TEST(CompactRows, LastRangeStillGrowsAtTheBound) {
  // The bound limits ranges, not rows: the last kept range absorbs its consecutive rows.
  bool truncated = true;
  EXPECT_EQ(compact({{0, false}, {5, true}, {6, true}, {7, true}}, 2, &truncated), "0-0:r 5-7:p");
  EXPECT_FALSE(truncated);
  EXPECT_EQ(compact({{0, false}, {5, true}, {6, true}, {8, true}}, 2, &truncated), "0-0:r 5-6:p");
  EXPECT_TRUE(truncated);
}

TEST(CompactRows, LargeRowNumbers) {
  const uint64_t big = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(compact({{big, true}, {big - 1, true}, {0, true}}),
            "0-0:p " + std::to_string(big - 1) + '-' + std::to_string(big) + ":p");
}

TEST(RowVerdict, Region) {
  RowVerdict v;
  EXPECT_STREQ(v.region(), "unknown");
  v.counts_padding = 3;
  EXPECT_STREQ(v.region(), "padding");
  v.counts_real = 1;
  EXPECT_STREQ(v.region(), "mixed");
  v.counts_padding = 0;
  EXPECT_STREQ(v.region(), "real");
}

// ---------------------------------------------------------------------------------------------
// Validation

PaddingSpec seq_lens_spec() {
  PaddingSpec s;
  s.source = PaddingSource::seq_lens;
  s.rows = 8;
  s.device_ptr = 0x7f0000001000;
  return s;
}

WatchSpec watch() {
  WatchSpec w;
  w.name = "out";
  w.ptr = 0x7f0000100000;
  w.dtype = DType::bf16;
  w.rows = 8;
  w.row_elements = 257;
  w.padding = seq_lens_spec();
  return w;
}

TEST(ValidatePadding, ValidSpecs) {
  EXPECT_EQ(validate(PaddingSpec{}), "");  // none: nothing is read
  EXPECT_EQ(validate(seq_lens_spec()), "");
  auto s = seq_lens_spec();
  s.index_type = IndexType::i64;
  s.pad_value = -(int64_t{1} << 40);
  EXPECT_EQ(validate(s), "");
  s = seq_lens_spec();
  s.source = PaddingSource::real_count_device;
  EXPECT_EQ(validate(s), "");
  s.source = PaddingSource::mask;
  EXPECT_EQ(validate(s), "");
  s = PaddingSpec{};
  s.source = PaddingSource::real_count_host;
  s.rows = 8;
  s.host_count = 8;  // no padding rows
  EXPECT_EQ(validate(s), "");
  s.host_count = 0;  // all padding
  EXPECT_EQ(validate(s), "");
}

TEST(ValidatePadding, RowsMustBePositive) {
  auto s = seq_lens_spec();
  s.rows = 0;
  EXPECT_EQ(validate(s), "rows is 0 (source seq_lens needs the batch's row count)");
}

TEST(ValidatePadding, DeviceSourcesNeedAPointer) {
  for (auto src : {PaddingSource::seq_lens, PaddingSource::real_count_device,
                   PaddingSource::mask}) {
    auto s = seq_lens_spec();
    s.source = src;
    s.device_ptr = 0;
    EXPECT_EQ(validate(s), std::string("device_ptr is 0 (source ") + padding_source_name(src) +
                               " reads device memory)");
  }
  PaddingSpec host;
  host.source = PaddingSource::real_count_host;
  host.rows = 4;
  host.host_count = 2;
  EXPECT_EQ(validate(host), "");  // a host count needs no device pointer
}

TEST(ValidatePadding, HostCountAtMostRows) {
  PaddingSpec s;
  s.source = PaddingSource::real_count_host;
  s.rows = 8;
  s.host_count = 9;
  EXPECT_EQ(validate(s), "host_count (9) is larger than rows (8)");
}

TEST(ValidatePadding, PadValueFitsIndexType) {
  auto s = seq_lens_spec();
  s.pad_value = int64_t{1} << 31;
  EXPECT_EQ(validate(s), "pad_value (2147483648) does not fit index_type int32");
  s.index_type = IndexType::i64;
  EXPECT_EQ(validate(s), "");
}

TEST(ValidatePadding, BadEnumValues) {
  auto s = seq_lens_spec();
  s.index_type = static_cast<IndexType>(7);
  EXPECT_EQ(validate(s), "index_type (7) is neither int32 nor int64");
  s = seq_lens_spec();
  s.source = static_cast<PaddingSource>(9);
  EXPECT_EQ(validate(s), "source (9) is not a padding source");
}

TEST(ValidateWatch, Valid) {
  EXPECT_EQ(validate(watch()), "");
  auto w = watch();
  w.padding = PaddingSpec{};  // no padding information at all
  EXPECT_EQ(validate(w), "");
  w.row_stride = 257;  // stride == row_elements
  EXPECT_EQ(validate(w), "");
  w.row_stride = 1500;
  EXPECT_EQ(validate(w), "");
}

TEST(ValidateWatch, EveryCheckNamesItsField) {
  struct Case {
    std::function<void(WatchSpec&)> edit;
    const char* message;
  };
  const Case cases[] = {
      {[](WatchSpec& w) { w.rows = 0; }, "rows is 0"},
      {[](WatchSpec& w) { w.row_elements = 0; }, "row_elements is 0"},
      {[](WatchSpec& w) { w.dtype = DType::none; }, "dtype (none) is not a floating type"},
      {[](WatchSpec& w) { w.ptr = 0; }, "ptr is 0"},
      {[](WatchSpec& w) { w.row_stride = 100; },
       "row_stride (100) is smaller than row_elements (257)"},
      {[](WatchSpec& w) { w.action = static_cast<Action>(5); },
       "action (5) is not detect, fix, abort or zero_padding"},
      {[](WatchSpec& w) { w.padding.rows = 4; }, "padding.rows (4) differs from rows (8)"},
      {[](WatchSpec& w) { w.padding.device_ptr = 0; },
       "padding.device_ptr is 0 (source seq_lens reads device memory)"},
      {[](WatchSpec& w) {
         w.padding.source = PaddingSource::real_count_host;
         w.padding.host_count = 9;
       },
       "padding.host_count (9) is larger than rows (8)"},
  };
  for (const auto& c : cases) {
    auto w = watch();
    c.edit(w);
    EXPECT_EQ(validate(w), c.message);
  }
}

TEST(ValidateWatch, ExtentOverflow) {
  auto w = watch();
  w.padding = PaddingSpec{};
  w.rows = uint64_t{1} << 40;
  w.row_elements = uint64_t{1} << 30;  // 2^70 elements
  EXPECT_EQ(validate(w), "extent overflows 64 bits: rows (1099511627776) x row_stride "
                         "(1073741824) x 2 bytes");

  w.rows = uint64_t{1} << 31;
  w.row_elements = uint64_t{1} << 32;  // 2^63 elements fit, 2^64 bytes do not
  EXPECT_NE(validate(w).find("extent overflows 64 bits"), std::string::npos);

  w.rows = 1;
  w.row_elements = std::numeric_limits<uint64_t>::max();  // (0 * stride + max) fits, * 2 does not
  EXPECT_NE(validate(w).find("extent overflows 64 bits"), std::string::npos);

  w.rows = 2;
  w.row_elements = 4;
  w.ptr = std::numeric_limits<uint64_t>::max() - 8;  // 16 bytes past the address space
  EXPECT_EQ(validate(w), "ptr (0xfffffffffffffff7) + extent (16 bytes) overflows 64 bits");
}

TEST(ValidateWatch, ExtentBytesMatchesShape) {
  auto w = watch();
  w.row_stride = 1500;
  EXPECT_EQ(w.extent_bytes(), (7 * 1500 + 257) * 2u);
  w.row_stride = 0;
  EXPECT_EQ(w.extent_bytes(), 8 * 257 * 2u);
}

}  // namespace
}  // namespace nanscope

#include "padding.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace nanscope {

const char* padding_source_name(PaddingSource s) {
  switch (s) {
#define NANSCOPE_PADDING_NAME_(suffix, name, code) \
  case PaddingSource::name: return #name;
    NANSCOPE_PADDING_SOURCES(NANSCOPE_PADDING_NAME_)
#undef NANSCOPE_PADDING_NAME_
  }
  return "none";
}

bool padding_source_valid(uint32_t code) {
  switch (code) {
#define NANSCOPE_PADDING_CODE_(suffix, name, code) case NS_PAD_##suffix:
    NANSCOPE_PADDING_SOURCES(NANSCOPE_PADDING_CODE_)
#undef NANSCOPE_PADDING_CODE_
    return true;
    default: return false;
  }
}

const char* action_name(Action a) {
  switch (a) {
    case Action::detect: return "detect";
    case Action::fix: return "fix";
    case Action::abort: return "abort";
    case Action::zero_padding: return "zero_padding";
  }
  return "detect";
}

namespace {

bool reads_device(PaddingSource s) {
  return s == PaddingSource::seq_lens || s == PaddingSource::real_count_device ||
         s == PaddingSource::mask;
}

bool reads_index(PaddingSource s) {
  return s == PaddingSource::seq_lens || s == PaddingSource::real_count_device;
}

}  // namespace

std::string validate(const PaddingSpec& spec) {
  switch (spec.source) {
    case PaddingSource::none: return {};  // nothing is read: every field is ignored
    case PaddingSource::seq_lens:
    case PaddingSource::real_count_device:
    case PaddingSource::real_count_host:
    case PaddingSource::mask: break;
    default:
      return fmt::format("source ({}) is not a padding source", static_cast<int>(spec.source));
  }
  const char* src = padding_source_name(spec.source);
  if (spec.rows == 0) return fmt::format("rows is 0 (source {} needs the batch's row count)", src);
  if (reads_device(spec.source) && spec.device_ptr == 0)
    return fmt::format("device_ptr is 0 (source {} reads device memory)", src);
  if (reads_index(spec.source)) {
    if (spec.index_type != IndexType::i32 && spec.index_type != IndexType::i64)
      return fmt::format("index_type ({}) is neither int32 nor int64",
                         static_cast<int>(spec.index_type));
    if (spec.source == PaddingSource::seq_lens && spec.index_type == IndexType::i32 &&
        (spec.pad_value < std::numeric_limits<int32_t>::min() ||
         spec.pad_value > std::numeric_limits<int32_t>::max()))
      return fmt::format("pad_value ({}) does not fit index_type int32", spec.pad_value);
  }
  if (spec.source == PaddingSource::real_count_host && spec.host_count > spec.rows)
    return fmt::format("host_count ({}) is larger than rows ({})", spec.host_count, spec.rows);
  return {};
}

std::string validate(const WatchSpec& watch) {
  if (watch.rows == 0) return "rows is 0";
  if (watch.row_elements == 0) return "row_elements is 0";
  if (dtype_size(watch.dtype) == 0)
    return fmt::format("dtype ({}) is not a floating type", dtype_name(watch.dtype));
  if (watch.ptr == 0) return "ptr is 0";
  if (watch.row_stride != 0 && watch.row_stride < watch.row_elements)
    return fmt::format("row_stride ({}) is smaller than row_elements ({})", watch.row_stride,
                       watch.row_elements);
  if (watch.action != Action::detect && watch.action != Action::fix &&
      watch.action != Action::abort && watch.action != Action::zero_padding)
    return fmt::format("action ({}) is not detect, fix, abort or zero_padding", static_cast<int>(watch.action));
  // extent_bytes() = ((rows - 1) * stride + row_elements) * size, each step checked.
  uint64_t elems = 0, bytes = 0, end = 0;
  if (__builtin_mul_overflow(watch.rows - 1, watch.stride(), &elems) ||
      __builtin_add_overflow(elems, watch.row_elements, &elems) ||
      __builtin_mul_overflow(elems, static_cast<uint64_t>(dtype_size(watch.dtype)), &bytes))
    return fmt::format("extent overflows 64 bits: rows ({}) x row_stride ({}) x {} bytes",
                       watch.rows, watch.stride(), dtype_size(watch.dtype));
  if (__builtin_add_overflow(watch.ptr, bytes, &end))
    return fmt::format("ptr (0x{:x}) + extent ({} bytes) overflows 64 bits", watch.ptr, bytes);
  if (watch.padding.source != PaddingSource::none) {
    if (auto e = validate(watch.padding); !e.empty()) return "padding." + e;
    if (watch.padding.rows != watch.rows)
      return fmt::format("padding.rows ({}) differs from rows ({})", watch.padding.rows,
                         watch.rows);
  }
  return {};
}

const char* RowVerdict::region() const {
  if (counts_padding > 0 && counts_real > 0) return "mixed";
  if (counts_padding > 0) return "padding";
  if (counts_real > 0) return "real";
  return "unknown";
}

std::vector<RowRange> compact_rows(std::vector<std::pair<uint64_t, bool>> rows_with_status,
                                   std::size_t max_ranges, bool* truncated) {
  // Sorting by (row, status) and dropping exact duplicates keeps a row reported with both
  // statuses (a caller bug) visible as two one-row ranges instead of guessing.
  std::sort(rows_with_status.begin(), rows_with_status.end());
  rows_with_status.erase(std::unique(rows_with_status.begin(), rows_with_status.end()),
                         rows_with_status.end());
  std::vector<RowRange> out;
  bool cut = false;
  for (const auto& [row, padding] : rows_with_status) {
    if (!out.empty() && out.back().padding == padding && out.back().last + 1 == row) {
      out.back().last = row;
      continue;
    }
    if (out.size() == max_ranges) {
      cut = true;
      break;
    }
    out.push_back(RowRange{row, row, padding});
  }
  if (truncated) *truncated = cut;
  return out;
}

}  // namespace nanscope

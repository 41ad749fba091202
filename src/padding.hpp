// Padding specs and watches: the host-side model shared by the C API, the rules file and the
// engine. A spec says which rows of a padded batch are padding; it is evaluated on the device
// at scan time, so a graph replayed with new seq_lens gets a fresh verdict every replay.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scan_abi.h"
#include "signature.hpp"

namespace nanscope {

// From the one list in scan_abi.h (meanings there): a PaddingSource's value is its NS_PAD_*
// code, so the engine hands it to the device, and the channel reads it back, by a cast.
// seq_lens and real_count_device read a device int32/int64 array or scalar, mask a device byte
// array; real_count_host is a host value frozen at declaration.
#define NANSCOPE_PADDING_ENUMERATOR_(suffix, name, code) name = code,
enum class PaddingSource : uint8_t { NANSCOPE_PADDING_SOURCES(NANSCOPE_PADDING_ENUMERATOR_) };
#undef NANSCOPE_PADDING_ENUMERATOR_
#define NANSCOPE_PADDING_AGREE_(suffix, name, code) \
  static_assert(static_cast<int>(PaddingSource::name) == NS_PAD_##suffix, "PaddingSource is cast to NS_PAD_*");
NANSCOPE_PADDING_SOURCES(NANSCOPE_PADDING_AGREE_)
#undef NANSCOPE_PADDING_AGREE_
const char* padding_source_name(PaddingSource);  // the log's string; "none" for no source
bool padding_source_valid(uint32_t code);         // a NS_PAD_* code (a record from the device)

enum class IndexType : uint8_t { i32, i64 };

// zero_padding: zero the padding rows and read nothing (the seed's fix, cheapest; nothing is
// reported). fix: scan everything, report, then zero the padding rows.
enum class Action : uint8_t { detect, fix, abort, zero_padding };
const char* action_name(Action);

struct PaddingSpec {
  PaddingSource source = PaddingSource::none;
  uint64_t rows = 0;          // rows in the padded batch
  uint64_t device_ptr = 0;    // seq_lens / count / mask
  IndexType index_type = IndexType::i32;
  int64_t pad_value = 0;      // seq_lens value that marks padding
  uint64_t host_count = 0;    // real_count_host
};

struct WatchSpec {
  std::string name;
  uint64_t ptr = 0;           // device address of row 0, element 0
  DType dtype = DType::none;
  uint64_t rows = 0;
  uint64_t row_elements = 0;  // elements per row that belong to the tensor
  uint64_t row_stride = 0;    // elements from one row to the next (0: = row_elements)
  Action action = Action::detect;
  PaddingSpec padding;

  uint64_t stride() const { return row_stride ? row_stride : row_elements; }
  // Bytes from ptr to the end of the last row.
  uint64_t extent_bytes() const {
    return rows == 0 ? 0 : ((rows - 1) * stride() + row_elements) * dtype_size(dtype);
  }
};

// Empty when valid, else one message naming the offending field.
std::string validate(const PaddingSpec& spec);
std::string validate(const WatchSpec& watch);

// Row ranges that hold non-finite values, as the log reports them.
struct RowRange {
  uint64_t first = 0, last = 0;  // inclusive
  bool padding = false;
};
struct RowVerdict {
  std::vector<RowRange> ranges;  // sorted, compacted, at most `max_ranges`
  bool truncated = false;
  uint64_t counts_padding = 0, counts_real = 0;
  const char* region() const;  // "padding", "real", "mixed" or "unknown"
};

// Compacts rows (sorted or not, duplicates allowed) that hold non-finite values into ranges
// of consecutive rows with the same padding status.
std::vector<RowRange> compact_rows(std::vector<std::pair<uint64_t, bool>> rows_with_status,
                                   std::size_t max_ranges, bool* truncated);

}  // namespace nanscope

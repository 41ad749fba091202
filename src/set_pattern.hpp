// What a memset tells about the buffer it writes, without knowing the buffer's type: a
// cuMemsetD8/16/32 repeats one 1-, 2- or 4-byte pattern, so whether every floating type nanscope
// scans reads it as finite is known from the pattern alone. Zero always is; 0xFFFFFFFF (an int32
// -1, a u32 mask) is NaN as f32, and nothing says the buffer is f32. Pure; CPU-tested
// (tests/unit/test_set_pattern.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "signature.hpp"

namespace nanscope {

// True when every float type nanscope scans (f64, f32, f16, bf16, f8e4m3, f8e5m2), read at any
// byte offset into the repeated pattern, is finite: the set buffer is clean whatever its type.
// `element_bytes` is the memset's width (1, 2 or 4); any other width is false.
bool set_pattern_finite(uint32_t value, uint32_t element_bytes);

// The float type of the memset's width that a scan of the set bytes reads them as (f32, f16 or
// f8e4m3); meaningful only where set_pattern_finite holds (any type then reads them clean).
DType set_pattern_scan_dtype(uint32_t element_bytes);

// The scan that judges what a memset wrote: `elements` of `element_bytes` from `dst` (a graph
// memset node's width x height, contiguous only: `pitch` equal to the row's bytes, or one row),
// read as set_pattern_scan_dtype, at most `max_scan_bytes` (0: no cap). nullopt where the
// pattern is not finite in every type, the rows are not contiguous, or nothing is left to read.
struct SetScan {
  uint64_t ptr = 0;
  uint64_t elements = 0;  // of `dtype`
  DType dtype = DType::none;
  uint64_t bytes() const { return elements * dtype_size(dtype); }
};
std::optional<SetScan> set_scan(uint64_t dst, uint32_t value, uint32_t element_bytes, uint64_t width, uint64_t height,
                                uint64_t pitch, uint64_t max_scan_bytes);

// What a copy or memset into device memory does to the state nanscope keeps of it (no watch holds
// it; docs/origin.md):
//   rescan_typed: rescanned at the type and extent an earlier scan gave the buffer there;
//   rescan_as_source: a device copy out of a buffer a scan typed: the bytes copied, read at the
//                 source's type (they are the source's bytes, whatever the destination held);
//   scan_set:     a memset of a pattern finite in every type, scanned over what it set;
//   forget:       the buffer's state is forgotten and the copy noted as its last writer, so its
//                 next typed reader's initial scan judges it.
// `typed_buffer`: a scan typed a buffer holding the destination; `in_pool`: that buffer lies in
// an allocator pool whose frees nanscope does not see (its type may be a former buffer's);
// `in_library_call`: the set is a library's own (cuBLASLt's workspace), judged by the call's scan;
// `typed_source`: a device-to-device copy whose source lies in a buffer a scan typed.
enum class CopyJudgement : uint8_t { rescan_typed, rescan_as_source, scan_set, forget };
CopyJudgement judge_copy(bool is_set, uint32_t set_value, uint32_t set_width, bool typed_buffer, bool in_pool,
                         bool in_library_call, bool typed_source = false);

}  // namespace nanscope

// The contract between kernel-family decoders (ATen, Triton, ...) and the engine: what one
// launch writes, as exact byte ranges with their element type. Pure data; decoders are pure
// functions over the driver's parameter layout and the launch's parameter bytes, so a CPU test
// can reach every one of them with layouts from the torch wheel.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "signature.hpp"  // DType

namespace nanscope {
class TensorMapRegistry;
}

namespace nanscope::xla {
struct SourceLine;
}

namespace nanscope::decode {

// The driver's parameter layout of a kernel: (offset, size) of each parameter.
using Layout = std::vector<std::pair<uint32_t, uint32_t>>;

// One launch as a decoder sees it.
struct LaunchView {
  const char* const* params = nullptr;  // params[i]: the bytes of parameter i (layout[i].second long); may be null
  uint32_t count = 0;                   // number of parameters (== layout size)
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  // The TMA descriptors seen encoded: a 128-byte parameter's memory (decode_xla); null: none known.
  const TensorMapRegistry* tensor_maps = nullptr;
};

// Whether an address is inside memory the application allocated on the device (for decoders
// that must infer a closure's shape by checking that candidate pointers are live).
struct AddressQuery {
  bool (*is_live)(const void* ctx, uint64_t ptr) = nullptr;
  const void* ctx = nullptr;
  bool operator()(uint64_t ptr) const { return is_live && is_live(ctx, ptr); }
};

// One written buffer. `span_bytes` is the byte range [ptr, ptr + span_bytes) the kernel may
// write; for a dense output it equals elements * elem_size. A strided output with gaps has a
// larger span: the engine scans only dense spans and reports the rest as not inspected.
struct Write {
  uint64_t ptr = 0;
  uint64_t elements = 0;
  uint64_t span_bytes = 0;
  uint32_t elem_size = 0;     // 0: only span_bytes is known (gather); elements is then 0 too
  DType dtype = DType::none;  // none: only the element size is known (copies, cat, gather)
  uint32_t arg = 0;           // the parameter holding the pointer (for the record)
  uint64_t dtype_from = 0;    // element-size-only writes: an input whose dtype the output copies
  // The decoder knows the pointer and dtype but not the extent (Triton passes no tensor sizes):
  // elements and span_bytes are 0 and the engine takes the extent from the allocation block
  // that holds `ptr` (PyTorch's caching-allocator block map), never to the segment's end.
  bool extent_from_block = false;
  // An integer or bool output (arange's int64 positions): the range is exact, so the graph
  // planner takes it instead of "to the end of the allocation", but it holds no NaN: never
  // scanned, and not counted among the bytes decoded launches wrote (coverage's denominator).
  bool no_nan = false;
  // Infinities the launch writes here on purpose (kIntend* bits): a fill or masked_fill whose
  // value is +-inf, an attention kernel's logsumexp for rows that see no key. An infinity-only
  // finding they cover is intended, not a fault (docs/origin.md#nan-first-verdicts).
  uint8_t intended_inf = 0;
};
inline constexpr uint8_t kIntendNegInf = 1, kIntendPosInf = 2, kIntendBothInf = 3;

inline constexpr uint32_t kMaxWrites = 8;  // Inductor's fused kernels write up to ~8 outputs
inline constexpr uint32_t kMaxReads = 8;

enum class Status : uint8_t {
  decoded,          // `writes` is what the launch writes (maybe nothing: no floating output)
  layout_mismatch,  // the family claims the name but the layout or values do not fit: not inspected
};

struct Decoded {
  Status status = Status::decoded;
  std::string_view reason;  // static text, for not_inspected
  Write writes[kMaxWrites];
  uint32_t write_count = 0;
  uint64_t reads[kMaxReads] = {};  // input pointers, for the NaN origin and dtype_from
  // What the decoder knows of each read (parallel to `reads`): its element type (none when
  // unknown) and the elements the launch may read (0: unknown, the engine takes the extent from
  // the allocation block). The engine scans an input nobody judged yet before its first reader's
  // scan, so the reader's origin is decided from a known state.
  DType read_dtypes[kMaxReads] = {};  // set by add_read; entries past read_count mean nothing
  uint64_t read_elements[kMaxReads] = {};
  uint32_t read_count = 0;
  // Inputs that hold no NaN (integer or bool tensors): no origin inputs, but the graph planner
  // must know them as read, or it models their pointers as written to the end of the allocation.
  uint64_t no_nan_reads[kMaxReads] = {};
  uint32_t no_nan_read_count = 0;
  // The user's line this launch's XLA thunk names (decode_xla), when the thunks it fits agree;
  // else null. A kernel shared by several dump modules names no line of its own, a launch can.
  const xla::SourceLine* source = nullptr;
  bool source_op_agreed = false;  // its op holds for this launch (xla::LaunchWrites::source_op_agreed)
  void add_write(const Write& w) {
    if (write_count < kMaxWrites) writes[write_count++] = w;
  }
  void add_read(uint64_t p, DType dtype = DType::none, uint64_t elements = 0) {
    if (!p || read_count >= kMaxReads) return;
    read_dtypes[read_count] = dtype;
    read_elements[read_count] = elements;
    reads[read_count++] = p;
  }
  void add_no_nan_read(uint64_t p) {
    if (p && no_nan_read_count < kMaxReads) no_nan_reads[no_nan_read_count++] = p;
  }
  static Decoded mismatch(std::string_view why) {
    Decoded d;
    d.status = Status::layout_mismatch;
    d.reason = why;
    return d;
  }
};

}  // namespace nanscope::decode

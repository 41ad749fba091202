// Whether nanscope may scan a buffer whose extent it derived, or must say it did not look.
//
// A scan reads only what a kernel wrote: never a neighbour tensor, never a whole allocator
// pool. Where nanscope knows a write's own size (a decoder's exact write, a memset's byte
// count, a copy's size, a library call's output) or PyTorch's tensor block, the extent is
// exact. Where all it has is "from the pointer to the end of the driver allocation holding
// it", that allocation may be one tensor (cudaMalloc per buffer) or an allocator's whole pool
// (JAX/XLA preallocates 75% of the GPU as one allocation and carves every buffer out of it).
// A driver allocation larger than NANSCOPE_MAX_WHOLE_ALLOC_BYTES is taken for a pool: such an
// extent is not scanned, not even truncated (a truncated scan still reads neighbours), and the
// kernel's argument is reported `not_inspected` with kPoolExtentReason. Pure, CPU-tested.
#pragma once
#include <cstdint>
#include <string_view>

namespace nanscope {

// How the extent of a buffer to scan was derived.
enum class ExtentSource : uint8_t {
  exact,           // the write's own size: a decoder's exact write, a memset's or copy's bytes, a GEMM's D
  tensor_block,    // the PyTorch caching-allocator block holding the pointer (its requested size)
  allocation_end,  // nothing but "to the end of the driver allocation holding the pointer"
};

enum class ExtentVerdict : uint8_t {
  scan,  // the extent is the buffer's own, or a driver allocation small enough to be one buffer
  pool,  // only the end of an allocation larger than the bound: not_inspected, kPoolExtentReason
};

// 1 GiB: larger than the tensors programs usually cudaMalloc one by one (a whole-allocation
// extent is still scanned there), far smaller than the pools frameworks preallocate (tens of GiB).
inline constexpr uint64_t kDefaultMaxWholeAllocBytes = uint64_t{1} << 30;
inline constexpr std::string_view kPoolExtentReason = "extent unknown (allocator pool)";

// `allocation_bytes`: the whole driver allocation's size (not the bytes from the pointer to its
// end), read only for ExtentSource::allocation_end. An allocation of exactly the bound is scanned.
ExtentVerdict extent_policy(ExtentSource source, uint64_t allocation_bytes, uint64_t max_whole_alloc_bytes);

// The bytes a scan of `ptr` may read, from `ptr` on, when the extent found for it is `range_base`
// .. `range_base + range_bytes` (a tensor block or a whole driver allocation) derived as `source`:
// 0 when `ptr` lies outside it or extent_policy refuses it (`pool` then says so).
struct ScanBytes {
  uint64_t bytes = 0;
  bool pool = false;
};
ScanBytes scan_bytes_from(uint64_t ptr, uint64_t range_base, uint64_t range_bytes, ExtentSource source,
                          uint64_t max_whole_alloc_bytes);

}  // namespace nanscope

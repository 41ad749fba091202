#include "extent_policy.hpp"

namespace nanscope {

ExtentVerdict extent_policy(ExtentSource source, uint64_t allocation_bytes, uint64_t max_whole_alloc_bytes) {
  switch (source) {
    case ExtentSource::exact:
    case ExtentSource::tensor_block: return ExtentVerdict::scan;
    case ExtentSource::allocation_end: break;
  }
  // The allocation may be one buffer or a pool of many; only its size tells them apart.
  return allocation_bytes > max_whole_alloc_bytes ? ExtentVerdict::pool : ExtentVerdict::scan;
}

ScanBytes scan_bytes_from(uint64_t ptr, uint64_t range_base, uint64_t range_bytes, ExtentSource source,
                          uint64_t max_whole_alloc_bytes) {
  if (ptr < range_base || ptr - range_base >= range_bytes) return {};
  if (extent_policy(source, range_bytes, max_whole_alloc_bytes) == ExtentVerdict::pool) return {0, true};
  return {range_base + range_bytes - ptr, false};
}

}  // namespace nanscope

// Launch geometry of the scan kernel, shared by the engine and the benchmarks so both
// measure and run the same thing. Tuning values are data, not code.
#pragma once
#include <algorithm>
#include <cstdint>

namespace nanscope {

struct ScanPolicy {
  unsigned threads = 256;          // kThreads in kernels/scan.cu
  unsigned blocks_per_sm = 4;      // enough 16-byte loads in flight to saturate HBM
  uint64_t bytes_per_block_step = 256 * 4 * 16;  // threads x unroll x 16-byte loads
};

inline unsigned scan_grid(const ScanPolicy& p, uint64_t max_bytes, int sm_count) {
  const uint64_t needed = (max_bytes + p.bytes_per_block_step - 1) / p.bytes_per_block_step;
  return static_cast<unsigned>(
      std::clamp<uint64_t>(needed, 1, uint64_t{p.blocks_per_sm} * static_cast<unsigned>(sm_count)));
}

}  // namespace nanscope

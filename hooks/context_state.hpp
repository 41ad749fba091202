// Everything nanscope keeps per CUDA context: its loaded scan module, the device->host
// channel and the scan accumulators. Created on first use, destroyed at context teardown.
#pragma once
#include "lock_rank.hpp"
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "buffer_slots.hpp"
#include "channel.hpp"
#include "scan_abi.h"
#include "scan_launch.hpp"

namespace nanscope {

struct ContextLimits {
  uint32_t channel_records = 4096;
  uint32_t eager_accumulators = 4096;
  uint32_t max_captured_scans = 65536;
  bool origin = true;  // keep per-buffer non-finite state on the device (NaN origin)
};

class ContextState {
 public:
  // Loads the scan module and allocates the channel. On failure `error()` says why and the
  // state is unusable (the launch hook then skips this context).
  ContextState(CUcontext ctx, const ContextLimits& limits);
  ~ContextState();
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  CUcontext context() const { return ctx_; }
  int device() const { return device_; }

  // Fills the channel and accumulator pointers of `task` and launches the scan on `stream`.
  // `captured` selects a dedicated accumulator that lives as long as the context (its
  // address is frozen into the graph). Returns the driver's result.
  CUresult launch_scan(nanscope_scan_task& task, CUstream stream, bool captured, uint64_t max_bytes);
  // Launches the eager scans held in `g` (hooks/eager_batcher.cpp) on `stream`: one launch as the
  // plain scan it was, several as one merged scan with the grid of a scan in line.
  CUresult launch_group(nanscope_scan_group& g, CUstream stream);

  // For graph nodes: fills the task's channel pointers and accumulator (`accum` 0 takes a new
  // dedicated one). Returns false when the captured-scan pool is exhausted.
  bool prepare_task(nanscope_scan_task& task, bool captured, CUdeviceptr accum = 0);
  // Where a scan node's kernel parameter lives until the launch or node call that uses it.
  struct ScanArgs {
    void* slot[1] = {nullptr};
    nanscope_zero_task zero{};  // the zero-rows kernel's own, smaller parameter
  };
  // Kernel-node parameters running the scan of `task`; `task` and `args` must outlive their use.
  // `overlapped`: a node off the graph's critical path (fewer blocks, see overlap_policy()).
  CUDA_KERNEL_NODE_PARAMS node_params(nanscope_scan_task& task, ScanArgs& args, uint64_t max_bytes,
                                      bool overlapped = false) const;
  bool owns(CUfunction f) const {
    return f == scan_merged_fn_ || zero_rows(f) || std::find(std::begin(scan_fns_), std::end(scan_fns_), f) != std::end(scan_fns_);
  }
  // A read-only scan of one launch's typed outputs or watches (no rows, no fix): it may be merged.
  bool plain_scan(CUfunction f) const { return f && f == scan_fns_[static_cast<unsigned>(ScanEntry::plain)]; }
  bool merged_scan(CUfunction f) const { return f && f == scan_merged_fn_; }
  // Node parameters of a merged scan node (beside the app's kernels); `g` must outlive their use.
  CUDA_KERNEL_NODE_PARAMS merged_node_params(nanscope_scan_group& g, void** slot) const;
  // The task of one of our scan nodes, read back from its parameters (false if it has none). A
  // merged node reads back as one task holding every member's buffers.
  bool read_task(const CUDA_KERNEL_NODE_PARAMS& p, nanscope_scan_task& out) const;
  bool read_merged(const CUDA_KERNEL_NODE_PARAMS& p, nanscope_scan_group& out) const;

  // Copies device memory to the host through the private stream (never an app stream), from
  // any thread. Returns an empty string or the driver's error.
  std::string copy_to_host(uint64_t ptr, size_t bytes, void* out);

  // Device bitmap of `rows` bits for watch `key`, zeroed, reused across launches (the scan
  // that publishes it clears it). Grows by allocating a new one; old ones stay alive because
  // captured graphs may hold their address. Returns 0 when allocation fails.
  // The block starts with the watch's previous-scan state (kRowStateBytes), then the bitmap.
  CUdeviceptr row_bitmap(uint32_t key, uint64_t rows);
  static constexpr size_t kRowStateBytes = 64;

  ChannelReader& reader() { return *reader_; }
  // NaN origin: the device array of per-buffer state words (0 when origin tracking is off)
  // and which buffer owns which word.
  unsigned long long* buffer_states() const { return reinterpret_cast<unsigned long long*>(buffer_states_); }
  BufferSlots& slots() { return slots_; }

 private:
  CUdeviceptr next_captured_accumulator();

  CUcontext ctx_;
  ContextLimits limits_;
  std::string error_;
  int device_ = -1;
  int sm_count_ = 1;
  CUmodule module_ = nullptr;
  CUfunction scan_fns_[std::size(kScanEntryNames)] = {};  // by ScanEntry
  CUfunction scan_merged_fn_ = nullptr;  // read-only scans of several launches in one merged graph node
  CUfunction zero_rows_fns_[std::size(kZeroRowsEntries)] = {};  // zero_padding tasks: zero, read nothing
  bool zero_rows(CUfunction f) const {
    return f && std::find(std::begin(zero_rows_fns_), std::end(zero_rows_fns_), f) != std::end(zero_rows_fns_);
  }
  unsigned blocks_per_sm_[std::size(kScanEntryNames)] = {4, 4, 4, 4};  // by ScanEntry: ScanPolicy, capped by occupancy
  Ranked<std::mutex, LockLevel::part> bitmap_mu_{"ContextState::bitmap_mu_"};
  std::unordered_map<uint32_t, std::pair<CUdeviceptr, uint64_t>> bitmaps_;  // key -> (ptr, rows)
  std::vector<CUdeviceptr> retired_bitmaps_;
  CUstream private_stream_ = nullptr;
  void* host_channel_ = nullptr;
  CUdeviceptr host_channel_dev_ = 0;
  CUdeviceptr channel_dev_ = 0;
  CUdeviceptr eager_accums_ = 0;
  std::atomic<uint32_t> eager_next_{0};
  Ranked<std::mutex, LockLevel::part> captured_mu_{"ContextState::captured_mu_"};
  std::vector<CUdeviceptr> captured_chunks_;
  uint32_t captured_used_ = 0;  // in the last chunk
  uint32_t captured_total_ = 0;
  std::unique_ptr<ChannelReader> reader_;
  CUdeviceptr buffer_states_ = 0;
  BufferSlots slots_{NANSCOPE_ORIGIN_SLOTS};
};

// Swaps the calling thread's capture mode to relaxed for its lifetime, so the tool may
// allocate while the app captures a graph without invalidating that capture.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { cuThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { cuThreadExchangeStreamCaptureMode(&mode_); }

 private:
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace nanscope

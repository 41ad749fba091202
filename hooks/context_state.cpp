#include "context_state.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "scan_launch.hpp"

extern "C" {
extern const unsigned char nanscope_kernels_fatbin[];
extern const size_t nanscope_kernels_fatbin_size;
}

namespace nanscope {

namespace {
constexpr uint32_t kCapturedChunk = 1024;

#define NANSCOPE_TRY(call)                                                      \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      const char* s_ = nullptr;                                                 \
      cuGetErrorName(r_, &s_);                                                  \
      error_ = fmt::format("{} failed: {}", #call, s_ ? s_ : "unknown error"); \
      return;                                                                   \
    }                                                                           \
  } while (0)
}  // namespace

ContextState::ContextState(CUcontext ctx, const ContextLimits& limits) : ctx_(ctx), limits_(limits) {
  RelaxedCaptureMode relaxed;
  CUdevice dev = 0;
  NANSCOPE_TRY(cuCtxGetDevice(&dev));
  device_ = static_cast<int>(dev);
  NANSCOPE_TRY(cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  NANSCOPE_TRY(cuModuleLoadData(&module_, nanscope_kernels_fatbin));
  for (size_t i = 0; i < std::size(kScanEntryNames); ++i)
    NANSCOPE_TRY(cuModuleGetFunction(&scan_fns_[i], module_, kScanEntryNames[i]));
  NANSCOPE_TRY(cuModuleGetFunction(&scan_merged_fn_, module_, "nanscope_scan_grouped"));
  for (size_t i = 0; i < std::size(kZeroRowsEntries); ++i)
    NANSCOPE_TRY(cuModuleGetFunction(&zero_rows_fns_[i], module_, kZeroRowsEntries[i]));
  // No more blocks per SM than fit at once: a second partial wave costs a third of the time.
  const ScanPolicy policy;
  for (size_t i = 0; i < std::size(kScanEntryNames); ++i) {
    int fit = 0;
    if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, scan_fns_[i], static_cast<int>(policy.threads), 0) == CUDA_SUCCESS && fit > 0)
      blocks_per_sm_[i] = std::min<unsigned>(policy.blocks_per_sm, static_cast<unsigned>(fit));
  }

  const size_t channel_bytes =
      sizeof(nanscope_channel_host) + size_t{limits_.channel_records} * sizeof(nanscope_record);
  NANSCOPE_TRY(cuMemHostAlloc(&host_channel_, channel_bytes,
                              CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(host_channel_, 0, channel_bytes);
  auto* header = static_cast<nanscope_channel_host*>(host_channel_);
  header->capacity = limits_.channel_records;
  NANSCOPE_TRY(cuMemHostGetDevicePointer(&host_channel_dev_, host_channel_, 0));
  reader_ = std::make_unique<ChannelReader>(
      header, reinterpret_cast<nanscope_record*>(static_cast<char*>(host_channel_) +
                                                 sizeof(nanscope_channel_host)));

  // A private non-blocking stream: zeroing our own memory never orders against app work.
  NANSCOPE_TRY(cuStreamCreate(&private_stream_, CU_STREAM_NON_BLOCKING));
  NANSCOPE_TRY(cuMemAlloc(&channel_dev_, sizeof(nanscope_channel_dev)));
  NANSCOPE_TRY(cuMemsetD8Async(channel_dev_, 0, sizeof(nanscope_channel_dev), private_stream_));
  const size_t eager_bytes = size_t{limits_.eager_accumulators} * sizeof(nanscope_scan_accum);
  NANSCOPE_TRY(cuMemAlloc(&eager_accums_, eager_bytes));
  NANSCOPE_TRY(cuMemsetD8Async(eager_accums_, 0, eager_bytes, private_stream_));
  if (limits_.origin) {  // all-zero words: every buffer's state unknown
    const size_t state_bytes = size_t{NANSCOPE_ORIGIN_SLOTS} * sizeof(unsigned long long);
    NANSCOPE_TRY(cuMemAlloc(&buffer_states_, state_bytes));
    NANSCOPE_TRY(cuMemsetD8Async(buffer_states_, 0, state_bytes, private_stream_));
  }
  NANSCOPE_TRY(cuStreamSynchronize(private_stream_));
}

ContextState::~ContextState() {
  // The context may already be going away; failures here are ignored on purpose.
  for (CUdeviceptr p : captured_chunks_) cuMemFree(p);
  for (auto& [key, b] : bitmaps_) cuMemFree(b.first);
  for (CUdeviceptr p : retired_bitmaps_) cuMemFree(p);
  if (eager_accums_) cuMemFree(eager_accums_);
  if (buffer_states_) cuMemFree(buffer_states_);
  if (channel_dev_) cuMemFree(channel_dev_);
  if (private_stream_) cuStreamDestroy(private_stream_);
  if (host_channel_) cuMemFreeHost(host_channel_);
  if (module_) cuModuleUnload(module_);
}

CUdeviceptr ContextState::next_captured_accumulator() {
  std::lock_guard lock(captured_mu_);
  if (captured_total_ >= limits_.max_captured_scans) return 0;
  if (captured_chunks_.empty() || captured_used_ == kCapturedChunk) {
    RelaxedCaptureMode relaxed;
    CUdeviceptr chunk = 0;
    const size_t bytes = size_t{kCapturedChunk} * sizeof(nanscope_scan_accum);
    if (cuMemAlloc(&chunk, bytes) != CUDA_SUCCESS) return 0;
    if (cuMemsetD8Async(chunk, 0, bytes, private_stream_) != CUDA_SUCCESS ||
        cuStreamSynchronize(private_stream_) != CUDA_SUCCESS) {
      cuMemFree(chunk);
      return 0;
    }
    captured_chunks_.push_back(chunk);
    captured_used_ = 0;
  }
  ++captured_total_;
  return captured_chunks_.back() + size_t{captured_used_++} * sizeof(nanscope_scan_accum);
}

CUdeviceptr ContextState::row_bitmap(uint32_t key, uint64_t rows) {
  std::lock_guard lock(bitmap_mu_);
  auto& slot = bitmaps_[key];
  if (slot.first && slot.second >= rows) return slot.first;
  RelaxedCaptureMode relaxed;
  const uint64_t capacity = std::max<uint64_t>(rows, slot.second * 2);
  // [previous-scan state, NANSCOPE_STATE_WORDS words, padded to 64 bytes][row bitmap]
  const size_t bytes = kRowStateBytes + ((capacity + 31) / 32) * sizeof(uint32_t);
  CUdeviceptr p = 0;
  if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return 0;
  if (cuMemsetD8Async(p, 0, bytes, private_stream_) != CUDA_SUCCESS ||
      cuStreamSynchronize(private_stream_) != CUDA_SUCCESS) {
    cuMemFree(p);
    return 0;
  }
  if (slot.first) retired_bitmaps_.push_back(slot.first);
  slot = {p, capacity};
  return p;
}

std::string ContextState::copy_to_host(uint64_t ptr, size_t bytes, void* out) {
  if (cuCtxPushCurrent(ctx_) != CUDA_SUCCESS) return "cuCtxPushCurrent failed";
  std::string err;
  {
    RelaxedCaptureMode relaxed;  // allowed even while the app captures in global mode
    CUresult r = cuMemcpyDtoHAsync(out, static_cast<CUdeviceptr>(ptr), bytes, private_stream_);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(private_stream_);
    if (r != CUDA_SUCCESS) {
      const char* s = nullptr;
      cuGetErrorName(r, &s);
      err = s ? s : "copy failed";
    }
  }
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
  return err;
}

bool ContextState::prepare_task(nanscope_scan_task& task, bool captured, CUdeviceptr accum) {
  if (!accum) {
    if (captured) {
      accum = next_captured_accumulator();
      if (!accum) return false;
    } else {
      // Scans on one stream run in order, and thousands of scans would have to be in flight at
      // once for two to share a ring slot.
      const uint32_t slot = eager_next_.fetch_add(1, std::memory_order_relaxed) % limits_.eager_accumulators;
      accum = eager_accums_ + size_t{slot} * sizeof(nanscope_scan_accum);
    }
  }
  task.accum = reinterpret_cast<nanscope_scan_accum*>(accum);
  task.channel_dev = reinterpret_cast<nanscope_channel_dev*>(channel_dev_);
  task.channel_host = reinterpret_cast<nanscope_channel_host*>(host_channel_dev_);
  task.records = reinterpret_cast<nanscope_record*>(host_channel_dev_ + sizeof(nanscope_channel_host));
  task.channel_capacity = limits_.channel_records;
  return true;
}

CUDA_KERNEL_NODE_PARAMS ContextState::node_params(nanscope_scan_task& task, ScanArgs& args, uint64_t max_bytes,
                                                  bool overlapped) const {
  void** slot = args.slot;
  if (zero_rows_task(task)) {
    args.zero = zero_task_of(task);
    slot[0] = &args.zero;
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = zero_rows_fns_[zero_rows_entry(task)];
    p.gridDimX = zero_rows_grid(ScanPolicy{}, task, sm_count_);
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = kZeroRowsThreads;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = slot;
    return p;
  }
  ScanPolicy policy = overlapped ? overlap_policy() : ScanPolicy{};
  const auto entry = static_cast<unsigned>(scan_entry(task));
  policy.blocks_per_sm = blocks_per_sm_[entry];
  slot[0] = &task;
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = scan_fns_[entry];
  p.gridDimX = scan_grid_for_task(policy, task, max_bytes, sm_count_);
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = policy.threads;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = slot;
  return p;
}

bool ContextState::read_task(const CUDA_KERNEL_NODE_PARAMS& p, nanscope_scan_task& out) const {
  if (!p.kernelParams || !p.kernelParams[0]) return false;
  out = nanscope_scan_task{};
  if (zero_rows(p.func)) {
    nanscope_zero_task z;
    std::memcpy(&z, p.kernelParams[0], sizeof z);
    out = scan_task_of(z);
  } else {  // the plain scan takes only the head, and a merged scan starts with one
    const bool head = plain_scan(p.func) || p.func == scan_merged_fn_;
    std::memcpy(&out, p.kernelParams[0], head ? sizeof(nanscope_scan_task_head) : sizeof(nanscope_scan_task));
  }
  return true;
}

bool ContextState::read_merged(const CUDA_KERNEL_NODE_PARAMS& p, nanscope_scan_group& out) const {
  if (p.func != scan_merged_fn_ || !p.kernelParams || !p.kernelParams[0]) return false;
  std::memcpy(&out, p.kernelParams[0], sizeof out);
  return true;
}

CUDA_KERNEL_NODE_PARAMS ContextState::merged_node_params(nanscope_scan_group& g, void** slot) const {
  ScanPolicy policy = overlap_policy();
  policy.blocks_per_sm = blocks_per_sm_[static_cast<unsigned>(ScanEntry::plain)];
  slot[0] = &g;
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = scan_merged_fn_;
  p.gridDimX = group_grid(policy, g, sm_count_);
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = policy.threads;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = slot;
  return p;
}

CUresult ContextState::launch_scan(nanscope_scan_task& task, CUstream stream, bool captured, uint64_t max_bytes) {
  if (!prepare_task(task, captured)) return CUDA_ERROR_OUT_OF_MEMORY;
  ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS p = node_params(task, args, max_bytes);
  return cuLaunchKernel(p.func, p.gridDimX, 1, 1, p.blockDimX, 1, 1, 0, stream, p.kernelParams, nullptr);
}

CUresult ContextState::launch_group(nanscope_scan_group& g, CUstream stream) {
  if (g.launch_count == 1) {
    nanscope_scan_task task = launch_task(g, 0);
    return launch_scan(task, stream, false, group_max_bytes(g));
  }
  nanscope_scan_task head{};  // the group's accumulator and channel, as a plain task gets them
  std::memcpy(static_cast<void*>(&head), &g, sizeof(nanscope_scan_task_head));
  prepare_task(head, false);
  std::memcpy(static_cast<void*>(&g), &head, sizeof(nanscope_scan_task_head));
  ScanPolicy policy;
  policy.blocks_per_sm = blocks_per_sm_[static_cast<unsigned>(ScanEntry::plain)];
  void* slot[1] = {&g};
  return cuLaunchKernel(scan_merged_fn_, group_grid(policy, g, sm_count_), 1, 1, policy.threads, 1, 1,
                        0, stream, slot, nullptr);
}

}  // namespace nanscope

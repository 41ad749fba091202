// Exact tensor extents under PyTorch's caching allocator: finds torch in the process, loads the
// libnanscope_torch_shim.so built for that very torch version, and keeps a TensorBlockMap
// current from c10's allocator trace events. Without it (no torch, no shim, another version,
// another allocator backend) the engine falls back to driver allocations; see
// docs/torch-extents.md for what it then must not scan.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "alloc_map.hpp"
#include "tensor_blocks.hpp"

namespace nanscope {

// Versions are PEP 440 strings from torch/version.py ("2.11.0+cu130"). The public part
// (before '+') must be equal: it names the source, and nightlies differ only after the patch
// number ("2.11.0.dev20260101"). The local part may differ only between CUDA builds ("cu128"
// vs "cu130"): the allocator's headers have no CUDA_VERSION conditionals, so the classes the
// shim calls through are laid out alike; ROCm/CPU/XPU local parts must match exactly.
bool torch_versions_compatible(const std::string& shim, const std::string& running);
// `__version__ = '...'` from the text of a version.py; nullopt when absent.
std::optional<std::string> parse_torch_version(const std::string& version_py);

class TorchBlockTracker {
 public:
  enum class State {
    kNotTried,   // no launch yet
    kAttaching,  // one thread is attaching; the others carry on without blocks
    kWaiting,    // torch not loaded, or its allocator not initialised: re-probed now and then
    kAttached,   // blocks are tracked
    kFailed,     // for the rest of the process: reason() says why
  };
  struct Options {
    std::string c10_cuda = "libc10_cuda.so";  // the soname probed with RTLD_NOLOAD
    std::string shim_path;  // empty: $NANSCOPE_TORCH_SHIM, else the shim beside libnanscope.so
    uint32_t reprobe_every = 1024;  // calls between probes while waiting
    std::size_t cap = TensorBlockMap::kDefaultCap;
  };

  TorchBlockTracker();
  explicit TorchBlockTracker(Options opts);
  // Torch keeps the tracker for the rest of the process: the events' target is left allocated
  // (and stops recording) rather than freed under a callback still running on another thread.
  ~TorchBlockTracker();
  TorchBlockTracker(const TorchBlockTracker&) = delete;
  TorchBlockTracker& operator=(const TorchBlockTracker&) = delete;

  // Call at each launch, holding no nanscope lock (attaching takes torch's allocator locks,
  // whose holders may be waiting in nanscope's driver callbacks). One atomic load once
  // decided; true when attached. Never blocks on another thread's attempt.
  bool try_attach();
  // The live tensor block holding ptr: [base, base + requested bytes). nullopt when not
  // attached or ptr is in no live block.
  std::optional<AddressRange> block_of(uint64_t ptr) const;
  std::optional<TensorBlock> find(uint64_t ptr) const;
  // The caching-allocator segment holding ptr (a pointer in one but in no block has an
  // unknown extent: the engine must not scan it to the segment's end).
  std::optional<AddressRange> segment_of(uint64_t ptr) const;

  State state() const { return state_.load(std::memory_order_acquire); }
  static const char* state_name(State s);
  std::string reason() const;         // one line for the one-time warning and the summary
  std::string torch_version() const;  // the running torch's, once found
  TensorBlockStats stats() const;
  // The last block's serial (TensorBlock::serial; 0 when not attached): what a scan that types a
  // buffer records, so a tensor allocated later at its address is not read at its type.
  uint64_t last_serial() const;

  struct Sink;  // what torch's callbacks write into (torch_blocks.cpp)

 private:
  State attempt();
  State load_shim(std::string& why);
  State attach(std::string& why);
  bool reprobe_due() const;

  const Options opts_;
  Sink* const sink_;  // never freed: see the destructor
  std::atomic<State> state_{State::kNotTried};
  void* attach_fn_ = nullptr;  // nanscope_torch_shim_attach, once the shim is loaded
  mutable Ranked<std::mutex, LockLevel::part> info_mu_{"TorchBlockTracker::info_mu_"};
  std::string reason_ = "not tried";
  std::string torch_version_;
};

}  // namespace nanscope

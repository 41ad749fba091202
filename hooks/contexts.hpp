// The per-context states (module, channel, accumulators, origin slots) and the driver
// allocations nanscope knows of. Each keeps its own lock; other parts ask, never hold.
#pragma once
#include "tensor_maps.hpp"
#include "lock_rank.hpp"
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "alloc_map.hpp"
#include "launch_facts.hpp"
#include "extent_policy.hpp"
#include "opaque_writers.hpp"
#include "torch_blocks.hpp"
#include "context_state.hpp"
#include "event_log.hpp"

namespace nanscope {

// Context cache: a ContextState per CUDA context, built on first use, dropped at teardown.
class Contexts {
 public:
  Contexts(const ContextLimits& limits, EventLog& log) : limits_(limits), log_(log) {}

  // The state of `ctx`, set up on first use; null when scanning cannot be set up in it.
  ContextState* get(CUcontext ctx);
  ContextState* current();  // of the calling thread; null if none or unusable

  using SharedLock = std::shared_lock<Ranked<std::shared_mutex, LockLevel::contexts>>;
  SharedLock try_lock_shared() const { return SharedLock(mu_, std::try_to_lock); }
  // Calls `fn` for every live state under the shared lock.
  void for_each(const std::function<void(ContextState&)>& fn);
  // The same for a caller that already holds the lock (shared or exclusive).
  void for_each_held(const std::function<void(ContextState&)>& fn);
  // Removes the state of `ctx` under the exclusive lock, after `last` ran on it; the caller
  // destroys what it gets (null when `ctx` had none).
  std::unique_ptr<ContextState> remove(CUcontext ctx, const std::function<void(ContextState&)>& last);

  // What the channels counted, over every live context.
  struct ChannelTotals {
    uint64_t overflow = 0, corrupt = 0, unchanged = 0;
  };
  ChannelTotals channel_totals() const;
  ChannelTotals channel_totals_held() const;  // the caller holds the lock

 private:
  const ContextLimits limits_;
  EventLog& log_;
  mutable Ranked<std::shared_mutex, LockLevel::contexts> mu_{"Contexts::mu_"};
  std::unordered_map<CUcontext, std::unique_ptr<ContextState>> states_;
  std::unordered_map<CUcontext, std::string> failed_;
};

// Driver allocations, from the allocation callbacks (or cuMemGetAddressRange for older ones).
class Allocations {
 public:
  // `max_whole_alloc_bytes`: NANSCOPE_MAX_WHOLE_ALLOC_BYTES, the largest driver allocation whose
  // end may bound a scan (extent_policy.hpp).
  Allocations(Contexts& contexts, uint64_t max_whole_alloc_bytes)
      : contexts_(contexts), max_whole_alloc_bytes_(max_whole_alloc_bytes) {}
  // The buffer holding a pointer whose kernel does not say how much it writes: the PyTorch
  // tensor block holding it when the caching allocator's blocks are tracked, else the driver
  // allocation; nullopt when unknown (not device memory we can scan, inside a torch segment but
  // in no live block, or torch present without its block map: a scan to the segment's end would
  // read neighbour tensors). For bookkeeping and write models; a scan asks scan_extent.
  std::optional<AddressRange> extent(uint64_t ptr) {
    const auto found = locate(ptr);
    return found ? std::optional<AddressRange>(found->range) : std::nullopt;
  }
  // The bytes a scan of ptr may read from ptr on, when nothing but extent() bounds it: 0 when
  // unknown, or when only the end of an allocation larger than NANSCOPE_MAX_WHOLE_ALLOC_BYTES
  // bounds it (`pool` then says so: the caller reports it not_inspected, kPoolExtentReason).
  ScanBytes scan_extent(uint64_t ptr);
  // Whether [ptr, ptr + bytes) lies inside the torch tensor block holding ptr (when blocks are
  // tracked) or one live driver allocation: the last guard before a scan of an extent a decoder
  // computed, so a wrong extent is refused, never read out of bounds or into a neighbour.
  bool holds(uint64_t ptr, uint64_t bytes);
  // Inside a live driver allocation (decoders that check candidate pointers).
  bool is_device(uint64_t ptr) const { return map_.find(ptr).has_value(); }
  // The live driver allocation holding ptr (a free's whole range: held eager scans inside it go first).
  std::optional<AddressRange> allocation(uint64_t ptr) const { return map_.find(ptr); }
  // [lowest, highest) address of every live driver allocation: the first filter for words of
  // opaque kernels' parameters.
  AddressRange span() const { return map_.span(); }
  void on_alloc(CUpti_CallbackId cbid, const void* params);
  void on_free(CUpti_CallbackId cbid, const void* params);

  TorchBlockTracker& torch() { return torch_; }
  // Whether a tracked buffer's type still speaks for its memory: no torch block was allocated at
  // its address since a scan typed it (TrackedBuffer::typed_at, type_outlives_block).
  bool type_holds(const TrackedBuffer& b) const { return type_outlives_block(b.typed_at, torch_.find(b.ptr)); }
  // What a scan typing a buffer records as TrackedBuffer::typed_at.
  uint64_t type_epoch() const { return torch_.last_serial(); }
  // Whether extents come from driver allocations alone although torch's caching allocator
  // carves them up (the shim could not attach): typed extents are then unknown.
  bool torch_blind() const;
  OpaqueWriters& opaque() { return opaque_; }
  // The TMA descriptors seen encoded (cuTensorMapEncodeTiled): which memory a 128-byte kernel
  // parameter describes (decode/xla.cpp; tensor_maps.hpp).
  TensorMapRegistry& tensor_maps() { return tensor_maps_; }
  const TensorMapRegistry& tensor_maps() const { return tensor_maps_; }
  // Each scan's launch facts (Python line, candidates, collective), for its findings.
  LaunchFactsStore& launch_facts() { return launch_facts_; }
  // `w` may have written the buffer holding ptr: noted for its block (or allocation) and, for
  // a view inside it, for ptr too. False when ptr is in no memory nanscope can scan.
  bool note_writer(uint64_t ptr, const OpaqueWrite& w);
  // A decoded launch wrote intended infinities (NS_INTENT_* bits) at `ptr`: noted for the buffer
  // that holds it, so an initial scan of the whole buffer knows them (OpaqueWriters::note_intended).
  void note_intended(uint64_t ptr, uint8_t bits);

 private:
  struct Located {
    AddressRange range;  // the tensor block, or the whole driver allocation
    ExtentSource source;
  };
  std::optional<Located> locate(uint64_t ptr);

  Contexts& contexts_;  // freed buffers give their origin slots back
  const uint64_t max_whole_alloc_bytes_;
  AllocationMap map_;
  TorchBlockTracker torch_;
  OpaqueWriters opaque_;
  LaunchFactsStore launch_facts_;
  TensorMapRegistry tensor_maps_;
};

}  // namespace nanscope

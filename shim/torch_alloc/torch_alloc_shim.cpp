// The torch side of nanscope's tensor extents: attaches a trace tracker to c10's CUDA caching
// allocator and forwards each block event through the C ABI of src/torch_shim_abi.h. Built
// against the running torch's own headers (shim/torch_alloc/CMakeLists.txt); everything here
// runs inside c10's lifetime rules, so nothing may throw out of it.
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/api/include/torch/version.h>

#include <cstdint>
#include <string>
#include <utility>

#include "torch_shim_abi.h"

namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;
using TraceEntry = c10::CachingDeviceAllocator::TraceEntry;

// By name, not by value: a torch that renumbers or extends TraceEntry::Action maps unknown
// actions to OTHER, which nanscope ignores.
constexpr std::pair<TraceEntry::Action, int> kActions[] = {
    {TraceEntry::ALLOC, NANSCOPE_TORCH_ALLOC},
    {TraceEntry::FREE_REQUESTED, NANSCOPE_TORCH_FREE_REQUESTED},
    {TraceEntry::FREE_COMPLETED, NANSCOPE_TORCH_FREE_COMPLETED},
    {TraceEntry::SEGMENT_ALLOC, NANSCOPE_TORCH_SEGMENT_ALLOC},
    {TraceEntry::SEGMENT_FREE, NANSCOPE_TORCH_SEGMENT_FREE},
    {TraceEntry::SEGMENT_MAP, NANSCOPE_TORCH_SEGMENT_MAP},
    {TraceEntry::SEGMENT_UNMAP, NANSCOPE_TORCH_SEGMENT_UNMAP},
};

int our_action(TraceEntry::Action a) {
  for (const auto& [theirs, ours] : kActions)
    if (theirs == a) return ours;
  return NANSCOPE_TORCH_OTHER;
}

template <typename P>
uint64_t as_u64(P p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

// Runs under the per-device allocator lock for every event, history on or off: only copies
// integers out and calls nanscope, which takes one short lock of its own.
alloc::AllocatorTraceTracker make_tracker(nanscope_torch_shim_callbacks cb) {
  return [cb](const TraceEntry& te) {
    const int action = our_action(te.action_);
    if (action == NANSCOPE_TORCH_OTHER) return;
    cb.on_block(cb.ctx, action, static_cast<int>(te.device_), static_cast<uint64_t>(te.addr_),
                static_cast<uint64_t>(te.size_), as_u64(te.stream_), static_cast<uint64_t>(te.mempool_.first),
                static_cast<uint64_t>(te.mempool_.second));
  };
}

// Blocks allocated before the tracker attached: the snapshot lists every segment (each mapped
// range of an expandable one) with its blocks in address order, so a block's address is the
// segment's plus the sizes (rounded) of the blocks before it. Called after attaching, outside
// the allocator lock (snapshot takes and drops it), so nanscope's seeding can race only with
// live events, which it resolves (TensorBlockMap::seed).
int seed_existing(const nanscope_torch_shim_callbacks& cb, alloc::CUDAAllocator* a) {
  try {
    const alloc::SnapshotInfo snap = a->snapshot({0, 0}, /*include_traces=*/false);
    for (const auto& seg : snap.segments) {
      const uint64_t stream = as_u64(seg.stream);
      const uint64_t pa = seg.owner_private_pool_id.first, pb = seg.owner_private_pool_id.second;
      cb.on_block(cb.ctx, NANSCOPE_TORCH_SEED_SEGMENT, seg.device, seg.address, seg.total_size, stream, pa, pb);
      uint64_t addr = seg.address;
      for (const auto& b : seg.blocks) {
        // `active` but not `allocated`: freed, waiting on stream events; no tensor owns it.
        if (b.allocated)
          cb.on_block(cb.ctx, NANSCOPE_TORCH_SEED_BLOCK, seg.device, addr, b.requested_size, stream, pa, pb);
        addr += b.size;
      }
    }
  } catch (...) {
    return NANSCOPE_TORCH_SNAPSHOT_THREW;
  }
  return NANSCOPE_TORCH_ATTACHED;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int nanscope_torch_shim_attach(
    const nanscope_torch_shim_callbacks* cb) {
  if (!cb || cb->struct_size < sizeof(nanscope_torch_shim_callbacks) ||
      cb->abi_version != NANSCOPE_TORCH_SHIM_ABI_VERSION || !cb->on_block)
    return NANSCOPE_TORCH_BAD_CALLBACKS;
  alloc::CUDAAllocator* a = nullptr;
  try {
    a = alloc::allocator.load();
    if (!a) return NANSCOPE_TORCH_NO_ALLOCATOR;
    // cudaMallocAsync and pluggable allocators have no tracker (they throw or ignore it);
    // with cudaMallocAsync every tensor is its own driver allocation anyway.
    if (a->name() != "native") return NANSCOPE_TORCH_OTHER_BACKEND;
    // The native allocator creates its per-device allocators at init: a tracker attached
    // before then would reach no device.
    if (!a->initialized()) return NANSCOPE_TORCH_NOT_INITIALIZED;
    a->attachAllocatorTraceTracker(make_tracker(*cb));
  } catch (...) {
    return NANSCOPE_TORCH_ATTACH_THREW;
  }
  return seed_existing(*cb, a);
}

extern "C" __attribute__((visibility("default"))) const char* nanscope_torch_shim_version(void) {
#ifdef NANSCOPE_TORCH_BUILD_VERSION
  return NANSCOPE_TORCH_BUILD_VERSION;  // the wheel's __version__, local part included
#else
  return TORCH_VERSION;  // major.minor.patch from torch/version.h
#endif
}

#include "contexts.hpp"

#include "counters.hpp"

namespace nanscope {

ContextState* Contexts::get(CUcontext ctx) {
  {
    std::shared_lock lock(mu_);
    auto it = states_.find(ctx);
    if (it != states_.end()) return it->second.get();
    if (failed_.count(ctx)) return nullptr;
  }
  // First launch in this context: load our module and channel. Done outside the shared lock;
  // a second thread racing here builds a spare that is dropped.
  auto state = std::make_unique<ContextState>(ctx, limits_);
  std::unique_lock lock(mu_);
  if (auto it = states_.find(ctx); it != states_.end()) return it->second.get();
  if (!state->ok()) {
    failed_[ctx] = state->error();
    lock.unlock();
    warn_once(log_, schema::Once::context_setup,
              "cannot set up scanning in a CUDA context (" + state->error() + "); kernels in it are not scanned");
    return nullptr;
  }
  return (states_[ctx] = std::move(state)).get();
}

ContextState* Contexts::current() {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return nullptr;
  return get(ctx);
}

void Contexts::for_each(const std::function<void(ContextState&)>& fn) {
  std::shared_lock lock(mu_);
  for_each_held(fn);
}

void Contexts::for_each_held(const std::function<void(ContextState&)>& fn) {
  for (auto& [ctx, state] : states_) fn(*state);
}

std::unique_ptr<ContextState> Contexts::remove(CUcontext ctx, const std::function<void(ContextState&)>& last) {
  std::unique_lock lock(mu_);
  failed_.erase(ctx);
  auto it = states_.find(ctx);
  if (it == states_.end()) return nullptr;
  last(*it->second);
  std::unique_ptr<ContextState> dying = std::move(it->second);
  states_.erase(it);
  return dying;
}

Contexts::ChannelTotals Contexts::channel_totals() const {
  std::shared_lock lock(mu_);
  return channel_totals_held();
}

Contexts::ChannelTotals Contexts::channel_totals_held() const {
  ChannelTotals t;
  for (auto& [ctx, state] : states_) {
    t.overflow += state->reader().overflow();
    t.corrupt += state->reader().corrupt();
    t.unchanged += state->reader().unchanged();  // counted on the device (quiet rescans)
  }
  return t;
}

std::optional<Allocations::Located> Allocations::locate(uint64_t ptr) {
  if (torch_.state() == TorchBlockTracker::State::kAttached) {
    if (auto block = torch_.block_of(ptr)) return Located{*block, ExtentSource::tensor_block};
    if (torch_.segment_of(ptr)) return std::nullopt;  // a torch segment, but in no live block
  } else if (torch_blind()) {
    return std::nullopt;
  }
  if (auto r = map_.find(ptr)) return Located{*r, ExtentSource::allocation_end};
  // Allocated before we attached, or through a path we do not hook.
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cuMemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return std::nullopt;
  map_.insert(base, size);
  return Located{AddressRange{base, size}, ExtentSource::allocation_end};
}

ScanBytes Allocations::scan_extent(uint64_t ptr) {
  const auto found = locate(ptr);
  if (!found) return {};
  return scan_bytes_from(ptr, found->range.base, found->range.size, found->source, max_whole_alloc_bytes_);
}

bool Allocations::holds(uint64_t ptr, uint64_t bytes) {
  if (torch_.state() == TorchBlockTracker::State::kAttached)
    if (const auto block = torch_.block_of(ptr)) return bytes <= block->base + block->size - ptr;
  auto range = map_.find(ptr);
  if (!range) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cuMemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return false;
    map_.insert(base, size);
    range = AddressRange{base, size};
  }
  return bytes <= range->base + range->size - ptr;
}

bool Allocations::note_writer(uint64_t ptr, const OpaqueWrite& w) {
  const auto buffer = extent(ptr);
  if (!buffer) return false;
  opaque_.note(buffer->base, w);
  if (ptr != buffer->base) opaque_.note(ptr, w);
  return true;
}

void Allocations::note_intended(uint64_t ptr, uint8_t bits) {
  const auto buffer = extent(ptr);
  if (!buffer || !bits) return;
  opaque_.note_intended(buffer->base, bits);
  if (ptr != buffer->base) opaque_.note_intended(ptr, bits);
}

bool Allocations::torch_blind() const {
  if (torch_.state() != TorchBlockTracker::State::kFailed) return false;
  // Under the cudaMallocAsync backend every tensor is its own driver allocation: exact already.
  return torch_.reason().find("backend") == std::string::npos;
}

void Allocations::on_alloc(CUpti_CallbackId cbid, const void* params) {
  CUdeviceptr* dptr = nullptr;
  uint64_t size = 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      auto* p = static_cast<const cuMemAlloc_v2_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* p = static_cast<const cuMemAllocPitch_v2_params*>(params);
      dptr = p->dptr, size = p->pPitch ? *p->pPitch * p->Height : 0;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* p = static_cast<const cuMemAllocManaged_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      auto* p = static_cast<const cuMemAllocAsync_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto* p = static_cast<const cuMemMap_params*>(params);
      map_.insert(p->ptr, p->size);
      return;
    }
    default: return;
  }
  if (dptr && *dptr) map_.insert(*dptr, size);
}

void Allocations::on_free(CUpti_CallbackId cbid, const void* params) {
  // Buffers inside the freed allocation give their origin slots back (a new allocation at the
  // same address starts unknown, not with the old buffer's state).
  auto forget = [&](uint64_t ptr) {
    if (const auto range = map_.find(ptr))
      contexts_.for_each([&](ContextState& state) { state.slots().forget_range(range->base, range->size); });
    map_.erase(ptr);
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: forget(static_cast<const cuMemFree_v2_params*>(params)->dptr); break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      forget(static_cast<const cuMemFreeAsync_params*>(params)->dptr);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto* p = static_cast<const cuMemUnmap_params*>(params);
      map_.erase_range(p->ptr, p->size);
      break;
    }
    default: break;
  }
}

}  // namespace nanscope

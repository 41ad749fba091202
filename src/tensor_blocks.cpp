#include "tensor_blocks.hpp"

#include <mutex>

#include "torch_shim_abi.h"

namespace nanscope {

namespace {
// [base, base+size) with size 0 still names its first byte, so a zero-length free or
// segment range cannot slip between entries.
uint64_t end_of(uint64_t base, uint64_t size) { return base + (size ? size : 1); }
}  // namespace

void TensorBlockMap::apply(int action, int device, uint64_t addr, uint64_t size, uint64_t stream,
                           uint64_t pool_a, uint64_t pool_b) noexcept {
  // Called under torch's allocator lock: bad_alloc from a map node must not unwind into c10.
  try {
    const TensorBlock b{addr, size, stream, pool_a, pool_b, device};
    switch (action) {
      case NANSCOPE_TORCH_ALLOC: alloc(b); break;
      case NANSCOPE_TORCH_FREE_COMPLETED: free(addr, size); break;
      case NANSCOPE_TORCH_SEGMENT_ALLOC:
      case NANSCOPE_TORCH_SEGMENT_MAP: add_segment(addr, size); break;
      case NANSCOPE_TORCH_SEGMENT_FREE:
      case NANSCOPE_TORCH_SEGMENT_UNMAP: release_range(addr, size); break;
      case NANSCOPE_TORCH_SEED_BLOCK: seed(b); break;
      case NANSCOPE_TORCH_SEED_SEGMENT: seed_segment(addr, size); break;
      default: break;  // FREE_REQUESTED: the block stays live until FREE_COMPLETED
    }
  } catch (...) {
  }
}

TensorBlockMap::Blocks::const_iterator TensorBlockMap::find_locked(uint64_t ptr) const {
  auto it = blocks_.upper_bound(ptr);
  if (it == blocks_.begin()) return blocks_.end();
  --it;
  return ptr - it->first < it->second.size ? it : blocks_.end();
}

bool TensorBlockMap::overlaps_locked(uint64_t base, uint64_t size) const {
  auto it = blocks_.lower_bound(base);
  if (it != blocks_.end() && it->first < end_of(base, size)) return true;
  return it != blocks_.begin() && std::prev(it)->first + std::prev(it)->second.size > base;
}

std::size_t TensorBlockMap::erase_blocks_locked(uint64_t base, uint64_t size) {
  auto it = blocks_.lower_bound(base);
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size > base) it = prev;
  }
  std::size_t n = 0;
  for (const uint64_t end = end_of(base, size); it != blocks_.end() && it->first < end; ++n) it = blocks_.erase(it);
  return n;
}

void TensorBlockMap::erase_segments_locked(uint64_t base, uint64_t size) {
  // Unmaps need not match maps one to one: keep the parts of a range outside [base, end).
  const uint64_t end = end_of(base, size);
  auto it = segments_.lower_bound(base);
  if (it != segments_.begin() && std::prev(it)->first + std::prev(it)->second > base) --it;
  while (it != segments_.end() && it->first < end) {
    const uint64_t s = it->first, e = it->first + it->second;
    it = segments_.erase(it);
    if (s < base) segments_.emplace(s, base - s);
    if (e > end) {
      segments_.emplace(end, e - end);
      break;  // ranges never overlap: nothing further starts before `end`
    }
  }
}

void TensorBlockMap::remember_free_locked(uint64_t base, uint64_t size, bool segment) {
  if (!seeding_) return;
  if (tombstones_.size() >= kMaxTombstones) {
    seed_poisoned_ = true;
    return;
  }
  tombstones_.push_back({base, end_of(base, size), segment});
}

bool TensorBlockMap::seed_refused_locked(uint64_t base, uint64_t size, bool segment) const {
  if (!seeding_ || seed_poisoned_) return true;
  for (const auto& t : tombstones_)
    if ((t.segment || !segment) && t.base < end_of(base, size) && base < t.end) return true;
  return false;
}

void TensorBlockMap::alloc(const TensorBlock& b) {
  if (b.size == 0) return;  // c10 hands out no block for empty tensors
  std::unique_lock lock(mu_);
  ++counts_.allocs;
  // Blocks never overlap in the allocator: anything overlapping is a block whose free we missed.
  counts_.replaced += erase_blocks_locked(b.base, b.size);
  if (blocks_.size() >= cap_) {
    ++counts_.dropped;
    return;
  }
  emplace_locked(b);
}

void TensorBlockMap::emplace_locked(const TensorBlock& b) {
  const uint64_t serial = serial_.load(std::memory_order_relaxed) + 1;
  blocks_.emplace(b.base, Entry{b.size, b.stream, b.pool_a, b.pool_b, b.device, serial});
  serial_.store(serial, std::memory_order_release);
}

void TensorBlockMap::free(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  remember_free_locked(base, size, /*segment=*/false);
  if (blocks_.erase(base))
    ++counts_.frees;
  else
    ++counts_.unknown_frees;
}

void TensorBlockMap::release_range(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  remember_free_locked(base, size, /*segment=*/true);
  erase_blocks_locked(base, size);
  erase_segments_locked(base, size);
}

void TensorBlockMap::add_segment(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  // Fresh memory from the driver holds no live block: entries there are stale.
  counts_.replaced += erase_blocks_locked(base, size);
  erase_segments_locked(base, size);
  if (segments_.size() < cap_) segments_.emplace(base, size);
}

void TensorBlockMap::begin_seed() {
  std::unique_lock lock(mu_);
  seeding_ = true;
  seed_poisoned_ = false;
  tombstones_.clear();
}

bool TensorBlockMap::seed(const TensorBlock& b) {
  if (b.size == 0) return false;
  std::unique_lock lock(mu_);
  if (seed_refused_locked(b.base, b.size, /*segment=*/false) || overlaps_locked(b.base, b.size) ||
      blocks_.size() >= cap_) {
    ++counts_.seed_skipped;
    return false;
  }
  emplace_locked(b);
  ++counts_.seeded;
  return true;
}

void TensorBlockMap::seed_segment(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  // A segment the live events already know (or one freed while seeding) wins over the snapshot.
  auto it = segments_.lower_bound(base);
  bool overlaps = it != segments_.end() && it->first < end_of(base, size);
  overlaps |= it != segments_.begin() && std::prev(it)->first + std::prev(it)->second > base;
  if (!overlaps && !seed_refused_locked(base, size, /*segment=*/true) && segments_.size() < cap_)
    segments_.emplace(base, size);
}

void TensorBlockMap::end_seed() {
  std::unique_lock lock(mu_);
  seeding_ = false;
  tombstones_.clear();
  tombstones_.shrink_to_fit();
}

std::optional<AddressRange> TensorBlockMap::block_of(uint64_t ptr) const {
  std::shared_lock lock(mu_);
  auto it = find_locked(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return AddressRange{it->first, it->second.size};
}

std::optional<TensorBlock> TensorBlockMap::find(uint64_t ptr) const {
  std::shared_lock lock(mu_);
  auto it = find_locked(ptr);
  if (it == blocks_.end()) return std::nullopt;
  const Entry& e = it->second;
  return TensorBlock{it->first, e.size, e.stream, e.pool_a, e.pool_b, e.device, e.serial};
}

std::optional<AddressRange> TensorBlockMap::segment_of(uint64_t ptr) const {
  std::shared_lock lock(mu_);
  auto it = segments_.upper_bound(ptr);
  if (it == segments_.begin()) return std::nullopt;
  --it;
  AddressRange r{it->first, it->second};
  if (!r.contains(ptr)) return std::nullopt;
  return r;
}

TensorBlockStats TensorBlockMap::stats() const {
  std::shared_lock lock(mu_);
  TensorBlockStats s = counts_;
  s.live = blocks_.size();
  s.segments = segments_.size();
  return s;
}

}  // namespace nanscope

#include "alloc_map.hpp"

#include <mutex>

namespace nanscope {

void AllocationMap::erase_overlaps_locked(uint64_t base, uint64_t size) {
  auto it = by_base_.lower_bound(base);
  if (it != by_base_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > base) it = prev;
  }
  while (it != by_base_.end() && it->first < base + size) it = by_base_.erase(it);
}

void AllocationMap::insert(uint64_t base, uint64_t size) {
  if (size == 0) return;
  std::unique_lock lock(mu_);
  erase_overlaps_locked(base, size);  // a new allocation replaces entries we missed the free of
  by_base_.emplace(base, size);
}

bool AllocationMap::erase(uint64_t base) {
  std::unique_lock lock(mu_);
  return by_base_.erase(base) != 0;
}

void AllocationMap::erase_range(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  erase_overlaps_locked(base, size);
}

std::optional<AddressRange> AllocationMap::find(uint64_t ptr) const {
  std::shared_lock lock(mu_);
  auto it = by_base_.upper_bound(ptr);
  if (it == by_base_.begin()) return std::nullopt;
  --it;
  AddressRange r{it->first, it->second};
  if (!r.contains(ptr)) return std::nullopt;
  return r;
}

AddressRange AllocationMap::span() const {
  std::shared_lock lock(mu_);
  if (by_base_.empty()) return {};
  // Allocations never overlap: the one with the highest base ends last.
  const auto& [last_base, last_size] = *by_base_.rbegin();
  return {by_base_.begin()->first, last_base + last_size - by_base_.begin()->first};
}

std::size_t AllocationMap::size() const {
  std::shared_lock lock(mu_);
  return by_base_.size();
}

}  // namespace nanscope

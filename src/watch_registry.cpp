#include "watch_registry.hpp"

#include <algorithm>

namespace nanscope {

uint32_t WatchRegistry::add(WatchSpec spec) {
  std::lock_guard lock(mu_);
  WatchEntry e;
  e.id = next_id_++;
  e.begin = spec.ptr;
  e.end = spec.ptr + spec.extent_bytes();
  e.spec = std::move(spec);
  auto next = std::make_shared<Snapshot>(*snapshot_);
  next->insert(std::upper_bound(next->begin(), next->end(), e.begin,
                                [](uint64_t b, const WatchEntry& w) { return b < w.begin; }),
               std::move(e));
  std::atomic_store(&snapshot_, std::shared_ptr<const Snapshot>(std::move(next)));
  count_.fetch_add(1, std::memory_order_relaxed);
  return next_id_ - 1;
}

bool WatchRegistry::remove(uint32_t id) {
  std::lock_guard lock(mu_);
  auto next = std::make_shared<Snapshot>(*snapshot_);
  auto it = std::find_if(next->begin(), next->end(), [id](const WatchEntry& w) { return w.id == id; });
  if (it == next->end()) return false;
  next->erase(it);
  std::atomic_store(&snapshot_, std::shared_ptr<const Snapshot>(std::move(next)));
  count_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void WatchRegistry::for_each_containing(const Snapshot& s, uint64_t ptr,
                                        const std::function<void(const WatchEntry&)>& fn) {
  // Entries are sorted by begin; any entry containing ptr starts at or before it.
  auto it = std::upper_bound(s.begin(), s.end(), ptr, [](uint64_t p, const WatchEntry& w) { return p < w.begin; });
  while (it != s.begin()) {
    --it;
    if (ptr < it->end) fn(*it);
  }
}

}  // namespace nanscope

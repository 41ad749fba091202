// Watches declared through the C API: buffers tied to a padding spec. Launch hooks read an
// immutable snapshot without locking; declarations swap in a new one.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "padding.hpp"

namespace nanscope {

struct WatchEntry {
  uint32_t id = 0;
  WatchSpec spec;
  uint64_t begin = 0, end = 0;  // [ptr, ptr + extent)
};

class WatchRegistry {
 public:
  using Snapshot = std::vector<WatchEntry>;  // sorted by begin

  // Returns the new watch id (>= 1). The spec must be valid (see validate()).
  uint32_t add(WatchSpec spec);
  bool remove(uint32_t id);
  std::shared_ptr<const Snapshot> snapshot() const { return std::atomic_load(&snapshot_); }
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }

  // Calls fn for every watch whose range contains ptr.
  static void for_each_containing(const Snapshot& s, uint64_t ptr, const std::function<void(const WatchEntry&)>& fn);

 private:
  Ranked<std::mutex, LockLevel::container> mu_{"WatchRegistry::mu_"};
  uint32_t next_id_ = 1;
  std::shared_ptr<const Snapshot> snapshot_ = std::make_shared<Snapshot>();
  std::atomic<size_t> count_{0};
};

}  // namespace nanscope

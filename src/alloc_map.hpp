// Device allocations seen through the driver API (cuMemAlloc*, pools, VMM maps), so a kernel
// argument can be turned into the extent of the buffer it points into.
#pragma once
#include "lock_rank.hpp"
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>

namespace nanscope {

struct AddressRange {
  uint64_t base = 0;
  uint64_t size = 0;
  bool contains(uint64_t p) const { return p >= base && p - base < size; }
};

class AllocationMap {
 public:
  void insert(uint64_t base, uint64_t size);
  // Removes the allocation that starts at `base`; returns false if none was known.
  bool erase(uint64_t base);
  // Removes every allocation overlapping [base, base+size): VMM unmaps cover ranges.
  void erase_range(uint64_t base, uint64_t size);
  std::optional<AddressRange> find(uint64_t ptr) const;
  std::size_t size() const;
  // [lowest base, highest end) over every live allocation ({0, 0} when none): a word outside it
  // cannot point into device memory we know, the cheap first test for pointers in kernel params.
  AddressRange span() const;

 private:
  void erase_overlaps_locked(uint64_t base, uint64_t size);

  mutable Ranked<std::shared_mutex, LockLevel::container> mu_{"AllocMap::mu_"};
  std::map<uint64_t, uint64_t> by_base_;  // base -> size; allocations never overlap
};

}  // namespace nanscope

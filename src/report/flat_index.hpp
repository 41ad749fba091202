// A map from 64-bit hashes to indices, in one open-addressing array: a lookup is one probe run
// in contiguous memory (std::unordered_map's buckets and nodes cost the report's hot path two or
// three dependent cache misses per event). The caller keeps the keys and resolves collisions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nanscope::report {

class FlatIndex {
 public:
  // The index stored for hash `h`, or nullptr.
  const std::uint32_t* find(std::uint64_t h) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = start(h);; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.hash == h) return &s.value;
    }
  }
  // Stores `value` for hash `h` (not already stored).
  void insert(std::uint64_t h, std::uint32_t value) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    place(h, value);
    ++used_;
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t value = 0;
    bool used = false;
  };
  std::vector<Slot> slots_;
  std::size_t used_ = 0;

  std::size_t mask() const { return slots_.size() - 1; }
  // Successive hashes (the callers probe h, h + 1, ... on a collision) land in successive slots.
  std::size_t start(std::uint64_t h) const { return static_cast<std::size_t>(h) & mask(); }
  void place(std::uint64_t h, std::uint32_t value) {
    std::size_t i = start(h);
    while (slots_[i].used) i = (i + 1) & mask();
    slots_[i] = {h, value, true};
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.empty() ? 64 : old.size() * 2);  // a power of two: mask() works
    for (const Slot& s : old)
      if (s.used) place(s.hash, s.value);
  }
};

}  // namespace nanscope::report

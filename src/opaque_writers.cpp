#include "opaque_writers.hpp"

#include <cstring>

namespace nanscope {

void OpaqueWriters::candidate_words(const char* bytes, uint32_t size, uint64_t lo, uint64_t hi,
                                    std::vector<uint64_t>& out) {
  if (!bytes) return;
  for (uint32_t off = 0; off + 8 <= size; off += 8) {
    uint64_t v = 0;
    std::memcpy(&v, bytes + off, sizeof(v));
    if (v >= lo && v < hi) out.push_back(v);
  }
}

void OpaqueWriters::note(uint64_t base, OpaqueWrite w) {
  std::lock_guard lock(mu_);
  auto it = by_base_.find(base);
  if (it != by_base_.end()) {
    it->second.add(w);
    return;
  }
  if (by_base_.size() >= cap_) {
    ++dropped_;  // see complete()
    return;
  }
  by_base_[base].add(w);
  count_.store(by_base_.size(), std::memory_order_relaxed);
}

void OpaqueWriters::note_intended(uint64_t base, uint8_t bits) {
  if (!bits) return;
  std::lock_guard lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) {
    if (by_base_.size() >= cap_) return;  // only a missed "intended": the infinity stays arithmetic
    it = by_base_.emplace(base, CandidateList{}).first;
    count_.store(by_base_.size(), std::memory_order_relaxed);
  }
  it->second.intended_inf |= bits;
}

void OpaqueWriters::forget(uint64_t base) {
  std::lock_guard lock(mu_);
  by_base_.erase(base);
  count_.store(by_base_.size(), std::memory_order_relaxed);
}

std::optional<OpaqueWrite> OpaqueWriters::last(uint64_t base) const {
  std::lock_guard lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  return it->second.last();
}

std::optional<CandidateList> OpaqueWriters::history(uint64_t base) const {
  std::lock_guard lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return std::nullopt;
  return it->second;
}

bool OpaqueWriters::complete() const {
  std::lock_guard lock(mu_);
  return dropped_ == 0;
}

size_t OpaqueWriters::size() const {
  std::lock_guard lock(mu_);
  return by_base_.size();
}

uint64_t OpaqueWriters::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace nanscope

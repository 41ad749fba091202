#include "buffer_slots.hpp"

#include <algorithm>

namespace nanscope {

namespace {

// A new generation for `b`'s slot: its device word, last written under the old one, reads as
// unknown, and the buffer is claimable for an initial scan again.
void next_generation(TrackedBuffer& b, std::vector<uint16_t>& gens) {
  const uint32_t slot = b.ref & 0xffffu;
  uint16_t& gen = gens[slot];
  gen = static_cast<uint16_t>(gen + 1);
  if (gen == 0) gen = 1;
  b.ref = slot | uint32_t{gen} << 16;
  b.state_known = false;
}

}  // namespace

BufferSlots::BufferSlots(uint32_t slots) : slots_(std::max<uint32_t>(slots, 1)), gen_(slots_, 0) {
  free_.reserve(slots_);
  for (uint32_t s = slots_; s-- > 0;) free_.push_back(s);  // slot 0 first
}

uint32_t BufferSlots::ref_for(uint64_t ptr, DType dtype, uint64_t bytes) {
  std::lock_guard lock(mu_);
  return entry_for(ptr, dtype, bytes).buf.ref;
}

BufferSlots::Entry& BufferSlots::entry_for(uint64_t ptr, DType dtype, uint64_t bytes) {
  if (auto it = by_ptr_.find(ptr); it != by_ptr_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    TrackedBuffer& b = it->second.buf;
    if (bytes) b.bytes = bytes, b.dtype = dtype;
    return it->second;
  }
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    const uint64_t victim = lru_.back();
    lru_.pop_back();
    slot = by_ptr_.at(victim).buf.ref & 0xffffu;
    by_ptr_.erase(victim);
    ++evictions_;
  }
  // Generation 0 is never handed out: a zeroed state word (unknown) must not match.
  uint16_t& gen = gen_[slot];
  gen = static_cast<uint16_t>(gen + 1);
  if (gen == 0) gen = 1;
  lru_.push_front(ptr);
  Entry e{TrackedBuffer{ptr, bytes, dtype, slot | uint32_t{gen} << 16}, lru_.begin()};
  return by_ptr_.emplace(ptr, e).first->second;
}

uint32_t BufferSlots::ref_for_output(uint64_t ptr, DType dtype, uint64_t bytes, uint64_t launch_id,
                                     uint64_t typed_at) {
  std::lock_guard lock(mu_);
  Entry& e = entry_for(ptr, dtype, bytes);
  e.buf.state_known = true;
  e.buf.judged_by = launch_id;
  if (bytes) e.buf.typed_at = typed_at;
  forget_overlapping(ptr, std::max<uint64_t>(bytes, 1));
  return e.buf.ref;
}

// Every other judged buffer starting inside [ptr, ptr + bytes), which a write there just changed:
// a view inside it (the key half of a fused QKV output, judged clean by an initial scan on an
// earlier step) would otherwise keep its old state, and a copy of NaN read through it would be
// judged `introduced` (H200, session 21: GPT-2's key and value copies at modeling_gpt2.py:58 and
// :69, the step after a clean one). Each moves to a new generation: its next reader scans it.
// A buffer enclosing the write (a KV cache a step writes a slice of) keeps its state: forgetting
// it would rescan the whole cache at every step (a cost not yet measured; docs/origin.md).
void BufferSlots::forget_overlapping(uint64_t ptr, uint64_t bytes) {
  for (auto it = by_ptr_.upper_bound(ptr); it != by_ptr_.end() && it->first < ptr + bytes; ++it)
    if (it->second.buf.state_known) next_generation(it->second.buf, gen_);
}

std::pair<uint32_t, bool> BufferSlots::ref_for_input(uint64_t ptr, DType dtype) {
  std::lock_guard lock(mu_);
  const Entry& e = entry_for(ptr, dtype, 0);
  return {e.buf.ref, !e.buf.state_known};
}

std::optional<TrackedBuffer> BufferSlots::claim_initial_scan(uint64_t ptr, DType dtype, uint64_t bytes,
                                                            uint64_t launch_id, uint64_t typed_at) {
  if (dtype == DType::none || bytes < dtype_size(dtype)) return std::nullopt;
  ref_for(ptr, dtype, 0);  // keeps a known extent; assigns a slot on first sight
  std::lock_guard lock(mu_);
  auto it = by_ptr_.find(ptr);
  if (it == by_ptr_.end() || it->second.buf.state_known) return std::nullopt;
  TrackedBuffer& b = it->second.buf;
  b.state_known = true;
  b.judged_by = launch_id;
  // The reader's facts, not an earlier tensor's: a caching allocator hands the same address to
  // tensors of other sizes and types.
  b.bytes = bytes, b.dtype = dtype, b.typed_at = typed_at;
  return b;
}

bool TrackedBuffer::holds_an_element() const { return dtype != DType::none && bytes >= dtype_size(dtype); }

std::optional<TrackedBuffer> BufferSlots::containing(uint64_t ptr) const {
  std::lock_guard lock(mu_);
  // The nearest buffers at or below ptr: an input-only (untyped) or small buffer may start
  // inside a larger typed one, so look a few entries back, not only at the nearest.
  auto it = by_ptr_.upper_bound(ptr);
  for (int steps = 0; steps < 16 && it != by_ptr_.begin(); ++steps) {
    --it;
    const TrackedBuffer& b = it->second.buf;
    if (b.dtype != DType::none && ptr < b.ptr + std::max<uint64_t>(b.bytes, 1)) return b;
  }
  return std::nullopt;
}

std::map<uint64_t, BufferSlots::Entry>::iterator BufferSlots::find_containing(uint64_t ptr) {
  auto it = by_ptr_.upper_bound(ptr);
  for (int steps = 0; steps < 16 && it != by_ptr_.begin(); ++steps) {
    --it;
    const TrackedBuffer& b = it->second.buf;
    if (ptr < b.ptr + std::max<uint64_t>(b.bytes, 1)) return it;
  }
  return by_ptr_.end();
}

std::optional<TrackedBuffer> BufferSlots::invalidate(uint64_t ptr) {
  std::lock_guard lock(mu_);
  auto it = find_containing(ptr);
  if (it == by_ptr_.end() || !it->second.buf.state_known) return std::nullopt;
  next_generation(it->second.buf, gen_);
  return it->second.buf;
}

void BufferSlots::untype(uint64_t ptr) {
  std::lock_guard lock(mu_);
  if (auto it = by_ptr_.find(ptr); it != by_ptr_.end()) it->second.buf.dtype = DType::none, it->second.buf.bytes = 0;
}

std::size_t BufferSlots::invalidate_all() {
  std::lock_guard lock(mu_);
  std::size_t known = 0;
  for (auto& [ptr, e] : by_ptr_)
    if (e.buf.state_known) {
      next_generation(e.buf, gen_);
      ++known;
    }
  return known;
}

void BufferSlots::forget_range(uint64_t base, uint64_t size) {
  std::lock_guard lock(mu_);
  for (auto it = by_ptr_.lower_bound(base); it != by_ptr_.end() && it->first < base + size;) {
    free_.push_back(it->second.buf.ref & 0xffffu);
    lru_.erase(it->second.lru);
    it = by_ptr_.erase(it);
  }
}

std::size_t BufferSlots::size() const {
  std::lock_guard lock(mu_);
  return by_ptr_.size();
}

uint64_t BufferSlots::evictions() const {
  std::lock_guard lock(mu_);
  return evictions_;
}

}  // namespace nanscope

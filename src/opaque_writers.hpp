// Opaque writers: the launches nanscope could not decode, by the buffers their parameter words
// point into (and the host copies and sets into buffers nanscope did not track yet). A buffer
// read before any scan judged it is scanned once before its reader's scan (its initial state);
// when opaque launches referenced it since it was last judged, the last one is the writer the
// finding is named after and all of them (the last few) are its candidates (origin candidate,
// src/candidate.hpp), not the host and never the decoded reader. Pure host code, thread-safe,
// bounded.
#pragma once
#include "lock_rank.hpp"
#include <cstdint>
#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "candidate.hpp"

namespace nanscope {

class OpaqueWriters {
 public:
  explicit OpaqueWriters(size_t cap = 1u << 16) : cap_(cap) {}

  // Which 8-byte-aligned words of a launch's parameter bytes fall inside [lo, hi) — the span of
  // every live allocation — are left for the caller to resolve to buffers; this is the cheap
  // first filter (most words are sizes, strides and zeros).
  static void candidate_words(const char* bytes, uint32_t size, uint64_t lo, uint64_t hi, std::vector<uint64_t>& out);

  // An opaque launch referenced the buffer starting at `base`.
  void note(uint64_t base, OpaqueWrite w);
  // A decoded launch wrote intended infinities (NS_INTENT_* bits) into the buffer at `base`: its
  // next initial scan may find them, and calls them intended. Kept like a note, within the cap.
  void note_intended(uint64_t base, uint8_t bits);
  // A scan judged the buffer: what wrote it before is no longer the question.
  void forget(uint64_t base);
  // The last opaque launch that referenced `base` since it was last judged.
  std::optional<OpaqueWrite> last(uint64_t base) const;
  // Every writer (the last CandidateList::kMax) noted for `base` since it was last judged.
  std::optional<CandidateList> history(uint64_t base) const;
  // False once a note was refused at the cap: a buffer with no note may then still have had an
  // opaque writer, so its initial state is unknown rather than the host's.
  bool complete() const;
  size_t size() const;
  // Lock-free: most launches need not look (no opaque launch referenced anything yet).
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }
  uint64_t dropped() const;

 private:
  const size_t cap_;
  mutable Ranked<std::mutex, LockLevel::container> mu_{"OpaqueWriters::mu_"};
  std::unordered_map<uint64_t, CandidateList> by_base_;
  uint64_t dropped_ = 0;  // notes refused at the cap
  std::atomic<size_t> count_{0};  // by_base_.size(), for empty()
};

}  // namespace nanscope

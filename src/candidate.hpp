// Candidate origins: a finding whose values were last written, as far as nanscope can tell, by a
// launch it could not see into (no decoder, no typed signature, a refused decode, a library
// kernel). Such a launch's parameter words pointed into the buffer, so it may have written it;
// nanscope cannot prove it did. The finding names those launches as its candidates instead of
// calling the origin unknown or blaming the decoded reader that found the values
// (docs/origin.md). Pure host code: the lists, and the book that keeps each scan's candidates
// until its finding is drained. Thread-safe where it says so.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "lineage.hpp"

namespace nanscope {

// A launch or host operation that may have written a buffer nanscope had not judged since.
struct OpaqueWrite {
  uint32_t kernel_id = 0;
  uint64_t launch_id = 0;
  bool host = false;    // a host copy or memset wrote it (origin host), not an opaque kernel
  uint64_t stream = 0;  // the launch's stream as the app passed it (0: the legacy default stream)
  uint64_t python = 0;  // where the launch came from in Python (hooks/python_frames.hpp), 0: unknown
  // What its pointer words hit, as last judged before it ran (the first kMaxInputs judged ones):
  // a finding there makes its output's finding propagated through it (lineage_candidate.cpp).
  static constexpr uint32_t kMaxInputs = 4;
  lineage::JudgedWrite inputs[kMaxInputs];
  uint32_t input_count = 0;
  void add_input(lineage::JudgedWrite in);
};

// The writers of one buffer since a scan last judged it, oldest first: the last kMax distinct
// launches, and how many older ones were dropped.
struct CandidateList {
  static constexpr uint32_t kMax = 4;
  OpaqueWrite w[kMax];
  uint32_t n = 0;
  uint32_t dropped = 0;
  // NS_INTENT_* bits: infinities decoded launches wrote into the buffer on purpose since it was
  // last judged (a mask filled into a slice of it), for its initial scan's verdict.
  uint8_t intended_inf = 0;

  // A launch noted again (a buffer and a view inside it) is one candidate.
  void add(const OpaqueWrite& write);
  void merge(const CandidateList& other);
  bool empty() const { return n == 0; }
  std::optional<OpaqueWrite> last() const;
  // The kernels only: a host copy or set is an origin of its own (host), never a candidate.
  CandidateList kernels() const;
};

// The candidates of each scan whose finding may need them, by the scan's launch id (the launch
// an initial scan is named after, or the reader whose inputs were unknown) and the buffer the
// finding is in. Eager scans post at most once per buffer and are drained within moments: they
// are kept first in, first out. Scans captured into a graph post on every replay for as long as
// the graph lives: they are kept until the cap, then refused (counted).
class CandidateBook {
 public:
  explicit CandidateBook(std::size_t eager_cap = 1u << 14, std::size_t captured_cap = 1u << 14)
      : eager_cap_(eager_cap), captured_cap_(captured_cap) {}

  void put(uint64_t launch_id, uint64_t ptr, const CandidateList& candidates, bool captured);
  std::optional<CandidateList> find(uint64_t launch_id, uint64_t ptr) const;
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }  // lock-free: most drains
  uint64_t refused() const;  // captured entries past the cap

 private:
  struct Key {
    uint64_t launch_id, ptr;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return std::hash<uint64_t>{}(k.launch_id * 0x9e3779b97f4a7c15ull ^ k.ptr); }
  };
  const std::size_t eager_cap_, captured_cap_;
  mutable Ranked<std::mutex, LockLevel::container> mu_{"CandidateBook::mu_"};
  std::unordered_map<Key, CandidateList, KeyHash> eager_, captured_;
  std::deque<Key> eager_order_;
  uint64_t refused_ = 0;
  std::atomic<std::size_t> count_{0};
};

// The candidates of a drained finding (its scan's launch id and buffer): only when no tracked
// non-finite input (propagated) or host write explains it. Their kernel ids go into `d`, which
// the lineage then classifies as candidate.
std::optional<CandidateList> attach_candidates(const CandidateBook& book, uint64_t launch_id, uint64_t ptr,
                                               lineage::DeviceFinding& d);

}  // namespace nanscope

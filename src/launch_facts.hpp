// The facts a finding needs at drain time from the launch its scan ran for (issue 36, item 3):
// the launch's Python line, the candidates of its buffers (src/candidate.hpp) and, for an NCCL
// collective's scan, the collective (src/collective.hpp). One record per scan task, filed when
// the scan is submitted; its slot number rides in the high half of the task's correlation id
// (scan_abi.h: NS_CORRELATION_WITH_FACTS), which the device copies into every record the scan
// posts, so the drain goes from a record to its launch's facts by index, never by a table keyed
// by launch id. The slot keeps the launch id it was filed for: a slot a later launch took over
// answers "evicted", as a table miss did. Pure host code; thread-safe.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "candidate.hpp"
#include "collective.hpp"

namespace nanscope {

struct LaunchFacts {
  uint64_t launch_id = 0;  // the launch the scan is named after (an initial scan: its writer's)
  uint64_t python = 0;     // where the launch came from in Python (hooks/python_frames.hpp), 0: unknown
  std::optional<CandidateList> candidates;   // a scan's buffers' candidates (never an empty list)
  std::optional<CollectiveFacts> collective;  // the collective whose buffer the scan looked at
  bool empty() const { return !python && !candidates && !collective; }
};

// The Python line of a finding: an initial scan named after the last launch that may have
// written its buffer takes that launch's line from the candidate list; any other scan its own
// launch's (`launch`; nullopt: never filed, or evicted).
uint64_t finding_python(uint64_t launch_id, uint32_t kernel_id, const std::optional<LaunchFacts>& launch,
                        const std::optional<CandidateList>& candidates);

// The bounds are those of the three tables this store replaced (PythonFrames' launch ring,
// CandidateBook, CollectiveBook). Eager scans are drained within moments: their records go first
// in, first out (2^16 slots, the Python ring's reach), their candidate lists after 2^14 later
// lists and their collectives after 2^13 later ones. Captured scans post on every replay for as
// long as their graph lives: their records stay, up to 2^16 slots (the Python map's cap; the
// collective book had none) and 2^14 candidate lists; past the cap a filing is refused (counted).
class LaunchFactsStore {
 public:
  struct Limits {
    uint32_t eager = 1u << 16, captured = 1u << 16;
    uint32_t eager_candidates = 1u << 14, captured_candidates = 1u << 14;
    uint32_t eager_collectives = 1u << 13;
  };
  LaunchFactsStore() : LaunchFactsStore(Limits{}) {}
  explicit LaunchFactsStore(Limits limits);
  ~LaunchFactsStore();

  // Files one scan's facts. Returns the slot number (1-based) for its task, or 0 when nothing is
  // kept (empty facts, a captured scan past the cap). An eager filing without candidates or a
  // collective (most launches: only a Python line) takes no lock.
  uint32_t file(LaunchFacts facts, bool captured);
  // The facts filed under `slot` for `launch_id`; nullopt for slot 0, a slot filed for another
  // launch since (evicted), or facts refused. Takes the lock only for candidates or a collective.
  std::optional<LaunchFacts> find(uint32_t slot, uint64_t launch_id) const;
  uint64_t refused() const;  // captured filings, or their candidate lists, past the caps

 private:
  struct Slot;
  struct Extra {  // the parts a slot's atomics cannot hold, by slot index
    uint64_t launch_id = 0;  // whose they are: a slot taken over since keeps its old one until aged
    std::optional<CandidateList> candidates;
    std::optional<CollectiveFacts> collective;
  };
  using Filed = std::pair<uint32_t, uint64_t>;  // slot index, launch id: first in, first out
  Slot* slots();  // allocated at the first filing (3 MiB)
  uint32_t take_slot(bool captured);  // index + 1, or 0 when refused
  bool keep_extra(uint32_t index, LaunchFacts& facts, bool captured);  // under mu_; false: none kept
  void age(std::deque<Filed>& order, uint32_t cap, bool candidates);   // under mu_

  const Limits limits_;
  std::once_flag alloc_once_;
  std::atomic<Slot*> slots_{nullptr};
  std::atomic<uint64_t> next_eager_{0};
  mutable Ranked<std::mutex, LockLevel::container> mu_{"LaunchFactsStore::mu_"};
  uint32_t captured_used_ = 0, captured_candidates_ = 0;
  uint64_t refused_ = 0;
  std::unordered_map<uint32_t, Extra> extras_;
  std::deque<Filed> eager_candidates_, eager_collectives_;
};

}  // namespace nanscope

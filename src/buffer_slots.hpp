// Slots of the device origin-state array (one 64-bit word per tracked buffer, see scan_abi.h):
// which buffer owns which slot, with a generation so a reused slot's stale word is never read
// as the new buffer's. Least recently used buffers give their slot up when all are taken.
// Host only, no CUDA; thread-safe.
#pragma once
#include "lock_rank.hpp"
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "signature.hpp"

namespace nanscope {

struct TrackedBuffer {
  uint64_t ptr = 0;
  uint64_t bytes = 0;  // extent last scanned (0 when only seen as an input)
  DType dtype = DType::none;
  uint32_t ref = 0;    // slot | generation << 16, as a task carries it
  bool state_known = false;  // a scan has written (or been launched to write) its state word
  uint64_t judged_by = 0;    // the launch that scan is named after (0: unknown), for candidates' inputs
  uint64_t typed_at = 0;     // the allocator's last block serial when a scan typed it (type_outlives_block)
  // A scan typed it over at least one element: a copy into it or out of it can be read at that type.
  bool holds_an_element() const;
};

class BufferSlots {
 public:
  explicit BufferSlots(uint32_t slots);

  // The slot reference of the buffer starting at `ptr`, assigning one (and recording its
  // extent and dtype when known) on first sight.
  uint32_t ref_for(uint64_t ptr, DType dtype = DType::none, uint64_t bytes = 0);
  // The same for an input, with whether no scan has judged it yet (then claim_initial_scan).
  std::pair<uint32_t, bool> ref_for_input(uint64_t ptr, DType dtype);
  // The same for a buffer a scan is about to write the state word of; `launch_id`: the launch
  // the scan is named after (its findings carry it); `typed_at`: the allocator's block serial now.
  uint32_t ref_for_output(uint64_t ptr, DType dtype, uint64_t bytes, uint64_t launch_id = 0, uint64_t typed_at = 0);
  // A buffer read before any scan wrote its state word (written by the host, or before
  // nanscope attached): returns it once, with its extent, so the caller scans it before its
  // first reader's scan judges the origin; later calls (and unknown extents) give nullopt.
  std::optional<TrackedBuffer> claim_initial_scan(uint64_t ptr, DType dtype, uint64_t bytes, uint64_t launch_id = 0,
                                                  uint64_t typed_at = 0);
  // The tracked buffer whose scanned extent holds `ptr` (for copies and sets into it).
  std::optional<TrackedBuffer> containing(uint64_t ptr) const;
  // A launch nanscope cannot see into may have written the tracked buffer holding `ptr`: its
  // slot moves to a new generation, so the device word (last written by a scan) reads as
  // unknown and the buffer is claimable for an initial scan again. Returns the buffer.
  std::optional<TrackedBuffer> invalidate(uint64_t ptr);
  // The buffer starting at `ptr` keeps its slot and state but no longer says its type or extent:
  // a memset's scan read it as its width's float, which a later copy's rescan must not take for
  // the buffer's type (no other buffer's entry is touched).
  void untype(uint64_t ptr);
  // Every tracked buffer's state at once (the sentinel tier's eager window opens: what launches
  // left out of the sample wrote was never judged); returns how many were known.
  std::size_t invalidate_all();
  // A freed allocation: forget every buffer inside [base, base + size).
  void forget_range(uint64_t base, uint64_t size);

  std::size_t size() const;
  uint64_t evictions() const;

 private:
  struct Entry {
    TrackedBuffer buf;
    std::list<uint64_t>::iterator lru;
  };
  mutable Ranked<std::mutex, LockLevel::container> mu_{"BufferSlots::mu_"};
  const uint32_t slots_;
  std::map<uint64_t, Entry> by_ptr_;
  std::list<uint64_t> lru_;           // front: most recently used
  std::vector<uint32_t> free_;  // slots never used or given back (the next one at the back)
  void forget_overlapping(uint64_t ptr, uint64_t bytes);  // under mu_: the judged views inside a write
  std::vector<uint16_t> gen_;   // generation of each slot, 0 until first handed out
  uint64_t evictions_ = 0;
  std::map<uint64_t, Entry>::iterator find_containing(uint64_t ptr);  // under mu_; end() when none
  Entry& entry_for(uint64_t ptr, DType dtype, uint64_t bytes);  // under mu_: ref_for's entry
};

}  // namespace nanscope

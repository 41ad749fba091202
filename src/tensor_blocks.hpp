// Live blocks of PyTorch's CUDA caching allocator, fed by its trace events (through the torch
// shim, hooks/torch_blocks.cpp), so a kernel argument can be turned into the extent of the
// tensor block it points into rather than the 2-20 MB driver segment around it.
//
// A block is [base, base + requested size): the size the tensor asked for, not the allocator's
// rounded block, so the tail of a rounded block (stale bytes of an older tensor) is outside
// every block. Blocks are never merged: two adjacent tensors stay two entries.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "alloc_map.hpp"

namespace nanscope {

struct TensorBlock {
  uint64_t base = 0;
  uint64_t size = 0;    // requested (unrounded) bytes
  uint64_t stream = 0;  // the allocating stream (cudaStream_t as an integer)
  uint64_t pool_a = 0;  // MempoolId_t: {0, 0} is the default pool; graph captures use private ones
  uint64_t pool_b = 0;
  int device = 0;
  // Which allocation this is: blocks are numbered 1, 2, ... as they are recorded (ALLOC events and
  // seeds), so a type learnt when the map's last serial was E holds for a block only if its
  // serial is <= E (the caching allocator gives one address to tensors of other types).
  uint64_t serial = 0;
};

// Whether a type learnt for the memory at a block when the map's last serial was `typed_at`
// still speaks for it: no block, or a block recorded no later. A block recorded since is a new
// tensor, whose type nothing has said yet.
inline bool type_outlives_block(uint64_t typed_at, const std::optional<TensorBlock>& block) {
  return !block || block->serial <= typed_at;
}

struct TensorBlockStats {
  std::size_t live = 0;      // blocks in the map now
  std::size_t segments = 0;  // segment ranges in the map now
  uint64_t allocs = 0;       // ALLOC events applied
  uint64_t frees = 0;        // FREE_COMPLETED events that removed a block
  uint64_t unknown_frees = 0;  // FREE_COMPLETED of a block we never saw (allocated before attach, or dropped)
  uint64_t replaced = 0;     // blocks removed because a newer block overlapped them (a free we missed)
  uint64_t dropped = 0;      // ALLOCs not recorded because the map was at its cap
  uint64_t seeded = 0;       // pre-existing blocks learnt at attach
  uint64_t seed_skipped = 0;  // seeds refused: overlapped a newer block or a free seen while seeding
};

class TensorBlockMap {
 public:
  // 2^18 blocks is ~25 MB of map nodes; real models keep 10^3-10^5 tensors alive.
  static constexpr std::size_t kDefaultCap = std::size_t{1} << 18;
  explicit TensorBlockMap(std::size_t cap = kDefaultCap) : cap_(cap) {}

  // One trace event (an nanscope_torch_action from torch_shim_abi.h). Never throws.
  void apply(int action, int device, uint64_t addr, uint64_t size, uint64_t stream, uint64_t pool_a,
             uint64_t pool_b) noexcept;

  // At the cap a new block is not recorded (counted as dropped): pointers into it find no
  // block, which the engine treats as "extent unknown", never as a neighbour's extent.
  // Entries it overlaps are still removed.
  void alloc(const TensorBlock& b);
  void free(uint64_t base, uint64_t size);
  // SEGMENT_FREE / SEGMENT_UNMAP: every block inside the range is gone with its memory.
  void release_range(uint64_t base, uint64_t size);
  void add_segment(uint64_t base, uint64_t size);

  // Seeding: blocks that were live before the tracker attached come from a snapshot taken
  // after attaching, so a block freed between the snapshot and its seed would come back
  // stale. Between begin_seed and end_seed every free is remembered (bounded), and a seed
  // that overlaps one, or overlaps a block the live events already recorded, is refused.
  void begin_seed();
  bool seed(const TensorBlock& b);
  void seed_segment(uint64_t base, uint64_t size);
  void end_seed();

  std::optional<AddressRange> block_of(uint64_t ptr) const;
  std::optional<TensorBlock> find(uint64_t ptr) const;
  // The caching-allocator segment (or mapped range of an expandable segment) holding ptr.
  std::optional<AddressRange> segment_of(uint64_t ptr) const;
  TensorBlockStats stats() const;
  // The serial of the last block recorded (0 before any): lock-free, read at each typed scan.
  uint64_t last_serial() const { return serial_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    uint64_t size, stream, pool_a, pool_b;
    int device;
    uint64_t serial;
  };
  void emplace_locked(const TensorBlock& b);  // numbers it
  using Blocks = std::map<uint64_t, Entry>;
  Blocks::const_iterator find_locked(uint64_t ptr) const;
  bool overlaps_locked(uint64_t base, uint64_t size) const;
  std::size_t erase_blocks_locked(uint64_t base, uint64_t size);
  void erase_segments_locked(uint64_t base, uint64_t size);
  void remember_free_locked(uint64_t base, uint64_t size, bool segment);
  bool seed_refused_locked(uint64_t base, uint64_t size, bool segment) const;

  static constexpr std::size_t kMaxTombstones = 4096;
  const std::size_t cap_;
  mutable Ranked<std::shared_mutex, LockLevel::container> mu_{"TensorBlocks::mu_"};
  Blocks blocks_;
  std::map<uint64_t, uint64_t> segments_;  // base -> size; trimmed, never overlapping
  bool seeding_ = false;
  bool seed_poisoned_ = false;  // more frees while seeding than we remember: refuse all seeds
  struct Tombstone {
    uint64_t base, end;
    bool segment;  // a segment release; a block free does not make its segment stale
  };
  std::vector<Tombstone> tombstones_;
  TensorBlockStats counts_;
  std::atomic<uint64_t> serial_{0};  // written under mu_
};

}  // namespace nanscope

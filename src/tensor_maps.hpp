// Tensor maps (CUtensorMap, the 128-byte TMA descriptors a Hopper kernel takes by value instead of
// a pointer) told by what their encoding was given: cuTensorMapEncodeTiled's global address,
// element type, dimensions and strides, recorded at its exit (LaunchHooks) and found again by the
// map's own bytes when a launch passes them. The map's format is the driver's and undocumented,
// so nothing is read out of its bytes: a map nanscope did not see encoded is not known. XLA's
// Triton GEMMs with TMA (is_tma_allowed) take every operand and their output so (session 24: the
// transformer step's gemm_fusion_dot_37, three 128-byte parameters).
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include "lock_rank.hpp"

namespace nanscope {

inline constexpr size_t kTensorMapBytes = 128;

struct TensorMapFacts {
  uint64_t global_address = 0;
  uint32_t data_type = 0;  // CUtensorMapDataType
  uint32_t rank = 0;       // 1..5
  std::array<uint64_t, 5> dims{};     // elements per dimension, innermost first
  std::array<uint64_t, 4> strides{};  // bytes between rows of dimensions 1.. (dimension 0 is dense)
  // Bytes from the global address to one past the last element the map can address.
  uint64_t footprint_bytes() const;
};

// The element size of a CUtensorMapDataType, 0 for one not known here.
uint32_t tensor_map_element_bytes(uint32_t data_type);

// Bounded (kMax maps, the oldest forgotten first); any thread. Level 4 (container): calls nothing of ours that locks.
class TensorMapRegistry {
 public:
  static constexpr size_t kMax = 1u << 14;
  void on_encoded(std::span<const uint8_t, kTensorMapBytes> map, const TensorMapFacts& facts);
  // The facts of the map whose bytes are these, if it was seen encoded.
  std::optional<TensorMapFacts> find(const uint8_t* map) const;
  size_t size() const;

 private:
  using Bytes = std::array<uint8_t, kTensorMapBytes>;
  struct BytesHash {
    size_t operator()(const Bytes& b) const;
  };
  mutable Ranked<std::mutex, LockLevel::container> mu_{"TensorMapRegistry::mu_"};
  std::unordered_map<Bytes, TensorMapFacts, BytesHash> by_bytes_;  // under mu_
  std::deque<Bytes> order_;                                         // under mu_: oldest first
};

}  // namespace nanscope

// See tensor_maps.hpp.
#include "tensor_maps.hpp"

#include <cstring>
#include <iterator>

namespace nanscope {

uint32_t tensor_map_element_bytes(uint32_t data_type) {
  // CUtensorMapDataType (cuda.h): UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5,
  // FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9, FLOAT32_FTZ 10, TFLOAT32 11, TFLOAT32_FTZ 12.
  constexpr uint32_t kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return data_type < std::size(kBytes) ? kBytes[data_type] : 0;
}

uint64_t TensorMapFacts::footprint_bytes() const {
  const uint32_t elem = tensor_map_element_bytes(data_type);
  if (!elem || rank == 0 || rank > dims.size()) return 0;
  for (uint32_t d = 0; d < rank; ++d)
    if (!dims[d]) return 0;
  // The last element: (dims[0]-1) elements along the dense dimension, (dims[d]-1) rows along each
  // strided one.
  uint64_t last = (dims[0] - 1) * elem;
  for (uint32_t d = 1; d < rank; ++d) last += (dims[d] - 1) * strides[d - 1];
  return last + elem;
}

size_t TensorMapRegistry::BytesHash::operator()(const Bytes& b) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
  for (size_t i = 0; i < b.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, b.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

void TensorMapRegistry::on_encoded(std::span<const uint8_t, kTensorMapBytes> map, const TensorMapFacts& facts) {
  Bytes key;
  std::memcpy(key.data(), map.data(), key.size());
  std::lock_guard lock(mu_);
  const auto [it, added] = by_bytes_.insert_or_assign(key, facts);
  if (!added) return;  // the same map encoded again: one entry
  order_.push_back(key);
  if (order_.size() > kMax) {
    by_bytes_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<TensorMapFacts> TensorMapRegistry::find(const uint8_t* map) const {
  if (!map) return std::nullopt;
  Bytes key;
  std::memcpy(key.data(), map, key.size());
  std::lock_guard lock(mu_);
  const auto it = by_bytes_.find(key);
  if (it == by_bytes_.end()) return std::nullopt;
  return it->second;
}

size_t TensorMapRegistry::size() const {
  std::lock_guard lock(mu_);
  return by_bytes_.size();
}

}  // namespace nanscope

#include "set_pattern.hpp"

#include <algorithm>
#include <array>

namespace nanscope {

namespace {

// Exponent bits all ones: infinity or NaN (f8e4m3fn: only S.1111.111 is NaN, it has no infinity).
struct Special {
  uint32_t bytes;
  uint64_t mask;  // the bits that, all set, make the value non-finite
};
constexpr std::array<Special, 6> kSpecials{{{8, 0x7ff0000000000000ull},  // f64
                                            {4, 0x7f800000u},            // f32
                                            {2, 0x7c00u},                // f16
                                            {2, 0x7f80u},                // bf16
                                            {1, 0x7fu},                  // f8e4m3fn (NaN only)
                                            {1, 0x7cu}}};                // f8e5m2

}  // namespace

bool set_pattern_finite(uint32_t value, uint32_t element_bytes) {
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4) return false;
  // Sixteen bytes of the repeated pattern (little-endian: the value's low byte first) hold every
  // read of up to 8 bytes at every phase of the pattern.
  std::array<uint8_t, 16> bytes{};
  for (uint32_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * (i % element_bytes)));
  for (const Special& s : kSpecials) {
    for (uint32_t phase = 0; phase < element_bytes; ++phase) {
      uint64_t v = 0;
      for (uint32_t b = 0; b < s.bytes; ++b) v |= uint64_t{bytes[phase + b]} << (8 * b);
      if ((v & s.mask) == s.mask) return false;
    }
  }
  return true;
}

DType set_pattern_scan_dtype(uint32_t element_bytes) {
  switch (element_bytes) {
    case 4: return DType::f32;
    case 2: return DType::f16;
    default: return DType::f8e4m3;
  }
}

std::optional<SetScan> set_scan(uint64_t dst, uint32_t value, uint32_t element_bytes, uint64_t width, uint64_t height,
                                uint64_t pitch, uint64_t max_scan_bytes) {
  if (!set_pattern_finite(value, element_bytes) || height == 0) return std::nullopt;
  const uint64_t row = width * element_bytes;
  if (height > 1 && pitch != row) return std::nullopt;  // rows with gaps: the gaps were not set
  uint64_t bytes = row * height;
  if (max_scan_bytes) bytes = std::min(bytes, max_scan_bytes);
  const DType dt = set_pattern_scan_dtype(element_bytes);
  if (bytes < dtype_size(dt)) return std::nullopt;
  return SetScan{dst, bytes / dtype_size(dt), dt};
}

CopyJudgement judge_copy(bool is_set, uint32_t set_value, uint32_t set_width, bool typed_buffer, bool in_pool,
                         bool in_library_call, bool typed_source) {
  if (typed_buffer && !in_pool) return CopyJudgement::rescan_typed;
  if (typed_source) return CopyJudgement::rescan_as_source;
  if (is_set && !in_library_call && set_pattern_finite(set_value, set_width)) return CopyJudgement::scan_set;
  return CopyJudgement::forget;
}

}  // namespace nanscope

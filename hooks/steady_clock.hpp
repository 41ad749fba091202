// Monotonic nanoseconds, for the engine's own timing (held scans' age, throttled polls, the debug
// host profile).
#pragma once
#include <chrono>
#include <cstdint>

namespace nanscope {

inline uint64_t steady_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace nanscope

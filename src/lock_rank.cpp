#include "lock_rank.hpp"

#include <cstdio>
#include <cstdlib>

namespace nanscope::lock_rank {

const HeldLocks::Held* HeldLocks::conflict(LockLevel level) const {
  for (uint32_t i = 0; i < depth_; ++i)
    if (held_[i].level >= level) return &held_[i];
  return nullptr;
}

bool HeldLocks::push(const void* lock, const char* name, LockLevel level) {
  if (depth_ == kMax) return false;
  held_[depth_++] = Held{lock, name, level};
  return true;
}

void HeldLocks::pop(const void* lock) {
  for (uint32_t i = depth_; i-- > 0;) {
    if (held_[i].lock != lock) continue;
    for (uint32_t j = i + 1; j < depth_; ++j) held_[j - 1] = held_[j];
    --depth_;
    return;
  }
}

HeldLocks& this_thread() {
  thread_local HeldLocks held;
  return held;
}

void report_violation(const HeldLocks::Held& held, const char* taking, LockLevel level) {
  std::fprintf(stderr,
               "nanscope: lock order violated: taking %s (level %d) while holding %s (level %d); "
               "hooks/engine.hpp states the order\n",
               taking ? taking : "?", static_cast<int>(level), held.name ? held.name : "?",
               static_cast<int>(held.level));
  std::abort();
}

}  // namespace nanscope::lock_rank

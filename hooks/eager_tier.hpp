// The sentinel tier in eager mode (docs/sentinel.md#in-eager-mode): which eager launches are
// scanned. The launch path asks (EagerTier::should_scan), the drain tells a fault (on_fault):
// every launch of the next window is scanned, so a NaN that recurs (the next training step, the
// next decode step) gets its full lineage. A launch left out costs nothing more: what it wrote is
// never judged, so a finding outside a window claims no origin (the reporter marks it a
// sentinel's: in_window), and when a window opens the reporter forgets every buffer's state, so
// the window's first readers scan their inputs before anything in it claims `introduced`. (The
// first design noted each left-out launch as an opaque writer instead: on the H200 that made
// the sample dearer than scanning, 17.97 ms against full's 8.24 per Llama forward, session 21.)
#pragma once
#include <cstdint>
#include <mutex>

#include "config.hpp"
#include "lock_rank.hpp"
#include "sentinel.hpp"

namespace nanscope {

// The sample, as data: every `period`-th launch and the first launch of each kernel (up to
// `max_kernels` kernels), and every launch of the `window` launches after a fault.
struct EagerSamplePolicy {
  uint32_t period = 64;
  uint64_t window = 4096;
  uint32_t max_kernels = 1u << 14;
};

class EagerTier {
 public:
  explicit EagerTier(const Config& cfg, EagerSamplePolicy policy = {})
      : on_(cfg.tier == Tier::sentinel), sample_(policy.period, policy.window, policy.max_kernels) {}

  bool on() const { return on_; }
  // `always`: a launch that writes a watch or matches a rule.
  bool should_scan(uint64_t launch_id, uint32_t kernel_id, bool always) {
    std::lock_guard lock(mu_);
    return sample_.should_scan(launch_id, kernel_id, always);
  }
  // A fault was drained from an eager launch; `next_launch_id`: the id the next launch gets.
  // True when a window opened (the caller then forgets every buffer's state).
  bool on_fault(uint64_t next_launch_id) {
    if (!on_) return false;
    std::lock_guard lock(mu_);
    return sample_.on_hit(next_launch_id);
  }
  // An eager finding of launch `launch_id` has a lineage only when the launch was in a window.
  bool in_window(uint64_t launch_id) {
    std::lock_guard lock(mu_);
    return sample_.in_window(launch_id);
  }

 private:
  const bool on_;
  Ranked<std::mutex, LockLevel::part> mu_{"EagerTier::mu_"};  // the sample only; calls nothing
  sentinel::EagerSample sample_;
};

}  // namespace nanscope

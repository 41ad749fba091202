// NANSCOPE_LEVEL=debug: where the launch path's host time goes, part by part, said once at exit
// (ScanSubmitter::log_host_profile). Each call of a part over kSlowCallNs (a first sight asking the
// driver for a layout, a stall) is counted apart, so one slow first sight does not hide in the
// part's mean. Off (`on` false), no clock is read.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "steady_clock.hpp"

namespace nanscope {

struct HostProfile {
  static constexpr uint64_t kSlowCallNs = 100'000;
  struct Site {  // calls and their time, those over kSlowCallNs apart
    std::atomic<uint64_t> calls{0}, ns{0}, slow{0}, slow_ns{0};
    void add(uint64_t dt) {
      (dt > kSlowCallNs ? slow : calls).fetch_add(1, std::memory_order_relaxed);
      (dt > kSlowCallNs ? slow_ns : ns).fetch_add(dt, std::memory_order_relaxed);
    }
  };
  // The parts of the two sites, each in the order a call passes them (kPartNames).
  enum class Part : uint8_t {
    // The exit site of every launch: before the launch is looked at,
    torch_watch, kernel_lookup, library_claim, autotuning_check,
    // a launch not looked at (library, opaque, excluded): its count, then noting its possible writes,
    coverage_count, opaque_words, opaque_python, opaque_notes,
    // a launch looked at: its decode and task, the initial scans of its inputs (with its count,
    // and a refused decode's opaque notes when it has none), its findings' facts (the Python
    // line), its scan.
    build, initial_scans, facts, submit,
    // The enter site while scans are held: the kernel, the launch's write model, the flush check
    // with the held scans' launches.
    enter_lookup, enter_model, enter_flush,
    kCount
  };
  bool on = false;
  Site exit, enter, not_looked_at;  // whole sites; not_looked_at: of the exit site
  std::array<Site, static_cast<size_t>(Part::kCount)> parts;
  Site& part(Part p) { return parts[static_cast<size_t>(p)]; }
  const Site& part(Part p) const { return parts[static_cast<size_t>(p)]; }
  // The debug lines: each site that ran, then each site's parts that ran ("exit site parts:
  // kernel lookup 0.41 us each (2086), plus 1 over 100 us taking 0.2 ms; ..."). Empty when off.
  std::vector<std::string> lines() const;
};

// One call's laps through its parts: each lap adds the time since the previous lap (or the
// clock's start) to a part.
class PartClock {
 public:
  explicit PartClock(HostProfile& p) : p_(p), last_(p.on ? steady_now_ns() : 0) {}
  void lap(HostProfile::Part part) {
    if (!p_.on) return;
    const uint64_t now = steady_now_ns();
    p_.part(part).add(now - last_);
    last_ = now;
  }
  // The time since the last lap belongs to no part (an early return's own bookkeeping).
  void skip() {
    if (p_.on) last_ = steady_now_ns();
  }

 private:
  HostProfile& p_;
  uint64_t last_;
};

// Adds the time since construction to `site` when profiling.
struct SiteTimer {
  bool on;
  HostProfile::Site& site;
  uint64_t t0 = on ? steady_now_ns() : 0;
  ~SiteTimer() {
    if (on) site.add(steady_now_ns() - t0);
  }
};

}  // namespace nanscope

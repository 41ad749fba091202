// Host time of a sequence of passes, for one debug line: where a graph's instantiate time goes
// (issue 37 item 2: instantiating a 1,000-node graph cost 3.7x plain, 17x with merged scans, and
// no log said which pass). Off (`on` false), it reads no clock and says nothing.
#pragma once
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace nanscope {

struct Lap {
  std::string_view name;  // a literal: the pass
  double ms = 0;
};

// "scan nodes 1.20 ms, overlap 3.40 ms; 4.60 ms in all" (no laps: "no pass ran").
inline std::string format_laps(const std::vector<Lap>& laps) {
  if (laps.empty()) return "no pass ran";
  std::string out;
  double total = 0;
  for (const Lap& l : laps) {
    out += fmt::format("{}{} {:.2f} ms", out.empty() ? "" : ", ", l.name, l.ms);
    total += l.ms;
  }
  return out + fmt::format("; {:.2f} ms in all", total);
}

class PassClock {
 public:
  explicit PassClock(bool on) : on_(on) {
    if (on_) last_ = std::chrono::steady_clock::now();
  }
  // The pass that ended now: the time since the last lap (or since the clock started).
  void lap(std::string_view name) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    laps_.push_back({name, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }
  bool on() const { return on_; }
  std::string summary() const { return format_laps(laps_); }

 private:
  bool on_;
  std::chrono::steady_clock::time_point last_{};
  std::vector<Lap> laps_;
};

}  // namespace nanscope

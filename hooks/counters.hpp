// What every part of the engine counts (the summary's and nanscope_get_stats' figures) and the
// warnings said once per process. Counters are relaxed atomics: each part adds to its own.
#pragma once
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "config.hpp"
#include "coverage.hpp"
#include "event_log.hpp"

namespace nanscope {

struct Counters {
  std::atomic<uint64_t> launches{0}, scans{0}, findings{0}, dropped{0};
  std::atomic<uint64_t> nan{0}, pos_inf{0}, neg_inf{0};
  std::atomic<uint64_t> rescans_unchanged{0};  // host-side count; the device counts the quiet ones
  std::atomic<uint64_t> scans_overlapped{0};       // graph scan nodes moved off the critical path
  std::atomic<uint64_t> scans_merged{0};       // graph scan nodes folded into merged ones
  std::atomic<uint64_t> edges_programmatic{0}; // graph edges around read-only scans made programmatic
  std::atomic<uint64_t> eager_batched{0};      // eager scans launched with others in one grouped launch
  std::atomic<uint64_t> eager_group_launches{0};  // those grouped launches
  Coverage coverage;                           // launches by how they were inspected (summary)
};

// Logs `message` (console and a `warning` event with `what`) the first time `what` is warned
// about in this process (EventLog's registry: one per schema::Once, wherever it is said from).
void warn_once(EventLog& log, schema::Once what, const std::string& message);

std::string error_name(CUresult r);  // the driver's name for `r`, for messages

// A scan that could not be launched or added to a graph: counted as dropped, said once per kind.
// Shared by the stream launches and the graph instrumentation.
class ScanFailures {
 public:
  ScanFailures(const Config& cfg, EventLog& log, Counters& counters) : cfg_(cfg), log_(log), counters_(counters) {}
  void report(CUresult r, bool captured);

 private:
  const Config& cfg_;
  EventLog& log_;
  Counters& counters_;
};

}  // namespace nanscope

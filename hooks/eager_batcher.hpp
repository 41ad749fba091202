// Eager scans held per stream and launched together (NANSCOPE_EAGER_BATCH, docs/architecture.md):
// a plain scan of an eager launch waits on its stream until a driver call needs it to have run
// (src/eager_batch.hpp decides which), then the scans held there go as one launch of the merged
// scan kernel (nanscope_scan_grouped), which publishes its launches in order: the NaN-origin
// state words see the same sequence as with one scan per launch.
#pragma once
#include "lock_rank.hpp"
#include <cuda.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "context_state.hpp"
#include "counters.hpp"
#include "eager_batch.hpp"
#include "host_profile.hpp"

namespace nanscope {

class EagerBatcher {
 public:
  EagerBatcher(const eager::Limits& limits, Counters& counters, ScanFailures& failures)
      : limits_(limits), counters_(counters), failures_(failures) {}

  // The key of a stream: the legacy stream's two handles are one stream.
  static uint64_t stream_key(CUstream s);
  static bool legacy(CUstream s) { return stream_key(s) == 0; }
  // A scan that may wait: plain (no rows, no fix), on a stream every thread names alike (the
  // per-thread default stream is another stream on each thread, so it is never held).
  static bool holdable(const nanscope_scan_task& task, CUstream stream);

  bool holding() const { return held_count_.load(std::memory_order_acquire) != 0; }
  // Holds the plain scan `task` on `stream` (`reads`: what it reads, GraphInstrumenter::scan_reads);
  // what the stream held goes first when the new one does not fit or waited too long. False (and
  // nothing held) when holding does not pay on that stream now (eager::HoldGate): the caller
  // launches the scan itself.
  bool hold(ContextState& cs, CUstream stream, const nanscope_scan_task& task, const std::vector<eager::Range>& reads,
            uint64_t now_ns);
  // [lowest, highest) of every held scan's reads (empty when none is held).
  eager::Range held_hull();
  // Launches the held scans that must run before `e` happens.
  void on_event(const eager::Event& e);
  // Launches everything held in `ctx` (null: every context); `wait`: and waits for those streams
  // (teardown and exit, so the last drain sees them).
  void flush_context(CUcontext ctx, bool wait);
  // NANSCOPE_LEVEL=debug: count each flush by its reason and time the group launches.
  void profile(bool on) { profile_.on = on; }
  // "flushes: overwrite 12, full 3, ...; group launch 2.10 us each (15)", empty when off or none.
  std::string profile_line() const;

 private:
  struct Held {
    ContextState* cs = nullptr;
    CUstream stream = nullptr;
    eager::Pending model;
    nanscope_scan_group group{};
  };
  void launch(Held& h, eager::Flush why);  // mu_ held: the launch must precede what the caller does next
  Held* find(ContextState& cs, uint64_t key);
  struct Gate {
    const ContextState* cs = nullptr;
    uint64_t stream = 0;
    eager::HoldGate gate;
  };
  eager::HoldGate& gate(const ContextState& cs, uint64_t key);  // mu_ held
  void forget_empty();  // mu_ held

  const eager::Limits limits_;
  Counters& counters_;
  ScanFailures& failures_;
  Ranked<std::mutex, LockLevel::contexts> mu_{"EagerBatcher::mu_"};
  std::vector<Held> held_;  // one entry per stream that held scans (few)
  std::vector<Gate> gates_;  // one per stream that held scans, the oldest dropped past kMaxGates
  std::atomic<uint32_t> held_count_{0};
  struct Profile {
    bool on = false;
    std::atomic<uint64_t> by_reason[static_cast<unsigned>(eager::Flush::age) + 1]{};
    std::atomic<uint64_t> launches{0}, launch_ns{0};
  } profile_;
};

}  // namespace nanscope

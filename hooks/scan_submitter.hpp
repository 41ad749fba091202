// One scan task onto the app's stream: the capture check, then a captured scan becomes the next
// graph node, an eager one is held (NANSCOPE_EAGER_BATCH, hooks/eager_batcher.*) or launched in
// line; the initial scans a task's plan queued before it; what its findings will need later (the
// candidates, the Python line, a collective: src/launch_facts.hpp). Kernel launches (LaunchInstrumenter), library calls
// (LibraryScans) and the eager flush points (EagerFlushPoints) all submit through this one part.
#pragma once
#include <cuda.h>

#include <atomic>
#include <string>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "eager_batcher.hpp"
#include "event_log.hpp"
#include "graph_instrumenter.hpp"
#include "host_profile.hpp"
#include "kernel_table.hpp"
#include "python_frames.hpp"
#include "task_builder.hpp"

namespace nanscope {

class ScanSubmitter {
 public:
  ScanSubmitter(const Config& cfg, GraphInstrumenter& graphs, Allocations& allocs, KernelTable& kernels,
                Counters& counters, ScanFailures& failures, PythonFrames& python, EventLog& log)
      : cfg_(cfg), graphs_(graphs), allocs_(allocs), kernels_(kernels), counters_(counters), failures_(failures),
        python_(python), log_(log),
        batch_(eager::Limits{cfg.eager_batch, 8, uint64_t{cfg.eager_batch_us} * 1000}, counters, failures) {
    profile_.on = log.debug_enabled();
    batch_.profile(profile_.on);
  }

  // Launches the scan of `task` on `stream` right after the app's work there; inside a stream
  // capture it becomes the next graph node; an eager plain scan may be held instead. `facts`,
  // what its findings will need (facts_of), are filed first, once the capture is known, and
  // the task carries their slot to its records.
  void submit(ContextState& cs, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes,
              LaunchFacts* facts = nullptr);
  // The initial scan of a buffer read before any scan judged it, right before its reader's scan.
  void submit_initial(ContextState& cs, const InitialScan& s, CUstream stream, uint32_t correlation);
  // A launch's facts for its findings: the scan's candidates and the launching thread's Python line.
  LaunchFacts facts_of(const nanscope_scan_task& task, const LaunchPlan& plan, const KernelInfo* k = nullptr);
  // The launching thread's Python line; says once when it cannot read one.
  // Where launch `k` came from (nullptr: a scan no kernel names): its own line when it knows one.
  uint64_t python_key(const KernelInfo* k);
  // The key of a line the launch itself names (an XLA launch's thunk: LaunchPlan::source).
  uint64_t python_key(const xla::SourceLine& line, bool with_op);

  // Held eager scans: whether they are on, the event of a driver call they may have to precede,
  // and everything held in `ctx` (null: every context) now; `wait`: and waited for.
  bool batching() const { return cfg_.eager_batch != 0; }
  EagerBatcher& batcher() { return batch_; }
  void on_event(eager::Event& e, CUstream stream);
  void flush_held(CUcontext ctx, bool wait) { batch_.flush_context(ctx, wait); }

  HostProfile& profile() { return profile_; }
  void log_host_profile();  // NANSCOPE_LEVEL=debug: the host time of the launch path, once, at exit

 private:
  // An eager scan: true when held; else what its stream held goes first, and the caller launches it.
  bool hold_eager(ContextState& cs, const nanscope_scan_task& task, CUstream stream);
  void file_facts(nanscope_scan_task& task, LaunchFacts& facts, bool captured);

  const Config& cfg_;
  GraphInstrumenter& graphs_;
  Allocations& allocs_;
  KernelTable& kernels_;
  Counters& counters_;
  ScanFailures& failures_;
  PythonFrames& python_;
  EventLog& log_;
  HostProfile profile_;
  EagerBatcher batch_;
};

}  // namespace nanscope

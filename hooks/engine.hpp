// The engine: one per process, shared by injection, LD_PRELOAD and linked use. It reads the
// configuration, opens the log, subscribes to CUPTI and wires the parts together; the parts do
// the work, each with its own state and lock (docs/architecture.md has the map):
//   Contexts, Allocations   per-context states and the driver allocations   (contexts.hpp)
//   Watches                 rules, API watches, the global padding spec      (watches.hpp)
//   TaskBuilder             launch -> scan task, through collectors          (task_builder.hpp)
//   ScanSubmitter           a scan task -> captured node, held or launched   (scan_submitter.hpp)
//   LaunchInstrumenter      stream launches and copies -> scan tasks         (launch_instrumenter.hpp)
//   LibraryScans            GEMM, cuDNN and NCCL calls -> scan tasks         (library_scans.hpp)
//   EagerFlushPoints        driver calls held eager scans must precede       (eager_flush_points.hpp)
//   EagerTier               the sentinel tier's sample of eager launches     (eager_tier.hpp)
//   GraphInstrumenter       graphs: scan nodes, updates, the tier; its        (graph_instrumenter.hpp)
//                           GraphRegistry (ids, nodes, execs) and             (graph_registry.hpp,
//                           GraphPlanner (overlap, merged, edges, sentinels)  graph_planner.hpp)
//   FindingReporter         drain -> findings -> log, dumps, abort, summary  (finding_reporter.hpp)
//
// Lock order. A thread holding a lock takes only locks of a later level, never one of its own
// level or an earlier one. Every lock is a std::mutex or std::shared_mutex with its owner,
// declared as Ranked<mutex, LockLevel> with its level and name (src/lock_rank.hpp): debug builds
// (and NANSCOPE_LOCK_RANKS=ON, as .ci/sanitize builds) abort naming both locks when the order is
// broken; release builds compile the checks out.
//   1. FindingReporter::drain_mu_       one drain at a time (drain thread, flush, exit, context
//                                        teardown); held over a whole drain.
//   2. Contexts::mu_                     shared to use a context (for_each holds it over a drain),
//                                        unique only to add or remove one;
//      EagerBatcher::mu_                 (owned by ScanSubmitter) held while it launches held
//                                        scans (ContextState's locks below). Never held together
//                                        with Contexts::mu_: get() returns before the batcher is
//                                        entered.
//   ScanSubmitter, LaunchInstrumenter, LibraryScans and EagerFlushPoints have no lock of their
//   own (LibraryScans' per-call facts are thread-local); they take the locks of the parts they
//   call, one at a time, never holding one across another part's call.
//   3. FindingReporter::lineage_mu_, KernelTable::mu_ (asks TritonModules' cache and XlaModules, level 4),
//      GraphRegistry::mu_ (its maps only: released before it calls out), EagerTier::mu_ (its
//      sample only), Watches::meta_mu_,
//      TaskBuilder::not_inspected_mu_, PythonFrames::mu_, TorchBlockTracker::info_mu_,
//      ContextState::bitmap_mu_ and captured_mu_.
//   4. The containers of src/, each with its own mutex, calling nothing that locks while held:
//      AllocMap, BufferSlots, LaunchFactsStore, OpaqueWriters, Coverage, CommTable, CudnnGraphs,
//      WatchRegistry, TensorBlocks, the Triton caches, XlaModules (reads dump files, asks the driver for names).
//   Apart: FindingReporter::wake_mu_ guards the drain thread's wake flag only; the got:: patch
//   walk's mutex (got_patch.cpp) is taken with no other lock held. The once-only warnings need
//   no lock (EventLog's flags are atomics). A fatal-signal flush only try-locks (emergency_flush).
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "cupti_loader.hpp"
#include "event_log.hpp"
#include "finding_reporter.hpp"
#include "graph_instrumenter.hpp"
#include "kernel_table.hpp"
#include "eager_flush_points.hpp"
#include "eager_tier.hpp"
#include "launch_instrumenter.hpp"
#include "library_scans.hpp"
#include "scan_submitter.hpp"
#include "triton_modules.hpp"
#include "xla_modules.hpp"
#include "nanscope/nanscope.h"
#include "padding.hpp"
#include "task_builder.hpp"
#include "watches.hpp"

namespace nanscope {

class Engine {
 public:
  static Engine* instance() { return instance_.load(std::memory_order_acquire); }
  // Idempotent. The first caller decides the attach mode that is reported.
  static nanscope_status_t init(nanscope_attach_t attach);

  // The parts the CUPTI callback dispatches to (hooks/cupti_dispatch.cpp).
  ScanSubmitter& scans() { return scans_; }
  LaunchInstrumenter& launches() { return launches_; }
  LibraryScans& library_scans() { return library_; }
  EagerFlushPoints& flush_points() { return flush_points_; }
  GraphInstrumenter& graphs() { return graphs_; }
  Allocations& allocations() { return allocs_; }
  TritonModules& modules() { return modules_; }
  // cuModuleUnload (enter site): what was known of its kernels goes with it.
  void on_module_unload(CUmodule module) {
    modules_.on_unload(module);
    xla_modules_.on_unload(module);
    kernels_.on_module_unload(module);
  }
  void on_context_destroy(CUcontext ctx);
  void on_callback_error(const std::string& message);  // something escaped a handler

  // Watches declared through the C API. Host-side only: usable before CUDA starts.
  uint32_t add_watch(WatchSpec spec) { return watches_.add(std::move(spec)); }
  bool remove_watch(uint32_t id) { return watches_.remove(id); }
  void set_global_padding(std::optional<PaddingSpec> spec) { watches_.set_global_padding(std::move(spec)); }
  // A line of generated Python code and where it came from (PythonFrames::note_generated_line);
  // why it was not kept, or empty.
  std::string note_generated_line(std::string_view generated_file, uint32_t generated_line, const char* traceback);

  void flush();
  void shutdown();                                          // at exit: held scans, last drain, closing repeats, summary
  void emergency_flush() { reporter_.emergency_flush(); }   // from a fatal signal: best effort, no joins
  void fill_stats(nanscope_stats_t& s) const;
  bool subscribed() const { return subscriber_ != nullptr; }

 private:
  explicit Engine(Config cfg);
  bool subscribe();
  void log_start(nanscope_attach_t attach, const std::vector<std::string>& config_errors);

  static std::atomic<Engine*> instance_;

  const Config cfg_;
  const uint64_t start_ns_;
  std::unique_ptr<EventLog> log_;
  Counters counters_;
  Watches watches_;
  TritonModules modules_;  // before kernels_, which asks it for Triton kernels' signatures
  XlaModules xla_modules_;  // before kernels_, which asks it for XLA kernels' dump modules
  KernelTable kernels_;
  Contexts contexts_;
  Allocations allocs_;
  ScanFailures failures_;
  PythonFrames python_;  // before scans_ and reporter_, which share it
  TaskBuilder tasks_;
  GraphInstrumenter graphs_;
  ScanSubmitter scans_;
  EagerTier eager_tier_;  // the sentinel tier's eager sample: asked by launches_, told by reporter_
  LaunchInstrumenter launches_;
  LibraryScans library_;
  EagerFlushPoints flush_points_;
  FindingReporter reporter_;
  CuptiLibrary cupti_;  // opened at init, before subscribe()
  CUpti_SubscriberHandle subscriber_ = nullptr;
};

void CUPTIAPI cupti_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data);

}  // namespace nanscope

// Stream launches: a kernel launch callback becomes a scan task (TaskBuilder) and one scan
// launch right after it on the app's stream; inside a stream capture the scan becomes the
// next graph node. Copies and memsets into tracked buffers are followed by a rescan.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include "config.hpp"
#include "gemm_extent.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "eager_batcher.hpp"
#include "graph_instrumenter.hpp"
#include "kernel_table.hpp"
#include "launch_params.hpp"
#include "python_frames.hpp"
#include "task_builder.hpp"
#include "watches.hpp"

#include <atomic>

namespace nanscope {

class LaunchInstrumenter {
 public:
  LaunchInstrumenter(const Config& cfg, TaskBuilder& tasks, GraphInstrumenter& graphs, Contexts& contexts,
                     Allocations& allocs, KernelTable& kernels, Counters& counters, ScanFailures& failures,
                     const Watches& watches, EventLog& log, PythonFrames& python)
      : cfg_(cfg), tasks_(tasks), graphs_(graphs), contexts_(contexts), allocs_(allocs), kernels_(kernels),
        counters_(counters), failures_(failures), watches_(watches), log_(log), python_(python),
        batch_(eager::Limits{cfg.eager_batch, 8, uint64_t{cfg.eager_batch_us} * 1000}, counters, failures) {}

  // API-exit site of a kernel launch.
  void on_launch(const CUpti_CallbackData& cb, CUpti_CallbackId cbid);
  // A copy or memset into a buffer whose state is tracked (NaN origin).
  void on_copy(const CopyArgs& c, const CUpti_CallbackData& cb);

  // Held eager scans (NANSCOPE_EAGER_BATCH, hooks/eager_batch_points.cpp): the enter sites of the calls
  // they must run before. A launch that may write what they read; a decoded copy or set; a free or
  // unmap (driver_hook free); a graph launch or a call of the stream-point table.
  void on_launch_enter(const CUpti_CallbackData& cb, CUpti_CallbackId cbid);
  void on_copy_enter(const CopyArgs& c);
  void on_free_enter(CUpti_CallbackId cbid, const void* params);
  void on_stream_call(CUstream stream, eager::Point point, eager::Range source = {});
  // Everything held in `ctx` (null: every context) goes now; `wait`: and is waited for.
  void flush_held(CUcontext ctx, bool wait) { batch_.flush_context(ctx, wait); }
  bool batching() const { return cfg_.eager_batch != 0; }
  // Library calls (library_scans.cpp): patch the GEMM imports and take their reports; again
  // when a module was loaded (a library may have arrived); a successful GEMM call's D.
  void start_library_calls();
  void on_module_loaded();
  void on_library_call(const GemmCall& c);

 private:
  // A kernel launched inside a library call belongs to it (its output is the call's D).
  bool inside_library_call(const KernelInfo& k, uint64_t launch_id, uint32_t correlation);
  void library_origin(const GemmCall& c, const GemmExtent& d, ContextState& cs, CUstream stream,
                      nanscope_scan_task& task, LaunchPlan& plan);
  void submit_scan(ContextState& cs, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes);
  // An eager scan: true when held (NANSCOPE_EAGER_BATCH); else what its stream held goes first,
  // and the caller launches it.
  bool hold_eager(ContextState& cs, const nanscope_scan_task& task, CUstream stream);
  void batch_event(eager::Event& e, CUstream stream);
  void submit_initial(ContextState& cs, const InitialScan& s, CUstream stream, uint32_t correlation);
  void note_opaque(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id, CUcontext ctx);
  // The scan's candidates and the launch's Python line, kept for the findings that need them.
  void remember_for_findings(const nanscope_scan_task& task, const LaunchPlan& plan);
  uint64_t python_key();  // the launching thread's Python line; says once when it cannot read one
  void watch_torch();
  uint64_t watched_scan(uint64_t dst, ContextState& cs, nanscope_scan_task& task, uint32_t pseudo);
  void note_copy_writer(const CopyArgs& c, ContextState& cs, uint32_t pseudo);
  void copy_origin(const CopyArgs& c, ContextState& cs, nanscope_scan_task& task);  // attaches to torch's allocator once it is there; says once if it cannot

  const Config& cfg_;
  TaskBuilder& tasks_;
  GraphInstrumenter& graphs_;
  Contexts& contexts_;
  Allocations& allocs_;
  KernelTable& kernels_;
  Counters& counters_;
  ScanFailures& failures_;
  const Watches& watches_;
  EventLog& log_;
  PythonFrames& python_;
  std::atomic<bool> warned_torch_{false};
  std::atomic<bool> warned_python_{false};
  std::atomic<bool> warned_extent_{false};
  std::atomic<bool> warned_copy_full_{false};
  EagerBatcher batch_;
};

}  // namespace nanscope

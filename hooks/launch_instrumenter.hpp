// Stream launches: a kernel launch callback becomes a scan task (TaskBuilder) and one scan
// launch right after it on the app's stream; inside a stream capture the scan becomes the
// next graph node. Copies and memsets into tracked buffers are followed by a rescan.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <chrono>

#include "config.hpp"
#include "cudnn_intercept.hpp"
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

namespace nccl {
struct CollectiveCall;
}

// An input of a library call whose state a scan of its output is judged from.
struct LibraryInput {
  uint64_t ptr = 0;
  DType dtype = DType::none;
  uint64_t elements = 0;
  bool decoded = false;  // false: an input nanscope cannot judge (its origin is then unknown)
  bool has_ref = false;  // its state slot was taken already (before an in-place call)
  uint32_t ref = 0;
};
// One buffer a library call wrote (or, for a send, read), scanned on the call's stream.
struct LibraryScan {
  const char* api = nullptr;
  uint64_t call_id = 0, stream = 0;
  uint64_t ptr = 0, elements = 0;
  DType dtype = DType::none;
  const char* refused = nullptr;                       // the layout is not decoded: why
  const char* outside = "buffer outside its allocation";  // the reason when it runs past its block
  const LibraryInput* inputs = nullptr;
  uint32_t input_count = 0;
  bool judge = true;           // false: look only (a sendbuff): no state word, no watch, no origin
  bool own_launch_id = false;  // a scan no kernel of the call names gets its own launch id
  bool count_call = true;      // counts the call in the coverage (a call's first output only)
};

class LaunchInstrumenter {
 public:
  LaunchInstrumenter(const Config& cfg, TaskBuilder& tasks, GraphInstrumenter& graphs, Contexts& contexts,
                     Allocations& allocs, KernelTable& kernels, Counters& counters, ScanFailures& failures,
                     const Watches& watches, EventLog& log, PythonFrames& python)
      : cfg_(cfg), tasks_(tasks), graphs_(graphs), contexts_(contexts), allocs_(allocs), kernels_(kernels),
        counters_(counters), failures_(failures), watches_(watches), log_(log), python_(python),
        batch_(eager::Limits{cfg.eager_batch, 8, uint64_t{cfg.eager_batch_us} * 1000}, counters, failures) {
    profile_.on = log.debug_enabled();
    batch_.profile(profile_.on);
  }

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
  void log_host_profile();  // NANSCOPE_LEVEL=debug: the host time of the launch path, once, at exit
  bool batching() const { return cfg_.eager_batch != 0; }
  // Library calls (library_scans.cpp): patch the GEMM, cuDNN and NCCL imports and take their
  // reports; again when a module was loaded (a library may have arrived); a successful GEMM
  // call's D; a successful cudnnBackendExecute's graph outputs (cudnn_scans.cpp).
  void start_library_calls();
  void on_module_loaded();
  void on_library_call(const GemmCall& c);
  void on_cudnn_call(const cudnn::CudnnCall& c);
  // NCCL collectives (collective_scans.cpp): sendbuff's state before the call; the scan of
  // recvbuff (or a send's sendbuff) once the call's kernels are enqueued.
  void before_collective(nccl::CollectiveCall& c);
  void on_collective(const nccl::CollectiveCall& c);

 private:
  // A kernel launched inside a library call belongs to it (its output is the call's D).
  bool inside_library_call(const KernelInfo& k, uint64_t launch_id, uint32_t correlation, CUstream stream);
  struct LibraryScanned {
    uint64_t launch_id = 0;  // 0: not scanned
    bool captured = false;
  };
  LibraryScanned scan_library_output(const LibraryScan& s);
  void library_origin(const LibraryScan& s, ContextState& cs, CUstream stream, nanscope_scan_task& task,
                      LaunchPlan& plan);
  void submit_scan(ContextState& cs, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes);
  // An eager scan: true when held (NANSCOPE_EAGER_BATCH); else what its stream held goes first,
  // and the caller launches it.
  bool hold_eager(ContextState& cs, const nanscope_scan_task& task, CUstream stream);
  bool known_launch_writes(const KernelInfo& k, const LaunchArgs& a, std::vector<eager::Range>& out);
  void batch_event(eager::Event& e, CUstream stream);
  void submit_initial(ContextState& cs, const InitialScan& s, CUstream stream, uint32_t correlation);
  void note_opaque(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id, CUcontext ctx);
  static void note_judged_inputs(ContextState& cs, const std::vector<uint64_t>& words, OpaqueWrite& writer);
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
  // NANSCOPE_LEVEL=debug: where a scanned launch's host time goes (said once, at exit).
  struct HostProfile {
    static constexpr uint64_t kSlowCallNs = 100'000;  // a first sight or a driver stall, counted apart
    bool on = false;
    std::atomic<uint64_t> scanned{0}, build_ns{0}, submit_ns{0}, findings_ns{0};
    // The enter site in parts (kernel lookup, write model, flush decision with its launches), the
    // slow ones apart (a kernel's first sight asks the driver for its layout), and the whole exit
    // site of every launch.
    struct Site {  // calls and their time, those over kSlowCallNs apart
      std::atomic<uint64_t> calls{0}, ns{0}, slow{0}, slow_ns{0};
      void add(uint64_t dt) {
        (dt > kSlowCallNs ? slow : calls).fetch_add(1, std::memory_order_relaxed);
        (dt > kSlowCallNs ? slow_ns : ns).fetch_add(dt, std::memory_order_relaxed);
      }
    };
    Site enter, exit;
    std::atomic<uint64_t> enter_resolve_ns{0}, enter_model_ns{0}, enter_event_ns{0};
  } profile_;
  EagerBatcher batch_;
};

}  // namespace nanscope

// Library calls (docs/library-calls.md, docs/multi-gpu.md): each buffer a cuBLAS / cuBLASLt GEMM,
// a cuDNN backend graph or an NCCL collective wrote is scanned once on the call's stream after the
// call returned, through ScanSubmitter (library_scans.cpp, cudnn_scans.cpp, collective_scans.cpp).
#pragma once
#include <cuda.h>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "cudnn_intercept.hpp"
#include "event_log.hpp"
#include "gemm_intercept.hpp"
#include "graph_instrumenter.hpp"
#include "kernel_table.hpp"
#include "scan_submitter.hpp"
#include "task_builder.hpp"

namespace nanscope {

namespace nccl {
struct CollectiveCall;
}

// Why a library call XLA makes while it autotunes (KernelTable::autotuning_on_this_thread) is not
// scanned: its output is the autotuner's scratch, and a NaN there is no finding of the program's.
inline constexpr const char* kXlaAutotuning = "XLA's autotuning: a candidate run while XLA compiles";

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
  const CollectiveFacts* collective = nullptr;  // an NCCL collective's buffer: filed for its findings
};

class LibraryScans {
 public:
  LibraryScans(const Config& cfg, ScanSubmitter& scans, TaskBuilder& tasks, GraphInstrumenter& graphs,
               Contexts& contexts, Allocations& allocs, KernelTable& kernels, Counters& counters, EventLog& log)
      : cfg_(cfg), scans_(scans), tasks_(tasks), graphs_(graphs), contexts_(contexts), allocs_(allocs),
        kernels_(kernels), counters_(counters), log_(log) {}

  // Patch the GEMM, cuDNN and NCCL imports and take their reports; again when a module was loaded
  // (a library may have arrived).
  void start();
  void on_module_loaded();
  // A kernel launched inside a library call belongs to it (its output is the call's D): true, and
  // the call's scan is named after the last such kernel of the thread. Called by the launch path.
  static bool claim_kernel(const KernelInfo& k, uint64_t launch_id, uint32_t correlation, CUstream stream);
  // A successful GEMM call's D; a successful cudnnBackendExecute's graph outputs (cudnn_scans.cpp).
  void on_gemm_call(const GemmCall& c);
  void on_cudnn_call(const cudnn::CudnnCall& c);
  // NCCL collectives (collective_scans.cpp): sendbuff's state before the call; the scan of
  // recvbuff (or a send's sendbuff) once the call's kernels are enqueued.
  void before_collective(nccl::CollectiveCall& c);
  void on_collective(const nccl::CollectiveCall& c);

 private:
  uint64_t scan_output(const LibraryScan& s);  // the scan's launch id; 0: not scanned
  void origin(const LibraryScan& s, ContextState& cs, CUstream stream, nanscope_scan_task& task, LaunchPlan& plan);

  const Config& cfg_;
  ScanSubmitter& scans_;
  TaskBuilder& tasks_;
  GraphInstrumenter& graphs_;
  Contexts& contexts_;
  Allocations& allocs_;
  KernelTable& kernels_;
  Counters& counters_;
  EventLog& log_;
};

}  // namespace nanscope

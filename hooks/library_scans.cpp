// Library calls (docs/library-calls.md, docs/multi-gpu.md): the kernels a cuBLAS / cuBLASLt GEMM,
// a cuDNN graph (hooks/cudnn_intercept.*, cudnn_scans.cpp) or an NCCL collective
// (collective_scans.cpp) launches belong to it, and each buffer it wrote (D, the graph's outputs,
// recvbuff) is scanned once on the call's stream after the call returned, so after its last kernel
// (split-K's workspace passes and reduction included) by stream order, captured as the next node
// under stream capture. The scan is named after the call's last kernel; the call's inputs (A and
// B, a graph's read tensors, sendbuff) are its tracked inputs, so a non-finite output out of
// finite inputs is `introduced` there.
#include <fmt/format.h>

#include "cudnn_intercept.hpp"
#include "dlsym_intercept.hpp"
#include "gemm_intercept.hpp"
#include "library_scans.hpp"
#include "nccl_intercept.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

// The last kernel the current thread launched inside a library call: the scan of its output is
// named after it (plain thread-local data: no TLS constructor).
struct CallKernel {
  uint64_t call_id;
  uint32_t kernel_id;
  uint64_t launch_id;
  uint32_t correlation;
};
thread_local CallKernel t_last_kernel;

// The kernel nodes the current thread's library call captured so far (a call under stream
// capture): the planner learns what they only read (GraphInstrumenter::remember_library_io).
struct CallNodes {
  uint64_t call_id = 0;
  std::vector<CUgraphNode> nodes;
};
thread_local CallNodes t_call_nodes;

void gemm_sink(void* self, const GemmCall& call) { static_cast<LibraryScans*>(self)->on_gemm_call(call); }
void cudnn_sink(void* self, const cudnn::CudnnCall& call) { static_cast<LibraryScans*>(self)->on_cudnn_call(call); }
void collective_before(void* self, nccl::CollectiveCall& call) {
  static_cast<LibraryScans*>(self)->before_collective(call);
}
void collective_after(void* self, const nccl::CollectiveCall& call) {
  static_cast<LibraryScans*>(self)->on_collective(call);
}

LibraryInput gemm_input(uint64_t ptr, const GemmExtent& x) {
  return {ptr, x.dtype, x.written, ptr && x.ok && x.contiguous, false, 0};
}

void log_patched(EventLog& log, const got::Report& r, const char* what) {
  if (r.walked && r.patched)
    log.info(fmt::format("library calls: {} {} import slots patched in {} loaded objects", r.patched, what, r.objects));
}

}  // namespace

void LibraryScans::start() {
  gemm::set_gemm_sink(gemm_sink, this);
  cudnn::set_cudnn_sink(cudnn_sink, this);
  nccl::set_collective_sink(new nccl::CollectiveSink{collective_before, collective_after, this});  // lives on
  on_module_loaded();
}

void LibraryScans::on_module_loaded() {
  log_patched(log_, gemm::patch_all(), "GEMM");
  log_patched(log_, cudnn::patch_all(), "cuDNN backend");
  log_patched(log_, nccl::patch_all(), "NCCL");
  // Last: a program that looks the functions up (XLA) then gets the wrappers, and their originals
  // are those the importers patched above call.
  log_patched(log_, dlsym_hook::patch_all(), "dlsym");
}

bool LibraryScans::claim_kernel(const KernelInfo& k, uint64_t launch_id, uint32_t correlation, CUstream stream) {
  const uint64_t call = libcall::note_kernel_launch();
  if (!call) return false;
  t_last_kernel = {call, k.id, launch_id, correlation};
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUgraphNode* deps = nullptr;
  size_t ndeps = 0;
  if (cuStreamGetCaptureInfo(stream, &capture, nullptr, nullptr, &deps, nullptr, &ndeps) == CUDA_SUCCESS &&
      capture == CU_STREAM_CAPTURE_STATUS_ACTIVE && ndeps == 1) {
    if (t_call_nodes.call_id != call) t_call_nodes.call_id = call, t_call_nodes.nodes.clear();
    t_call_nodes.nodes.push_back(deps[0]);  // the kernel node this launch just became
  }
  return true;
}

void LibraryScans::on_gemm_call(const GemmCall& c) {
  ToolScope scope;
  const GemmExtent e = gemm_extent(c);
  LibraryScan s;
  s.api = c.api, s.call_id = c.call_id, s.stream = c.stream, s.outside = "D outside its allocation";
  s.ptr = c.d_ptr, s.dtype = e.dtype, s.elements = e.ok ? e.written : 0;
  s.refused = kernels_.autotuning_on_this_thread() ? kXlaAutotuning : !e.ok ? e.why : !e.contiguous ? "D not contiguous" : nullptr;
  LibraryInput inputs[3];
  inputs[s.input_count++] = gemm_input(c.a.ptr, operand_extent(c.a));
  inputs[s.input_count++] = gemm_input(c.b.ptr, operand_extent(c.b));
  if (c.c_ptr && !c.c_is_d) inputs[s.input_count++] = gemm_input(c.c_ptr, e);  // C, read in D's layout
  s.inputs = inputs;
  scan_output(s);
}

// The shared part of every library call's scan of one buffer: the checks, the coverage count
// (once per call: `count_call`), the task, its origin inputs and the scan on the call's stream.
// The scan's facts for its findings are filed with it (a collective's among them). Returns the
// scan's launch id; 0 when nothing was scanned.
uint64_t LibraryScans::scan_output(const LibraryScan& s) {
  const uint64_t bytes = s.refused ? 0 : s.elements * dtype_size(s.dtype);
  if (t_call_nodes.call_id == s.call_id && !t_call_nodes.nodes.empty()) {
    std::vector<uint64_t> reads;
    for (uint32_t i = 0; i < s.input_count; ++i) reads.push_back(s.inputs[i].ptr);
    // An output of unknown extent is taken as one byte, only to tell an in-place input from
    // the rest: its pointer stays a write to the end of its allocation.
    const bool exact = !s.refused && bytes && allocs_.holds(s.ptr, bytes);
    graphs_.remember_library_io(t_call_nodes.nodes, reads, {s.ptr, s.ptr + std::max<uint64_t>(bytes, 1)}, exact);
  }
  const char* refused = s.refused;
  if (!refused && !allocs_.holds(s.ptr, bytes)) refused = s.outside;
  CUcontext ctx = nullptr;
  ContextState* cs = !refused && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx ? contexts_.get(ctx) : nullptr;
  if (!refused && !cs) refused = "no context";
  if (s.count_call) counters_.coverage.on_library_call(s.api, refused);
  if (refused) return 0;
  const bool named = t_last_kernel.call_id == s.call_id;
  const uint32_t kernel_id = named ? t_last_kernel.kernel_id : kernels_.pseudo(s.api);
  nanscope_scan_task task{};
  // A watched output keeps its watch (name, padding rows, verdict, the fix), as a kernel's would.
  uint64_t max_bytes = s.judge ? tasks_.watched_scan(s.ptr, *cs, task, kernel_id) : 0;
  if (!max_bytes) {
    task.buffers[0] = {s.ptr, s.elements, static_cast<uint32_t>(s.dtype), kCopyArg};
    task.buffer_count = 1;
    max_bytes = bytes;
  }
  task.kernel_id = kernel_id;
  task.launch_id = named ? t_last_kernel.launch_id
                         : s.own_launch_id ? counters_.launches.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
  task.correlation_id = named ? t_last_kernel.correlation : 0;
  const auto stream = reinterpret_cast<CUstream>(s.stream);
  task.stream = s.stream;
  LaunchPlan plan;
  if (s.judge && cfg_.origin && cs->buffer_states()) origin(s, *cs, stream, task, plan);
  for (uint32_t i = 0; i < plan.initial_count; ++i) scans_.submit_initial(*cs, plan.initial[i], stream, task.correlation_id);
  counters_.coverage.on_extra_scan(bytes);
  LaunchFacts facts;  // for its findings; none for a scan no launch names (nothing files empty facts)
  if (task.launch_id) {
    facts = scans_.facts_of(task, plan);
    if (s.collective) facts.collective = *s.collective;
  }
  scans_.submit(*cs, task, stream, max_bytes, &facts);
  return task.launch_id;
}

// The output's state word, and the inputs' as those its origin is judged from; an input no
// scan judged yet gets its initial scan first, as a kernel's input would. An input whose
// state slot the caller took already (before the call, an in-place collective) keeps it.
void LibraryScans::origin(const LibraryScan& s, ContextState& cs, CUstream stream, nanscope_scan_task& task,
                          LaunchPlan& plan) {
  tasks_.output_states(cs, task, true);
  uint32_t ins = 0;
  for (uint32_t i = 0; i < s.input_count; ++i) {
    const LibraryInput& x = s.inputs[i];
    if (!x.decoded) {
      task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;  // an input nanscope cannot judge
      continue;
    }
    TaskBuilder::add_input_state(task, ins,
                                 x.has_ref ? x.ref : tasks_.input_ref(cs, stream, task, x.ptr, x.dtype, x.elements, &plan));
  }
  task.in_count = ins;
}

}  // namespace nanscope

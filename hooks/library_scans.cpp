// Library calls (cuBLAS / cuBLASLt GEMMs: hooks/gemm_intercept.*; cuDNN graphs:
// hooks/cudnn_intercept.*, cudnn_scans.cpp; docs/library-calls.md): the kernels a call launches
// belong to it, and each output is scanned once on the call's stream after the call returned, so
// after its last kernel (split-K's workspace passes and reduction included) by stream order,
// captured as the next node under stream capture. The scan is named after the call's last
// kernel; the call's inputs (A and B, a graph's read tensors) are its tracked inputs, so a
// non-finite output out of finite inputs is `introduced` there.
#include <fmt/format.h>

#include "gemm_intercept.hpp"
#include "launch_instrumenter.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

// The last kernel the current thread launched inside a library call: the scan of D is named
// after it (plain thread-local data: no TLS constructor).
struct CallKernel {
  uint64_t call_id;
  uint32_t kernel_id;
  uint64_t launch_id;
  uint32_t correlation;
};
thread_local CallKernel t_last_kernel;

void library_sink(void* self, const GemmCall& call) {
  static_cast<LaunchInstrumenter*>(self)->on_library_call(call);
}
void cudnn_sink(void* self, const cudnn::CudnnCall& call) {
  static_cast<LaunchInstrumenter*>(self)->on_cudnn_call(call);
}

}  // namespace

void LaunchInstrumenter::start_library_calls() {
  gemm::set_gemm_sink(library_sink, this);
  cudnn::set_cudnn_sink(cudnn_sink, this);
  on_module_loaded();
}

void LaunchInstrumenter::on_module_loaded() {
  const got::Report g = gemm::patch_all(), d = cudnn::patch_all();
  if (g.walked && g.patched)
    log_.info(fmt::format("library calls: {} GEMM import slots patched in {} loaded objects", g.patched, g.objects));
  if (d.walked && d.patched)
    log_.info(fmt::format("library calls: {} cuDNN backend import slots patched in {} loaded objects", d.patched,
                          d.objects));
}

bool LaunchInstrumenter::inside_library_call(const KernelInfo& k, uint64_t launch_id, uint32_t correlation) {
  const uint64_t call = libcall::note_kernel_launch();
  if (!call) return false;
  t_last_kernel = {call, k.id, launch_id, correlation};
  counters_.coverage.on_launch(k.id, Inspection::library, 0, 0);
  return true;
}

void LaunchInstrumenter::on_library_call(const GemmCall& c) {
  ToolScope scope;
  const GemmExtent e = gemm_extent(c);
  const char* refused = !e.ok ? e.why : !e.contiguous ? "D not contiguous" : nullptr;
  const LibraryBuffer d{c.d_ptr, e.dtype, e.ok ? e.written : 0};
  // A, B (and C when it is not D: C read in D's layout shares D's extent) are the inputs; an
  // operand whose layout is not decoded is one nanscope cannot judge.
  LibraryBuffer inputs[3];
  uint32_t n = 0;
  auto operand = [&](uint64_t ptr, const GemmExtent& x) {
    inputs[n++] = x.ok && x.contiguous ? LibraryBuffer{ptr, x.dtype, x.written} : LibraryBuffer{ptr, DType::none, 0};
  };
  operand(c.a.ptr, operand_extent(c.a));
  operand(c.b.ptr, operand_extent(c.b));
  if (c.c_ptr && !c.c_is_d) operand(c.c_ptr, e);
  scan_library_call({c.api, c.call_id, c.stream, &d, 1, inputs, n}, refused);
}

void LaunchInstrumenter::scan_library_call(const LibraryWrites& w, const char* refused) {
  for (uint32_t o = 0; o < w.output_count && !refused; ++o)
    if (!allocs_.holds(w.outputs[o].ptr, w.outputs[o].elements * dtype_size(w.outputs[o].dtype)))
      refused = "an output outside its allocation";
  CUcontext ctx = nullptr;
  ContextState* cs = !refused && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx ? contexts_.get(ctx) : nullptr;
  if (!refused && !cs) refused = "no context";
  counters_.coverage.on_library_call(w.api, refused);
  if (refused) return;
  const bool named = t_last_kernel.call_id == w.call_id;
  const uint32_t kernel_id = named ? t_last_kernel.kernel_id : kernels_.pseudo(w.api);
  const auto stream = reinterpret_cast<CUstream>(w.stream);
  for (uint32_t o = 0; o < w.output_count; ++o) {
    const LibraryBuffer& out = w.outputs[o];
    const uint64_t bytes = out.elements * dtype_size(out.dtype);
    nanscope_scan_task task{};
    // A watched output keeps its watch (name, padding rows, verdict, the fix), as a kernel's would.
    uint64_t max_bytes = watched_scan(out.ptr, *cs, task, kernel_id);
    if (!max_bytes) {
      task.buffers[0] = {out.ptr, out.elements, static_cast<uint32_t>(out.dtype), kCopyArg};
      task.buffer_count = 1;
      max_bytes = bytes;
    }
    task.kernel_id = kernel_id;
    task.launch_id = named ? t_last_kernel.launch_id : 0;
    task.correlation_id = named ? t_last_kernel.correlation : 0;
    task.stream = w.stream;
    LaunchPlan plan;
    if (cfg_.origin && cs->buffer_states()) library_origin(w, *cs, stream, task, plan);
    for (uint32_t i = 0; i < plan.initial_count; ++i)
      submit_initial(*cs, plan.initial[i], stream, task.correlation_id);
    counters_.coverage.on_extra_scan(bytes);
    submit_scan(*cs, task, stream, max_bytes);
    if (task.launch_id) remember_for_findings(task, plan);  // candidates and the Python line
  }
}

// The outputs' state words, and the inputs' as those the origin is judged from; an input no scan
// judged yet gets its initial scan first, as a kernel's input would.
void LaunchInstrumenter::library_origin(const LibraryWrites& w, ContextState& cs, CUstream stream,
                                        nanscope_scan_task& task, LaunchPlan& plan) {
  tasks_.output_states(cs, task, true);
  uint32_t ins = 0;
  for (uint32_t i = 0; i < w.input_count; ++i) {
    const LibraryBuffer& in = w.inputs[i];
    if (!in.ptr || in.dtype == DType::none || !in.elements) {
      task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;  // an input nanscope cannot judge
      continue;
    }
    TaskBuilder::add_input_state(task, ins, tasks_.input_ref(cs, stream, task, in.ptr, in.dtype, in.elements, &plan));
  }
  task.in_count = ins;
}

}  // namespace nanscope

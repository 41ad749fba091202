// cuBLAS / cuBLASLt GEMM calls (hooks/gemm_intercept.*, docs/library-calls.md): the kernels a
// call launches belong to it, and D is scanned once on the call's stream after the call
// returned, so after its last kernel (split-K's workspace passes and reduction included) by
// stream order, captured as the next node under stream capture. The scan is named after the
// call's last kernel; A and B are its tracked inputs, so an overflow out of finite operands is
// `introduced` there.
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

}  // namespace

void LaunchInstrumenter::start_library_calls() {
  gemm::set_gemm_sink(library_sink, this);
  on_module_loaded();
}

void LaunchInstrumenter::on_module_loaded() {
  const got::Report r = gemm::patch_all();
  if (!r.walked || r.patched == 0) return;
  log_.info(fmt::format("library calls: {} GEMM import slots patched in {} loaded objects", r.patched, r.objects));
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
  const uint64_t bytes = e.ok ? e.written * dtype_size(e.dtype) : 0;
  if (!refused && !allocs_.holds(c.d_ptr, bytes)) refused = "D outside its allocation";
  CUcontext ctx = nullptr;
  ContextState* cs = !refused && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx ? contexts_.get(ctx) : nullptr;
  if (!refused && !cs) refused = "no context";
  counters_.coverage.on_library_call(c.api, refused);
  if (refused) return;
  const bool named = t_last_kernel.call_id == c.call_id;
  const uint32_t kernel_id = named ? t_last_kernel.kernel_id : kernels_.pseudo(c.api);
  nanscope_scan_task task{};
  // A watched D keeps its watch (name, padding rows, verdict, the fix), as a kernel's would.
  uint64_t max_bytes = watched_scan(c.d_ptr, *cs, task, kernel_id);
  if (!max_bytes) {
    task.buffers[0] = {c.d_ptr, e.written, static_cast<uint32_t>(e.dtype), kCopyArg};
    task.buffer_count = 1;
    max_bytes = bytes;
  }
  task.kernel_id = kernel_id;
  task.launch_id = named ? t_last_kernel.launch_id : 0;
  task.correlation_id = named ? t_last_kernel.correlation : 0;
  const auto stream = reinterpret_cast<CUstream>(c.stream);
  task.stream = c.stream;
  LaunchPlan plan;
  if (cfg_.origin && cs->buffer_states()) library_origin(c, e, *cs, stream, task, plan);
  for (uint32_t i = 0; i < plan.initial_count; ++i) submit_initial(*cs, plan.initial[i], stream, task.correlation_id);
  counters_.coverage.on_extra_scan(bytes);
  submit_scan(*cs, task, stream, max_bytes);
  if (task.launch_id) remember_for_findings(task, plan);  // candidates and the Python line
}

// D's state word, and A's, B's (and C's, when it is not D) as the inputs its origin is judged
// from; an operand no scan judged yet gets its initial scan first, as a kernel's input would.
// `d`: D's extent, which C (read in D's layout) shares.
void LaunchInstrumenter::library_origin(const GemmCall& c, const GemmExtent& d, ContextState& cs, CUstream stream,
                                        nanscope_scan_task& task, LaunchPlan& plan) {
  task.buffer_state = cs.buffer_states();
  for (uint32_t b = 0; b < task.buffer_count; ++b) {
    const nanscope_scan_buffer& out = task.buffers[b];
    const DType dt = static_cast<DType>(out.dtype);
    task.out_state[b] = cs.slots().ref_for_output(out.ptr, dt, out.elements * dtype_size(dt));
  }
  if (!allocs_.opaque().empty()) allocs_.opaque().forget(c.d_ptr);  // judged now
  uint32_t ins = 0;
  auto add_input = [&](uint64_t ptr, const GemmExtent& x) {
    if (!ptr || !x.ok || !x.contiguous) {
      task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;  // an operand nanscope cannot judge
      return;
    }
    const uint32_t ref = tasks_.input_ref(cs, stream, task, ptr, x.dtype, x.written, &plan);
    for (uint32_t i = 0; i < ins; ++i)
      if (task.in_state[i] == ref) return;
    if (ins < NANSCOPE_ORIGIN_MAX_INPUTS) task.in_state[ins++] = ref;
  };
  add_input(c.a.ptr, operand_extent(c.a));
  add_input(c.b.ptr, operand_extent(c.b));
  if (c.c_ptr && !c.c_is_d) add_input(c.c_ptr, d);
  task.in_count = ins;
}

}  // namespace nanscope

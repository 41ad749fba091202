#include "launch_instrumenter.hpp"

#include "finding_event.hpp"
#include "tool_scope.hpp"

namespace nanscope {

void LaunchInstrumenter::on_launch(const CUpti_CallbackData& cb, CUpti_CallbackId cbid) {
  LaunchArgs a;
  if (!decode_launch(cbid, cb.functionParams, a)) return;
  const uint64_t launch_id = counters_.launches.fetch_add(1, std::memory_order_relaxed) + 1;
  if (cb.functionReturnValue && *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS)
    return;  // the kernel did not run; its error is the app's to see

  const KernelInfo& k = tasks_.kernel_info(a.function, cb.symbolName);
  if (!tasks_.worth_a_look(k)) return;

  ToolScope scope;  // everything below is our own driver work
  ContextState* cs = contexts_.get(cb.context);
  if (!cs) return;
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  if (!tasks_.build(k, a, *cs, task, max_bytes)) return;
  task.launch_id = launch_id;
  task.correlation_id = cb.correlationId;

  submit_scan(*cs, task, a.stream, max_bytes);
}

// Launches the scan of `task` on `stream` right after the app's work there; inside a stream
// capture it becomes the next graph node.
void LaunchInstrumenter::submit_scan(ContextState& cs, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture_id = 0;
  const CUgraphNode* deps = nullptr;
  size_t ndeps = 0;
  if (cuStreamGetCaptureInfo(stream, &capture, &capture_id, nullptr, &deps, nullptr, &ndeps) != CUDA_SUCCESS)
    capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return;  // nothing will run
  const bool captured = capture == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  const CUgraphNode app_node = captured && ndeps == 1 ? deps[0] : nullptr;
  if (captured) {
    task.graph_id = capture_id;
    task.graph_node = graphs_.number_scan(capture_id);
  }
  const CUresult r = cs.launch_scan(task, stream, captured, max_bytes);
  if (r != CUDA_SUCCESS) {
    failures_.report(r, captured);
    return;
  }
  counters_.scans.fetch_add(1, std::memory_order_relaxed);
  if (!app_node) return;
  // Remember which captured node our scan follows, so later parameter updates reach it.
  const CUgraphNode* after = nullptr;
  size_t nafter = 0;
  if (cuStreamGetCaptureInfo(stream, &capture, &capture_id, nullptr, &after, nullptr, &nafter) == CUDA_SUCCESS &&
      nafter == 1)
    graphs_.remember_scan(app_node, {after[0], reinterpret_cast<CUdeviceptr>(task.accum), task.graph_id, task.graph_node});
}

// A copy or memset into a buffer whose state is tracked: rescan it on the same stream, so its
// device state word stays true. Host copies and sets are an origin of their own ("host"); a
// device copy carries its source's lineage.
void LaunchInstrumenter::on_copy(const CopyArgs& c, const CUpti_CallbackData& cb) {
  if (!cfg_.origin || c.bytes == 0) return;
  ToolScope scope;
  ContextState* cs = contexts_.get(cb.context);
  if (!cs || !cs->buffer_states()) return;
  const auto dst = cs->slots().containing(c.dst);
  if (!dst || dst->bytes < dtype_size(dst->dtype)) return;  // not a buffer nanscope tracks
  nanscope_scan_task task{};
  task.buffers[0] = {dst->ptr, dst->bytes / dtype_size(dst->dtype), static_cast<uint32_t>(dst->dtype), kCopyArg};
  task.buffer_count = 1;
  task.kernel_id = kernels_.pseudo(c.api);
  task.stream = reinterpret_cast<uint64_t>(c.stream);
  task.correlation_id = cb.correlationId;
  task.buffer_state = cs->buffer_states();
  task.out_state[0] = dst->ref;
  bool from_device = c.kind == CopyArgs::Kind::device_to_device;
  if (c.kind == CopyArgs::Kind::unified) from_device = cs->slots().containing(c.src) || allocs_.extent(c.src);
  if (c.kind == CopyArgs::Kind::set || c.kind == CopyArgs::Kind::host_to_device || !from_device) {
    task.origin_flags = NS_ORIGIN_HOST;
  } else if (const auto src = cs->slots().containing(c.src)) {
    task.in_state[0] = src->ref;
    task.in_count = 1;
  } else {
    task.origin_flags = NS_ORIGIN_READS_UNTRACKED;  // copied from device memory nobody scanned
  }
  submit_scan(*cs, task, c.stream, dst->bytes);
}

}  // namespace nanscope

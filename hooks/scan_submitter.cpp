#include "scan_submitter.hpp"

#include <fmt/format.h>

namespace nanscope {

void ScanSubmitter::log_host_profile() {
  for (const std::string& line : profile_.lines()) log_.debug(line);
  if (const std::string flushes = batch_.profile_line(); profile_.on && !flushes.empty()) log_.debug(flushes);
}

// One list for every buffer of the task: a launch's candidates are those of its inputs.
LaunchFacts ScanSubmitter::facts_of(const nanscope_scan_task& task, const LaunchPlan& plan, const KernelInfo* k) {
  LaunchFacts facts{task.launch_id, plan.source ? python_key(*plan.source, plan.source_op_agreed) : python_key(k),
                    std::nullopt, std::nullopt};
  if (!plan.candidates.empty()) facts.candidates = plan.candidates;
  return facts;
}

void ScanSubmitter::file_facts(nanscope_scan_task& task, LaunchFacts& facts, bool captured) {
  if (const uint32_t slot = allocs_.launch_facts().file(std::move(facts), captured))
    task.correlation_id = NS_CORRELATION_WITH_FACTS(task.correlation_id, slot);
}

uint64_t ScanSubmitter::python_key(const xla::SourceLine& line, bool with_op) {
  PythonLine p{line.file, line.line, line.function};
  if (with_op) p.op = line.op;
  return python_.key_for(p);
}

uint64_t ScanSubmitter::python_key(const KernelInfo* k) {
  // A kernel that names its user's line (an XLA kernel's HLO metadata) needs no frame walk.
  if (k && k->source_line) return python_.key_for(*k->source_line);
  const uint64_t key = python_.capture();
  if (!key && python_.gave_up() && !log_.said(schema::Once::python_line))
    warn_once(log_, schema::Once::python_line, python_.problem() + "; findings carry no python line");
  return key;
}

void ScanSubmitter::submit_initial(ContextState& cs, const InitialScan& s, CUstream stream, uint32_t correlation) {
  if (!cs.buffer_states()) return;
  nanscope_scan_task task{};
  // Infinities decoded launches wrote into it on purpose since it was last judged are intended.
  task.buffers[0] = {s.ptr, s.elements, static_cast<uint32_t>(s.dtype), NS_BUFFER_ARG_WITH_INTENT(kCopyArg, s.writers.intended_inf)};
  task.buffer_count = 1;
  task.kernel_id = s.writer ? s.writer->kernel_id : kernels_.pseudo("initial state");
  task.launch_id = s.writer ? s.writer->launch_id : 0;
  // Filed under its writer's launch id (several initial scans may share it, one buffer and
  // candidate list each: each task its own facts slot), with the writer's Python line. The
  // launches that may have written it are the finding's candidates.
  LaunchFacts facts{task.launch_id, s.writer ? s.writer->python : 0, std::nullopt, std::nullopt};
  if (s.writer && !s.writer->host) facts.candidates = s.writers.kernels();
  task.stream = reinterpret_cast<uint64_t>(stream);
  task.correlation_id = correlation;
  task.buffer_state = cs.buffer_states();
  task.out_state[0] = s.ref;
  // Written by a launch nanscope cannot see into (unknown, untracked_read), by a host copy or set
  // (host: the copy is named), or by nothing nanscope saw: never written since allocation, or
  // before nanscope attached (unknown, unwritten). No host write is claimed that was not seen.
  task.origin_flags = !s.writer ? NS_ORIGIN_UNWRITTEN : s.writer->host ? NS_ORIGIN_HOST : NS_ORIGIN_READS_UNTRACKED;
  counters_.coverage.on_extra_scan(s.elements * dtype_size(s.dtype));
  submit(cs, task, stream, s.elements * dtype_size(s.dtype), &facts);
}

void ScanSubmitter::submit(ContextState& cs, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes,
                           LaunchFacts* facts) {
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
  if (facts) file_facts(task, *facts, captured);  // before it runs: its records carry the slot
  if (!captured && hold_eager(cs, task, stream)) return;  // counted when its group is launched
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

bool ScanSubmitter::hold_eager(ContextState& cs, const nanscope_scan_task& task, CUstream stream) {
  if (!batching()) return false;
  if (EagerBatcher::holdable(task, stream) && batch_.hold(cs, stream, task, graphs_.scan_reads(task), steady_now_ns()))
    return true;
  if (batch_.holding()) {  // a scan that cannot wait runs after what its stream held
    eager::Event e;
    e.point = eager::Point::in_line_scan;
    on_event(e, stream);
  }
  return false;
}

void ScanSubmitter::on_event(eager::Event& e, CUstream stream) {
  e.stream = EagerBatcher::stream_key(stream);
  e.legacy = EagerBatcher::legacy(stream) || stream == CU_STREAM_PER_THREAD;
  e.now_ns = steady_now_ns();
  batch_.on_event(e);
}

}  // namespace nanscope

#include "launch_instrumenter.hpp"

#include <fmt/format.h>

#include "collectors.hpp"
#include "finding_event.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

double per_us(uint64_t ns, uint64_t count) { return count ? static_cast<double>(ns) / count / 1000.0 : 0.0; }

// Adds the time since construction to `site` when profiling.
template <class Site>
struct SiteTimer {
  bool on;
  Site& site;
  uint64_t t0 = on ? steady_now_ns() : 0;
  ~SiteTimer() {
    if (on) site.add(steady_now_ns() - t0);
  }
};

}  // namespace

void LaunchInstrumenter::log_host_profile() {
  const HostProfile& p = profile_;
  const uint64_t n = p.scanned.load(), e = p.enter.calls.load(), all = e + p.enter.slow.load();
  if (!p.on || (!n && !all)) return;
  log_.debug(fmt::format("host time per scanned launch ({}): build {:.2f} us, scan submit or hold {:.2f} us, "
                         "findings' facts (Python line) {:.2f} us",
                         n, per_us(p.build_ns, n), per_us(p.submit_ns, n), per_us(p.findings_ns, n)));
  log_.debug(fmt::format("launch exit site, all of it: {:.2f} us each ({}), plus {} over {} us taking {:.1f} ms",
                         per_us(p.exit.ns, p.exit.calls), p.exit.calls.load(), p.exit.slow.load(),
                         HostProfile::kSlowCallNs / 1000, p.exit.slow_ns.load() / 1e6));
  log_.debug(fmt::format("launch enter site while scans are held: {:.2f} us each ({}: kernel lookup {:.2f}, write model "
                         "{:.2f}, flush check and its launches {:.2f}), plus {} over {} us taking {:.1f} ms",
                         per_us(p.enter.ns, e), e, per_us(p.enter_resolve_ns, all), per_us(p.enter_model_ns, all),
                         per_us(p.enter_event_ns, all), p.enter.slow.load(), HostProfile::kSlowCallNs / 1000,
                         p.enter.slow_ns.load() / 1e6));
  if (const std::string flushes = batch_.profile_line(); !flushes.empty()) log_.debug(flushes);
}

void LaunchInstrumenter::on_launch(const CUpti_CallbackData& cb, CUpti_CallbackId cbid) {
  const SiteTimer<HostProfile::Site> timer{profile_.on, profile_.exit};
  LaunchArgs a;
  if (!decode_launch(cbid, cb.functionParams, a)) return;
  const LaunchDecodeScope decode_once(cb.correlationId);  // the enter site may have decoded it
  const uint64_t launch_id = counters_.launches.fetch_add(1, std::memory_order_relaxed) + 1;
  if (cb.functionReturnValue && *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS)
    return;  // the kernel did not run; its error is the app's to see
  watch_torch();  // before any nanscope lock: attaching takes torch's allocator locks

  const KernelInfo& k = tasks_.kernel_info(a.function, cb.symbolName);
  ToolScope scope;  // everything below is our own driver work
  if (inside_library_call(k, launch_id, cb.correlationId, a.stream)) return;
  if (!tasks_.worth_a_look(k)) {
    counters_.coverage.on_launch(k.id, k.excluded          ? Inspection::excluded
                                       : k.layout_mismatch ? Inspection::mismatch
                                       : k.library         ? Inspection::library
                                                           : Inspection::opaque, 0, 0);
    note_opaque(k, a, launch_id, cb.context);
    return;
  }
  ContextState* cs = contexts_.get(cb.context);
  if (!cs) return;
  nanscope_scan_task task{};
  // Before the build: the slots its outputs claim are judged by this launch (BufferSlots'
  // judged_by), which a later opaque reader's finding is propagated through.
  task.launch_id = launch_id;
  task.correlation_id = cb.correlationId;
  uint64_t max_bytes = 0;
  LaunchPlan plan;
  const uint64_t t0 = profile_.on ? steady_now_ns() : 0;
  const bool scan = tasks_.build(k, a, *cs, task, max_bytes, &plan);
  if (plan.refused_extent)
    warn_once(log_, schema::Once::decoded_extent,
              fmt::format("a decoded extent of {} runs past its allocation; such buffers are not scanned (a decoder "
                          "whose layout facts do not fit this build: please report it)", k.demangled));
  counters_.coverage.on_launch(k.id, plan.inspection, plan.written_bytes, plan.scanned_bytes);
  if (plan.inspection == Inspection::mismatch) counters_.coverage.on_refused_launch(k.id, k.demangled, plan.refused);
  // A launch whose decode was refused writes what nanscope cannot say: as opaque as no decoder.
  if ((k.decoder == Decoder::none && k.hidden_reads) || plan.inspection == Inspection::mismatch)
    note_opaque(k, a, launch_id, cb.context);
  for (uint32_t i = 0; i < plan.initial_count; ++i) submit_initial(*cs, plan.initial[i], a.stream, cb.correlationId);
  if (!scan) return;

  const uint64_t t1 = profile_.on ? steady_now_ns() : 0;
  submit_scan(*cs, task, a.stream, max_bytes);
  const uint64_t t2 = profile_.on ? steady_now_ns() : 0;
  remember_for_findings(task, plan);
  if (profile_.on) {
    profile_.scanned.fetch_add(1, std::memory_order_relaxed);
    profile_.build_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
    profile_.submit_ns.fetch_add(t2 - t1, std::memory_order_relaxed);
    profile_.findings_ns.fetch_add(steady_now_ns() - t2, std::memory_order_relaxed);
  }
}

void LaunchInstrumenter::remember_for_findings(const nanscope_scan_task& task, const LaunchPlan& plan) {
  const bool captured = task.graph_id != 0;
  if (!plan.candidates.empty())
    for (uint32_t b = 0; b < task.buffer_count; ++b)
      allocs_.candidates().put(task.launch_id, task.buffers[b].ptr, plan.candidates, captured);
  python_.remember(task.launch_id, python_key(), captured);
}

uint64_t LaunchInstrumenter::python_key() {
  const uint64_t key = python_.capture();
  if (!key && python_.gave_up() && !log_.said(schema::Once::python_line))
    warn_once(log_, schema::Once::python_line, python_.problem() + "; findings carry no python line");
  return key;
}

// A launch nanscope cannot see into may write any buffer its parameter words point into: those
// buffers' states are unknown from here on, and the launch is remembered as their last possible
// writer, so their next reader's initial scan names it rather than the reader.
void LaunchInstrumenter::note_opaque(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id, CUcontext ctx) {
  if (!cfg_.origin || !k.params_known || k.excluded) return;
  const AddressRange span = allocs_.span();
  if (!span.size) return;
  thread_local std::vector<uint64_t> words;
  words.clear();
  for (uint32_t i = 0; i < k.params.size(); ++i) {
    // A typed kernel's typed pointers are judged by its own scan (outputs) or only read (const
    // inputs): only the parameters that may hide pointers can hide a write.
    if (i < k.roles.size() && k.roles[i] != ParamRole::other) continue;
    OpaqueWriters::candidate_words(param_bytes(a, k.params, i), k.params[i].second, span.base, span.base + span.size, words);
  }
  if (words.empty()) return;
  ContextState* cs = contexts_.get(ctx);
  // Its Python line travels with it: a candidate is named with it, in graph replays too.
  OpaqueWrite writer{k.id, launch_id, false, reinterpret_cast<uint64_t>(a.stream), python_key()};
  python_.remember(launch_id, writer.python, false);
  if (cs) note_judged_inputs(*cs, words, writer);
  for (uint64_t w : words) {
    if (!allocs_.note_writer(w, writer)) continue;
    if (cs) cs->slots().invalidate(w);
  }
}

// What an opaque launch's words hit as last judged, before the launch makes them unknown: a
// finding of that judgement makes its output's finding propagated through it (lineage_candidate.cpp).
void LaunchInstrumenter::note_judged_inputs(ContextState& cs, const std::vector<uint64_t>& words, OpaqueWrite& writer) {
  for (uint64_t w : words)
    if (const auto judged = cs.slots().containing(w); judged && judged->state_known)
      writer.add_input({judged->judged_by, judged->ptr});
}

// The initial scan of a buffer read before any scan judged it, right before its reader's scan.
void LaunchInstrumenter::submit_initial(ContextState& cs, const InitialScan& s, CUstream stream, uint32_t correlation) {
  if (!cs.buffer_states()) return;
  nanscope_scan_task task{};
  // Infinities decoded launches wrote into it on purpose since it was last judged are intended.
  task.buffers[0] = {s.ptr, s.elements, static_cast<uint32_t>(s.dtype), NS_BUFFER_ARG_WITH_INTENT(kCopyArg, s.writers.intended_inf)};
  task.buffer_count = 1;
  task.kernel_id = s.writer ? s.writer->kernel_id : kernels_.pseudo("initial state");
  task.launch_id = s.writer ? s.writer->launch_id : 0;
  // The launches that may have written it are the finding's candidates.
  if (s.writer && !s.writer->host) allocs_.candidates().put(task.launch_id, s.ptr, s.writers.kernels(), false);
  task.stream = reinterpret_cast<uint64_t>(stream);
  task.correlation_id = correlation;
  task.buffer_state = cs.buffer_states();
  task.out_state[0] = s.ref;
  // Written by a launch nanscope cannot see into (unknown, untracked_read), by a host copy or set
  // (host: the copy is named), or by nothing nanscope saw: never written since allocation, or
  // before nanscope attached (unknown, unwritten). No host write is claimed that was not seen.
  task.origin_flags = !s.writer ? NS_ORIGIN_UNWRITTEN : s.writer->host ? NS_ORIGIN_HOST : NS_ORIGIN_READS_UNTRACKED;
  counters_.coverage.on_extra_scan(s.elements * dtype_size(s.dtype));
  submit_scan(cs, task, stream, s.elements * dtype_size(s.dtype));
}

void LaunchInstrumenter::watch_torch() {
  TorchBlockTracker& torch = allocs_.torch();
  torch.try_attach();
  if (torch.state() != TorchBlockTracker::State::kFailed || log_.said(schema::Once::torch_blocks)) return;
  warn_once(log_, schema::Once::torch_blocks,
            fmt::format("PyTorch {}: tensor extents are unknown ({}); {}", torch.torch_version(), torch.reason(),
                        allocs_.torch_blind()
                            ? "outputs that only a kernel signature types are not scanned (decoded kernels are)"
                            : "driver allocations give the extents"));
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

// A copy or memset into a watched or tracked buffer: rescan it on the same stream. A watched
// buffer keeps its watch (name, padding spec, verdict, action); any other tracked buffer is
// rescanned plainly so its device state word stays true. Host copies and sets are an origin of
// their own ("host"); a device copy carries its source's lineage.
void LaunchInstrumenter::on_copy(const CopyArgs& c, const CUpti_CallbackData& cb) {
  if (c.bytes == 0) return;
  ToolScope scope;
  ContextState* cs = contexts_.get(cb.context);
  if (!cs) return;
  nanscope_scan_task task{};
  const uint32_t pseudo = kernels_.pseudo(c.api);
  uint64_t max_bytes = watched_scan(c.dst, *cs, task, pseudo);
  if (!max_bytes) {
    if (!cfg_.origin || !cs->buffer_states()) return;
    const auto dst = cs->slots().containing(c.dst);
    if (!dst || dst->bytes < dtype_size(dst->dtype)) {  // not a buffer nanscope tracks yet
      note_copy_writer(c, *cs, pseudo);
      return;
    }
    // The extent an earlier scan left may be a former tensor's at this address: never read past
    // the block or allocation that holds it now.
    if (!allocs_.holds(dst->ptr, dst->bytes)) return;
    task.buffers[0] = {dst->ptr, dst->bytes / dtype_size(dst->dtype), static_cast<uint32_t>(dst->dtype), kCopyArg};
    task.buffer_count = 1;
    max_bytes = dst->bytes;
  }
  task.kernel_id = pseudo;
  task.stream = reinterpret_cast<uint64_t>(c.stream);
  task.correlation_id = cb.correlationId;
  if (cfg_.origin && cs->buffer_states()) copy_origin(c, *cs, task);
  submit_scan(*cs, task, c.stream, max_bytes);
}

// The watches holding `dst` (a copy's destination, a library call's D), as the launch of a
// kernel referencing them would scan them: name, padding spec, verdict, action (the fix).
// Returns the bytes to size the scan's grid, 0 when no watch holds it.
uint64_t LaunchInstrumenter::watched_scan(uint64_t dst, ContextState& cs, nanscope_scan_task& task, uint32_t pseudo) {
  if (!watches_.any()) return 0;
  const KernelInfo* k = kernels_.by_id(pseudo);
  if (!k) return 0;
  const auto snapshot = watches_.snapshot();
  const LaunchArgs none;
  TaskDraft draft(*k, none, cs, task, watches_, counters_, log_);
  WatchRegistry::for_each_containing(*snapshot, dst, [&](const WatchEntry& e) { draft.add_rows(e.spec, e.id, kCopyArg); });
  task.buffer_count = draft.count();
  return draft.count() ? std::max<uint64_t>(draft.max_bytes(), 1) : 0;
}

// The copy is the buffer's last writer: its first reader's initial scan names it (host for host
// data and sets, unknown for device memory nobody scanned).
void LaunchInstrumenter::note_copy_writer(const CopyArgs& c, ContextState& cs, uint32_t pseudo) {
  const bool from_device = (c.kind == CopyArgs::Kind::device_to_device || c.kind == CopyArgs::Kind::unified) &&
                           (cs.slots().containing(c.src) || allocs_.is_device(c.src));
  allocs_.note_writer(c.dst, OpaqueWrite{pseudo, 0, !from_device});
}

void LaunchInstrumenter::copy_origin(const CopyArgs& c, ContextState& cs, nanscope_scan_task& task) {
  tasks_.output_states(cs, task, false);  // a partial copy: the buffer's other writers still count
  bool from_device = c.kind == CopyArgs::Kind::device_to_device;
  if (c.kind == CopyArgs::Kind::unified) from_device = cs.slots().containing(c.src) || allocs_.extent(c.src);
  if (c.kind == CopyArgs::Kind::set || c.kind == CopyArgs::Kind::host_to_device || !from_device) {
    task.origin_flags = NS_ORIGIN_HOST;
  } else if (const auto src = cs.slots().containing(c.src)) {
    task.in_state[0] = src->ref;
    task.in_count = 1;
  } else {
    task.origin_flags = NS_ORIGIN_READS_UNTRACKED;  // copied from device memory nobody scanned
  }
}

}  // namespace nanscope

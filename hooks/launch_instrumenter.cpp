#include "launch_instrumenter.hpp"

#include <fmt/format.h>

#include "collectors.hpp"
#include "finding_event.hpp"
#include "library_call.hpp"
#include "library_scans.hpp"
#include "set_pattern.hpp"
#include "stream_capture.hpp"
#include "tool_scope.hpp"

namespace nanscope {

void LaunchInstrumenter::on_launch(const CUpti_CallbackData& cb, LaunchRecord& launch) {
  using Part = HostProfile::Part;
  HostProfile& profile = scans_.profile();
  const SiteTimer timer{profile.on, profile.exit};
  PartClock clock(profile);
  const LaunchArgs& a = launch.args;
  const uint64_t launch_id = counters_.launches.fetch_add(1, std::memory_order_relaxed) + 1;
  if (cb.functionReturnValue && *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS)
    return;  // the kernel did not run; its error is the app's to see
  watch_torch();  // before any nanscope lock: attaching takes torch's allocator locks
  clock.lap(Part::torch_watch);

  const KernelInfo& k = tasks_.kernel_info(launch, cb.symbolName);  // the enter site may have resolved it
  clock.lap(Part::kernel_lookup);
  ToolScope scope;  // everything below is our own driver work
  const bool claimed = LibraryScans::claim_kernel(k, launch_id, cb.correlationId, a.stream);
  clock.lap(Part::library_claim);
  if (claimed) return counters_.coverage.on_launch(k.id, Inspection::library, 0, 0);
  const bool autotuning = xla_autotuning(k, a);
  clock.lap(Part::autotuning_check);
  if (autotuning) return;
  if (!tasks_.worth_a_look(k)) {
    const SiteTimer part{profile.on, profile.not_looked_at};
    counters_.coverage.on_launch(k.id, k.excluded          ? Inspection::excluded
                                       : k.layout_mismatch ? Inspection::mismatch
                                       : k.library         ? Inspection::library
                                                           : Inspection::opaque, 0, 0);
    if (k.xla_autotuner) kernels_.note_autotuner_launch();  // its thread's library calls are autotuning
    clock.lap(Part::coverage_count);
    note_opaque(k, a, launch_id, cb.context, clock);
    return;
  }
  if (eager_tier_.on() && sampled_out(k, a, launch_id)) return;
  ContextState* cs = contexts_.get(cb.context);
  if (!cs) return;
  nanscope_scan_task task{};
  // Before the build: the slots its outputs claim are judged by this launch (BufferSlots'
  // judged_by), which a later opaque reader's finding is propagated through.
  task.launch_id = launch_id;
  task.correlation_id = cb.correlationId;
  uint64_t max_bytes = 0;
  LaunchPlan plan;
  clock.skip();
  const bool scan = tasks_.build(launch, *cs, task, max_bytes, &plan);  // its decode too
  clock.lap(Part::build);
  if (plan.refused_extent)
    warn_once(log_, schema::Once::decoded_extent,
              fmt::format("a decoded extent of {} runs past its allocation; such buffers are not scanned (a decoder "
                          "whose layout facts do not fit this build: please report it)", k.demangled));
  counters_.coverage.on_launch(k.id, plan.inspection, plan.written_bytes, plan.scanned_bytes);
  if (plan.inspection == Inspection::mismatch) list_refusal(counters_.coverage, k, a, allocs_, plan.refused);
  // A launch whose decode was refused writes what nanscope cannot say: as opaque as no decoder.
  if ((k.decoder == Decoder::none && k.hidden_reads) || plan.inspection == Inspection::mismatch)
    note_opaque(k, a, launch_id, cb.context, clock);
  for (uint32_t i = 0; i < plan.initial_count; ++i) scans_.submit_initial(*cs, plan.initial[i], a.stream, cb.correlationId);
  clock.lap(Part::initial_scans);
  if (!scan) return;

  LaunchFacts facts = scans_.facts_of(task, plan, &k);  // the Python line: before the scan, which carries its slot
  clock.lap(Part::facts);
  scans_.submit(*cs, task, a.stream, max_bytes, &facts);
  clock.lap(Part::submit);
}

// A launch of a kernel no XLA dump module holds, made while XLA optimizes a module: its autotuner
// timing a candidate (the candidates' CUmodules are never dumped). Counted compile_time, not
// scanned, and not noted as a writer: what it writes is the autotuner's scratch, and naming it a
// candidate writer of the program's NaN would be the redzone mistake again (docs/jax.md).
bool LaunchInstrumenter::xla_autotuning(const KernelInfo& k, const LaunchArgs& a) {
  if (!k.xla_unheld || !surely_not_capturing(a.stream)) return false;
  bool first = false;
  const std::string module = kernels_.xla_optimizing(k, first);
  if (module.empty()) return false;
  counters_.coverage.on_launch(k.id, Inspection::compile_time, 0, 0);
  if (first && log_.debug_enabled())
    log_.debug(fmt::format("XLA: launches of kernels no dump module holds, made while XLA optimizes {} (its "
                           "autotuning, first {}), are counted compile_time and not scanned", module, k.demangled));
  return true;
}

// A launch nanscope cannot see into may write any buffer its parameter words point into: those
// buffers' states are unknown from here on, and the launch is remembered as their last possible
// writer, so their next reader's initial scan names it rather than the reader.
void LaunchInstrumenter::note_opaque(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id, CUcontext ctx,
                                     PartClock& clock) {
  using Part = HostProfile::Part;
  if (!cfg_.origin || !k.params_known || k.excluded) return;
  const AddressRange span = allocs_.span();
  if (!span.size) return;
  thread_local std::vector<uint64_t> words;
  words.clear();
  for (uint32_t i = 0; i < k.params.size(); ++i) {
    // A typed kernel's typed pointers are judged by its own scan (outputs) or only read (const
    // inputs): only the parameters that may hide pointers can hide a write.
    const ParamRole role = i < k.roles.size() ? k.roles[i] : ParamRole::other;
    if (role == ParamRole::input || role == ParamRole::output) continue;
    OpaqueWriters::candidate_words(param_bytes(a, k.params, i), k.params[i].second, span.base, span.base + span.size, words);
  }
  clock.lap(Part::opaque_words);
  if (words.empty()) return;
  ContextState* cs = contexts_.get(ctx);
  // Its Python line travels with it: a candidate is named with it, in graph replays too, and an
  // initial scan named after it files it with its facts.
  OpaqueWrite writer{k.id, launch_id, false, reinterpret_cast<uint64_t>(a.stream), scans_.python_key(&k)};
  clock.lap(Part::opaque_python);
  if (cs) note_judged_inputs(*cs, words, writer);
  for (uint64_t w : words) {
    if (!allocs_.note_writer(w, writer)) continue;
    if (cs) cs->slots().invalidate(w);
  }
  clock.lap(Part::opaque_notes);
}

// The sentinel tier in eager mode (eager_tier.hpp): a launch outside the sample is not scanned,
// and costs nothing more (findings outside a window claim no origin; a window forgets every
// buffer's state when it opens). Never a launch under stream capture (a graph node: the graph
// tier's), one that touches a watch or matches a rule, or one whose parameters are not known.
bool LaunchInstrumenter::sampled_out(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id) {
  if (!k.params_known) return false;
  if (!surely_not_capturing(a.stream)) return false;
  const bool always = !k.rules.empty() || tasks_.touches_watch(k, a);
  if (eager_tier_.should_scan(launch_id, k.id, always)) return false;
  counters_.coverage.on_launch(k.id, Inspection::sampled_out, 0, 0);
  return true;
}

// What an opaque launch's words hit as last judged, before the launch makes them unknown: a
// finding of that judgement makes its output's finding propagated through it (lineage_candidate.cpp).
void LaunchInstrumenter::note_judged_inputs(ContextState& cs, const std::vector<uint64_t>& words, OpaqueWrite& writer) {
  for (uint64_t w : words)
    if (const auto judged = cs.slots().containing(w); judged && judged->state_known)
      writer.add_input({judged->judged_by, judged->ptr});
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
  uint64_t max_bytes = tasks_.watched_scan(c.dst, *cs, task, pseudo);
  bool set_typed = false;
  if (!max_bytes) {
    if (!cfg_.origin || !cs->buffer_states()) return;
    const auto dst = cs->slots().containing(c.dst);
    const bool typed = dst && dst->holds_an_element() && allocs_.type_holds(*dst);
    const auto src = typed_source(c, *cs);
    switch (judge_copy(c.kind == CopyArgs::Kind::set, c.set_value, c.set_bytes, typed,
                       typed && allocs_.scan_extent(dst->ptr).pool, libcall::current() != nullptr, src.has_value())) {
      case CopyJudgement::rescan_typed: max_bytes = rescan_task(*dst, task); break;
      case CopyJudgement::rescan_as_source:
        max_bytes = rescan_task(TrackedBuffer{c.dst, c.bytes / dtype_size(*src) * dtype_size(*src), *src}, task);
        break;
      case CopyJudgement::scan_set: set_typed = (max_bytes = set_task(c, task)) != 0; break;
      case CopyJudgement::forget: break;
    }
    if (!max_bytes) {  // nothing nanscope can type: the next typed reader's initial scan judges
      cs->slots().invalidate(c.dst);
      note_copy_writer(c, *cs, pseudo);
      return;
    }
  }
  task.kernel_id = pseudo;
  task.stream = reinterpret_cast<uint64_t>(c.stream);
  task.correlation_id = cb.correlationId;
  if (cfg_.origin && cs->buffer_states()) copy_origin(c, *cs, task);
  // A set's scan read it as its width's float: a guess at the buffer's type that no later
  // rescan may take up (any type reads the set pattern clean; not a copy's bytes).
  if (set_typed) cs->slots().untype(c.dst);
  scans_.submit(*cs, task, c.stream, max_bytes);
}

// A memset whose pattern every float type reads as finite (zero above all: XLA's memzero of a
// while loop's carried state, which its body's kernels read in a CUDA graph with no initial scan)
// leaves the bytes it set clean whatever their type: they are scanned as the set's width reads
// them, so their state word is known. 0 for any other pattern, whose meaning depends on a type
// the set does not give (an int32 -1 is NaN as f32).
uint64_t LaunchInstrumenter::set_task(const CopyArgs& c, nanscope_scan_task& task) const {
  if (!c.set_bytes) return 0;
  const auto scan = set_scan(c.dst, c.set_value, c.set_bytes, c.bytes / c.set_bytes, 1, 0, cfg_.max_scan_bytes);
  if (!scan) return 0;
  task.buffers[0] = {scan->ptr, scan->elements, static_cast<uint32_t>(scan->dtype), kCopyArg};
  task.buffer_count = 1;
  return scan->bytes();
}

// The type of a device copy's source, where a scan typed a buffer holding every byte it copies.
std::optional<DType> LaunchInstrumenter::typed_source(const CopyArgs& c, ContextState& cs) const {
  if (c.kind != CopyArgs::Kind::device_to_device) return std::nullopt;
  const auto src = cs.slots().containing(c.src);
  if (!src || !src->holds_an_element() || !allocs_.type_holds(*src)) return std::nullopt;
  if (c.src + c.bytes > src->ptr + src->bytes || c.bytes < dtype_size(src->dtype)) return std::nullopt;
  return src->dtype;
}

// A copy or set into a buffer an earlier scan typed, outside any pool (judge_copy): rescanned at
// that type, over that extent. 0 where that extent no longer fits the memory holding it.
uint64_t LaunchInstrumenter::rescan_task(const TrackedBuffer& dst, nanscope_scan_task& task) {
  // The extent an earlier scan left may be a former tensor's at this address: never read past
  // the block or allocation that holds it now.
  if (!allocs_.holds(dst.ptr, dst.bytes)) return 0;
  task.buffers[0] = {dst.ptr, dst.bytes / dtype_size(dst.dtype), static_cast<uint32_t>(dst.dtype), kCopyArg};
  task.buffer_count = 1;
  return dst.bytes;
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

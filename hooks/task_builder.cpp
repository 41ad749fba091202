#include "task_builder.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include <fmt/format.h>

#include "finding_event.hpp"
#include "stream_capture.hpp"

namespace nanscope {

void TaskDraft::add_rows(const WatchSpec& w, uint32_t watch_id, uint32_t arg, bool inferred, bool quiet) {
  for (uint32_t i = 0; i < n_; ++i)
    if (((task_.row_aware_mask >> i) & 1u) && task_.row_specs[i].watch_id == watch_id) return;
  if (full()) return;
  const CUdeviceptr bitmap = context.row_bitmap(watch_id, w.rows);
  if (!bitmap) {
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t elements = w.extent_bytes() / dtype_size(w.dtype);
  task_.buffers[n_] = {w.ptr, elements, static_cast<uint32_t>(w.dtype), arg};
  nanscope_row_spec& rs = task_.row_specs[n_];
  rs.rows = w.rows;
  rs.row_elements = w.row_elements;
  rs.row_stride = w.stride();
  rs.inv_row_stride = 1.0 / static_cast<double>(w.stride());
  rs.source = static_cast<uint32_t>(w.padding.source);
  rs.source_ptr = w.padding.device_ptr;
  rs.index_i64 = w.padding.index_type == IndexType::i64;
  rs.pad_value = w.padding.pad_value;
  rs.host_count = w.padding.host_count;
  rs.last_state = reinterpret_cast<unsigned long long*>(bitmap);
  rs.row_bitmap = reinterpret_cast<unsigned int*>(bitmap + ContextState::kRowStateBytes);
  const Action action = watches_.effective(w.action);
  rs.fix = !inferred && (action == Action::fix || action == Action::zero_padding);
  rs.zero_only = rs.fix && action == Action::zero_padding;
  // Rows that start 16-byte aligned are walked row by row: one status lookup per chunk.
  rs.chunked = w.ptr % 16 == 0 && (w.stride() * dtype_size(w.dtype)) % 16 == 0;
  rs.watch_id = watch_id;
  rs.quiet_unchanged = quiet;
  task_.row_aware_mask |= 1u << n_;
  max_bytes_ = std::max(max_bytes_, elements * dtype_size(w.dtype));
  ++n_;
}

void TaskDraft::add_plain(uint64_t ptr, uint64_t elements, DType dtype, uint32_t arg, uint64_t bytes) {
  if (full()) return;
  task_.buffers[n_++] = {ptr, elements, static_cast<uint32_t>(dtype), arg};
  max_bytes_ = std::max(max_bytes_, bytes);
}

bool TaskDraft::covered(uint64_t ptr) const {
  for (uint32_t i = 0; i < n_; ++i) {
    const nanscope_scan_buffer& b = task_.buffers[i];
    if ((i < earlier_ || ((task_.row_aware_mask >> i) & 1u)) && ptr >= b.ptr &&
        ptr < b.ptr + b.elements * dtype_size(static_cast<DType>(b.dtype)))
      return true;
  }
  return false;
}

bool TaskDraft::full() {
  if (n_ < NANSCOPE_SCAN_MAX_BUFFERS) return false;
  warn_once(log_, schema::Once::scan_buffers,
            fmt::format("a launch of {} references more than {} scanned buffers; the rest are skipped",
                        kernel.demangled, NANSCOPE_SCAN_MAX_BUFFERS));
  return true;
}

TaskBuilder::TaskBuilder(const Config& cfg, KernelTable& kernels, Watches& watches, Allocations& allocs,
                         Counters& counters, EventLog& log)
    : cfg_(cfg), kernels_(kernels), watches_(watches), allocs_(allocs), counters_(counters), log_(log) {
  collectors_ = task_collectors(cfg, watches, allocs);
}

const KernelInfo& TaskBuilder::kernel_info(void* handle, const char* symbol_name) {
  bool is_new = false;
  const KernelInfo& k = kernels_.resolve(handle, symbol_name, is_new);
  if (is_new) counters_.coverage.on_kernel(k.id, k.demangled, k.inspected ? std::string() : k.reason);
  if (is_new && !k.inspected) {  // said once per kernel
    {
      std::lock_guard lock(not_inspected_mu_);
      if (!not_inspected_.insert(k.mangled).second) return k;
    }
    log_.emit(schema::event::not_inspected,
              Json{{schema::key::kernel, k.demangled}, {schema::key::kernel_mangled, k.mangled}, {schema::key::reason, k.reason}});
    if (log_.debug_enabled()) log_.debug(fmt::format("not inspected: {} ({})", k.demangled, k.reason));
  }
  return k;
}

const KernelInfo& TaskBuilder::kernel_info(LaunchRecord& launch, const char* symbol_name) {
  if (!launch.kernel) launch.kernel = &kernel_info(launch.args.function, symbol_name);
  return *launch.kernel;
}

bool TaskBuilder::worth_a_look(const KernelInfo& k) const {
  if (k.excluded) return false;
  return (cfg_.typed && k.inspected) || !k.rules.empty() || (watches_.any() && k.params_known);
}

bool TaskBuilder::build(const KernelInfo& k, const LaunchArgs& a, ContextState& cs, nanscope_scan_task& task,
                        uint64_t& max_bytes, LaunchPlan* plan) {
  LaunchRecord launch(k, a);
  return build(launch, cs, task, max_bytes, plan);
}

// What the launch's caller reports of the draft: coverage, refusals, an XLA launch's own line.
void TaskBuilder::fill_plan(const TaskDraft& draft, const nanscope_scan_task& task, LaunchRecord& launch,
                            LaunchPlan& plan) {
  plan.inspection = draft.inspection;
  plan.written_bytes = draft.written_bytes;
  plan.refused_extent = draft.refused_extent;
  plan.refused = draft.refused;
  for (uint32_t i = 0; i < draft.count(); ++i)
    plan.scanned_bytes += task.buffers[i].elements * dtype_size(static_cast<DType>(task.buffers[i].dtype));
  if (launch.kernel->decoder == Decoder::xla)
    if (const auto& d = launch.decoded(allocs_); d && d->status == decode::Status::decoded)
      plan.source = d->source, plan.source_op_agreed = d->source_op_agreed;
}

bool TaskBuilder::build(LaunchRecord& launch, ContextState& cs, nanscope_scan_task& task, uint64_t& max_bytes,
                        LaunchPlan* plan) {
  const KernelInfo& k = *launch.kernel;
  const LaunchArgs& a = launch.args;
  TaskDraft draft(launch, cs, task, watches_, counters_, log_);
  draft.inspection = k.decoder != Decoder::none ? Inspection::decoded
                     : cfg_.typed && k.inspected ? Inspection::typed
                                                 : Inspection::watched;
  for (const auto& collector : collectors_) {
    draft.begin_collector();
    collector->collect(draft);
  }
  if (draft.pool_refusals_count()) {
    report_pool_refusals(draft);
    // Nothing else scanned: the launch was not looked at, and coverage must not say it was.
    if (draft.count() == 0 && draft.inspection != Inspection::mismatch) draft.inspection = Inspection::extent_unknown;
  }
  max_bytes = draft.max_bytes();
  if (plan) fill_plan(draft, task, launch, *plan);
  task.buffer_count = draft.count();  // add_origin reads the buffers
  // A launch with nothing to scan (a predicate writing bool) still reads: its inputs that no scan
  // judged get their initial scans all the same.
  if (cs.buffer_states()) add_origin(draft, task, plan);
  if (draft.count() == 0) return false;
  task.kernel_id = k.id;
  task.stream = reinterpret_cast<uint64_t>(a.stream);
  if (plan) plan->scan = true;
  return true;
}

void TaskBuilder::report_pool_refusals(const TaskDraft& draft) {
  const KernelInfo& k = draft.kernel;
  for (uint32_t i = 0; i < draft.pool_refusals_count(); ++i) {
    const TaskDraft::PoolRefusal& r = draft.pool_refusals()[i];
    {
      std::lock_guard lock(not_inspected_mu_);
      if (!pool_refused_.emplace(k.mangled, r.arg).second) continue;
    }
    counters_.coverage.on_refused_launch(k.id, k.demangled, kPoolExtentReason);
    namespace key = schema::key;
    log_.emit(schema::event::not_inspected,
              Json{{key::kernel, k.demangled},
                   {key::kernel_mangled, k.mangled},
                   {key::reason, kPoolExtentReason},
                   {key::buffer, {{schema::buffer_key::arg, r.arg}, {schema::buffer_key::ptr, fmt::format("0x{:x}", r.ptr)}}}});
    if (log_.debug_enabled())
      log_.debug(fmt::format("not inspected: argument {} of {} ({}: no extent but the end of a driver allocation "
                             "larger than NANSCOPE_MAX_WHOLE_ALLOC_BYTES)", r.arg, k.demangled, kPoolExtentReason));
  }
}

// NaN origin: which state words the scan updates (its buffers) and reads (the launch's tracked
// inputs, judged on the device as they were before the launch).
void TaskBuilder::add_origin(const TaskDraft& draft, nanscope_scan_task& task, LaunchPlan* plan) {
  BufferSlots& slots = draft.context.slots();
  output_states(draft.context, task, true);
  uint32_t ins = 0;
  // `bytes`: a watched buffer's known extent (watches get no initial scan: their spec decides
  // what is scanned).
  auto add_input = [&](uint64_t ptr, DType dtype, uint64_t elements, uint64_t bytes = 0) {
    uint32_t ref = 0;
    if (bytes) {
      ref = slots.ref_for(ptr, dtype, bytes);
    } else {
      ref = input_ref(draft.context, draft.args.stream, task, ptr, dtype, elements, plan);  // its first reader
    }
    add_input_state(task, ins, ref);
  };
  for (const OutputParam& in : draft.kernel.inputs) {
    const char* param = draft.param(in.arg);
    uint64_t ptr = 0;
    if (param) std::memcpy(&ptr, param, sizeof(ptr));
    if (ptr) add_input(ptr, in.dtype, 0);
  }
  for (uint32_t i = 0; i < draft.reads_count(); ++i)
    add_input(draft.reads()[i].ptr, draft.reads()[i].dtype, draft.reads()[i].elements);
  for (const WatchSpec* w : draft.watched_inputs()) add_input(w->ptr, w->dtype, 0, w->extent_bytes());
  task.in_count = ins;
  if (draft.kernel.hidden_reads) task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;
}

uint32_t TaskBuilder::pseudo_kernel(const char* name) { return kernels_.pseudo(name); }

void TaskBuilder::output_states(ContextState& cs, nanscope_scan_task& task, bool judged) {
  task.buffer_state = cs.buffer_states();
  for (uint32_t b = 0; b < task.buffer_count; ++b) {
    const DType dt = static_cast<DType>(task.buffers[b].dtype);
    task.out_state[b] =
        cs.slots().ref_for_output(task.buffers[b].ptr, dt, task.buffers[b].elements * dtype_size(dt), task.launch_id,
                                  allocs_.type_epoch());
    if (judged && !allocs_.opaque().empty()) allocs_.opaque().forget(task.buffers[b].ptr);
  }
}

uint64_t TaskBuilder::watched_scan(uint64_t dst, ContextState& cs, nanscope_scan_task& task, uint32_t kernel_id) {
  if (!watches_.any()) return 0;
  const KernelInfo* k = kernels_.by_id(kernel_id);
  if (!k) return 0;
  const auto snapshot = watches_.snapshot();
  LaunchRecord none(*k, LaunchArgs{});
  TaskDraft draft(none, cs, task, watches_, counters_, log_);
  WatchRegistry::for_each_containing(*snapshot, dst, [&](const WatchEntry& e) { draft.add_rows(e.spec, e.id, kCopyArg); });
  task.buffer_count = draft.count();
  return draft.count() ? std::max<uint64_t>(draft.max_bytes(), 1) : 0;
}

bool TaskBuilder::touches_watch(const KernelInfo& k, const LaunchArgs& a) const {
  if (!watches_.any()) return false;
  if (!k.params_known) return true;  // its words are unknown: when unsure, scan
  const AddressRange span = allocs_.span();
  thread_local std::vector<uint64_t> words;
  words.clear();
  for (uint32_t i = 0; i < k.params.size(); ++i)
    OpaqueWriters::candidate_words(param_bytes(a, k.params, i), k.params[i].second, span.base, span.base + span.size, words);
  const auto snapshot = watches_.snapshot();
  bool hit = false;
  for (uint64_t w : words)
    if (!hit) WatchRegistry::for_each_containing(*snapshot, w, [&](const WatchEntry&) { hit = true; });
  return hit;
}

void TaskBuilder::add_input_state(nanscope_scan_task& task, uint32_t& count, uint32_t ref) {
  for (uint32_t i = 0; i < count; ++i)
    if (task.in_state[i] == ref) return;
  if (count < NANSCOPE_ORIGIN_MAX_INPUTS) task.in_state[count++] = ref;
  else task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;  // more inputs than a task can name
}

uint32_t TaskBuilder::input_ref(ContextState& cs, CUstream stream, const nanscope_scan_task& task, uint64_t ptr,
                               DType dtype, uint64_t elements, LaunchPlan* plan) {
  const auto [ref, unjudged] = cs.slots().ref_for_input(ptr, dtype);
  if (!unjudged) return ref;
  const uint32_t queued = plan ? plan->initial_count : 0;
  maybe_initial_scan(cs, stream, task, ptr, dtype, elements, plan);
  // No initial scan (under capture, extent unknown): the launches that may have written it are
  // the reader's candidates.
  if (plan && plan->initial_count == queued && !allocs_.opaque().empty())
    if (const auto writers = allocs_.opaque().history(ptr)) plan->candidates.merge(writers->kernels());
  return ref;
}

void TaskBuilder::maybe_initial_scan(ContextState& cs, CUstream stream, const nanscope_scan_task& task, uint64_t ptr,
                                     DType dtype, uint64_t elements, LaunchPlan* plan) {
  if (!plan || dtype == DType::none || plan->initial_count >= LaunchPlan::kMaxInitial) return;
  if (plan->capture == LaunchPlan::Capture::unknown) {
    plan->capture = surely_not_capturing(stream) ? LaunchPlan::Capture::no : LaunchPlan::Capture::yes;
  }
  if (plan->capture == LaunchPlan::Capture::yes) return;
  for (uint32_t b = 0; b < task.buffer_count; ++b) {  // written in place: its state before is gone
    const nanscope_scan_buffer& out = task.buffers[b];
    if (ptr >= out.ptr && ptr < out.ptr + out.elements * dtype_size(static_cast<DType>(out.dtype))) return;
  }
  uint64_t bytes = elements * dtype_size(dtype);
  // Unknown, or only the end of an allocator pool: no initial scan (the launches that may have
  // written it become the reader's candidates, input_ref).
  if (!bytes) bytes = allocs_.scan_extent(ptr).bytes;
  if (!bytes) return;
  if (cfg_.max_scan_bytes) bytes = std::min(bytes, cfg_.max_scan_bytes);
  if (!allocs_.holds(ptr, bytes)) {
    plan->refused_extent = true;
    return;
  }
  const CandidateList writers = allocs_.opaque().history(ptr).value_or(CandidateList{});
  const auto last = writers.last();
  // Named after its last writer (ScanSubmitter::submit_initial), as its findings will be.
  const auto claimed = cs.slots().claim_initial_scan(ptr, dtype, bytes, last ? last->launch_id : 0, allocs_.type_epoch());
  if (!claimed) return;
  InitialScan& s = plan->initial[plan->initial_count++];
  s = {claimed->ptr, claimed->bytes / dtype_size(claimed->dtype), claimed->dtype, claimed->ref, last, writers};
  allocs_.opaque().forget(ptr);
}

}  // namespace nanscope

#include "eager_batcher.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tool_scope.hpp"

namespace nanscope {

uint64_t EagerBatcher::stream_key(CUstream s) {
  return s == CU_STREAM_LEGACY ? 0 : reinterpret_cast<uint64_t>(s);
}

bool EagerBatcher::holdable(const nanscope_scan_task& task, CUstream stream) {
  return task.row_aware_mask == 0 && task.buffer_count > 0 && task.buffer_count <= NANSCOPE_SCAN_MAX_BUFFERS &&
         stream != CU_STREAM_PER_THREAD;
}

EagerBatcher::Held* EagerBatcher::find(ContextState& cs, uint64_t key) {
  for (Held& h : held_)
    if (h.cs == &cs && h.model.stream == key) return &h;
  return nullptr;
}

namespace {
constexpr size_t kMaxGates = 64;  // streams whose holding is judged; apps rarely use more
}  // namespace

eager::HoldGate& EagerBatcher::gate(const ContextState& cs, uint64_t key) {
  for (Gate& g : gates_)
    if (g.cs == &cs && g.stream == key) return g.gate;
  if (gates_.size() >= kMaxGates) gates_.erase(gates_.begin());
  gates_.push_back(Gate{&cs, key, {}});
  return gates_.back().gate;
}

bool EagerBatcher::hold(ContextState& cs, CUstream stream, const nanscope_scan_task& task,
                        const std::vector<eager::Range>& reads, uint64_t now_ns) {
  std::lock_guard lock(mu_);
  Held* h = find(cs, stream_key(stream));
  // Bypassing only starts when a flush left the stream empty, and holds nothing while it lasts.
  if (!h && !eager::may_hold(gate(cs, stream_key(stream)))) return false;
  if (!h) {
    held_.push_back(Held{&cs, stream, {}, {}});
    h = &held_.back();
    h->model.stream = stream_key(stream);
    h->model.legacy = legacy(stream);
  }
  const eager::Flush f = eager::must_flush_before_join(h->model, task.buffer_count, now_ns, limits_);
  // A group shares one head (the stream its records name, the state words): a task that would
  // see another goes in a group of its own.
  const bool same_head = h->model.empty() || (h->group.stream == task.stream && h->group.buffer_state == task.buffer_state);
  if (f != eager::Flush::none || !same_head) launch(*h, f != eager::Flush::none ? f : eager::Flush::full);
  if (!append_launch(h->group, task)) {  // cannot happen after the flush above; never lose the scan
    launch(*h, eager::Flush::full);
    append_launch(h->group, task);
  }
  if (h->model.empty()) held_count_.fetch_add(1, std::memory_order_acq_rel);
  eager::hold(h->model, reads, now_ns);
  return true;
}

eager::Range EagerBatcher::held_hull() {
  std::lock_guard lock(mu_);
  eager::Range hull{~uint64_t{0}, 0};
  for (const Held& h : held_)
    for (const eager::Range& r : h.model.reads) hull.lo = std::min(hull.lo, r.lo), hull.hi = std::max(hull.hi, r.hi);
  return hull.lo < hull.hi ? hull : eager::Range{};
}

void EagerBatcher::on_event(const eager::Event& e) {
  std::lock_guard lock(mu_);
  for (Held& h : held_) {
    const eager::Flush f = eager::must_flush(h.model, e, limits_);
    if (f != eager::Flush::none) launch(h, f);
  }
  forget_empty();
}

// A stream that holds nothing is forgotten (apps create and destroy streams; the next scan held
// there starts a new entry).
void EagerBatcher::forget_empty() {
  held_.erase(std::remove_if(held_.begin(), held_.end(), [](const Held& h) { return h.model.empty(); }), held_.end());
}

void EagerBatcher::flush_context(CUcontext ctx, bool wait) {
  ToolScope scope;
  std::lock_guard lock(mu_);
  for (Held& h : held_) {
    if (ctx && h.cs->context() != ctx) continue;
    const bool had = !h.model.empty();
    if (had) launch(h, eager::Flush::context_point);
    if (!had || !wait) continue;
    cuCtxPushCurrent(h.cs->context());
    cuStreamSynchronize(h.stream);  // at teardown or exit only: the last drain must see these scans
    CUcontext popped = nullptr;
    cuCtxPopCurrent(&popped);
  }
  forget_empty();
}

// One launch for the held scans: the plain scan when one is held (as without batching), else the
// merged kernel, which publishes its launches in the order they were held.
void EagerBatcher::launch(Held& h, eager::Flush why) {
  if (h.model.empty()) return;
  ToolScope scope;  // our launch must not come back into the callback (it holds mu_)
  const uint64_t t0 = profile_.on ? steady_now_ns() : 0;
  const uint32_t launches = h.group.launch_count;
  // The flush may come from a call made while another context is current (a stream sync, exit).
  CUcontext current = nullptr;
  const bool push = cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != h.cs->context();
  if (push) cuCtxPushCurrent(h.cs->context());
  // A held stream never joins a capture (begin capture and event waits launch what it held), but
  // should one, a held eager scan must not become a node of the app's graph.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = cuStreamIsCapturing(h.stream, &capture);
  if (r == CUDA_SUCCESS && capture != CU_STREAM_CAPTURE_STATUS_NONE) r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (r == CUDA_SUCCESS) r = h.cs->launch_group(h.group, h.stream);
  if (push) {
    CUcontext popped = nullptr;
    cuCtxPopCurrent(&popped);
  }
  if (r != CUDA_SUCCESS) {
    for (uint32_t l = 0; l < launches; ++l) failures_.report(r, false);  // each counts as dropped
  } else {
    counters_.scans.fetch_add(launches, std::memory_order_relaxed);
  }
  if (r == CUDA_SUCCESS && launches > 1) {
    counters_.eager_batched.fetch_add(launches, std::memory_order_relaxed);
    counters_.eager_group_launches.fetch_add(1, std::memory_order_relaxed);
  }
  eager::on_flushed(gate(*h.cs, h.model.stream), launches, why, limits_);
  h.group = nanscope_scan_group{};
  eager::clear(h.model);
  held_count_.fetch_sub(1, std::memory_order_acq_rel);
  if (profile_.on) {
    profile_.by_reason[static_cast<unsigned>(why)].fetch_add(1, std::memory_order_relaxed);
    profile_.launches.fetch_add(1, std::memory_order_relaxed);
    profile_.launch_ns.fetch_add(steady_now_ns() - t0, std::memory_order_relaxed);
  }
}

std::string EagerBatcher::profile_line() const {
  const uint64_t n = profile_.launches.load();
  if (!profile_.on || !n) return {};
  std::string reasons;
  for (unsigned r = 1; r <= static_cast<unsigned>(eager::Flush::age); ++r)
    if (const uint64_t c = profile_.by_reason[r].load())
      reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", eager::flush_name(static_cast<eager::Flush>(r)), c);
  return fmt::format("held scans flushed by {}; group launch {:.2f} us each ({})", reasons,
                     static_cast<double>(profile_.launch_ns.load()) / n / 1000.0, n);
}

}  // namespace nanscope

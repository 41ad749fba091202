#include "finding_reporter.hpp"

#include "log_schema.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "npy_writer.hpp"
#include "safe_file.hpp"

namespace nanscope {

void FindingReporter::start() {
  drain_thread_ = std::thread([this] {
    std::unique_lock lock(wake_mu_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::microseconds(cfg_.poll_us));
      lock.unlock();
      drain_all();
      lock.lock();
    }
  });
}

void FindingReporter::drain_context(ContextState& cs) {
  cs.reader().drain([&](const Finding& f) { handle_finding(f, cs); });
}

void FindingReporter::drain_all() {
  std::lock_guard drain(drain_mu_);
  graphs_.before_drain();  // the sentinel tier: escalated replays complete before this drain
  contexts_.for_each([&](ContextState& state) {
    drain_context(state);
    if (state.reader().overflow() != 0)
      warn_once(log_, schema::Once::channel_overflow,
                fmt::format("the device->host channel was full: findings were dropped on the GPU (counted in "
                            "the summary's overflow); raise NANSCOPE_CHANNEL_RECORDS (now {})",
                            cfg_.channel_records));
  });
  graphs_.after_drain();  // ...and drained now: their windows move on
}

std::unique_ptr<ContextState> FindingReporter::retire(CUcontext ctx) {
  std::lock_guard drain(drain_mu_);
  return contexts_.remove(ctx, [&](ContextState& cs) {
    drain_context(cs);
    counters_.rescans_unchanged.fetch_add(cs.reader().unchanged(), std::memory_order_relaxed);
  });
}

std::string FindingReporter::kernel_name(uint32_t kernel_id) const {
  const KernelInfo* k = kernels_.by_id(kernel_id);
  return k ? k->demangled : "?";
}

FindingFacts FindingReporter::facts_of(const Finding& f, int device, const KernelInfo* k) {
  FindingFacts facts{f, device};
  if (k) facts.kernel = k->demangled, facts.kernel_mangled = k->mangled;
  facts.watch = finding_watch(f, needs_watch_lookup(f) ? watches_.meta(f.watch_id) : std::nullopt);
  return facts;
}

// The sentinel tier: a quiet scan node's run count is renumbered to the replay it ran in
// (docs/sentinel.md); `renumbered` holds the copy when it is.
const Finding& FindingReporter::as_replayed(const Finding& found, GraphRegistry::ReplayKind replay,
                                            Finding& renumbered) {
  if (replay != GraphRegistry::ReplayKind::quiet) return found;
  const std::optional<uint64_t> r = graphs_.quiet_replay(found);
  if (!r) return found;
  renumbered = found;
  renumbered.replay = *r;
  return renumbered;
}

void FindingReporter::handle_finding(const Finding& found, ContextState& cs) {
  const GraphRegistry::ReplayKind replay = graphs_.replay_kind(found);  // sentinel-only: no origin
  Finding renumbered;
  const Finding& f = as_replayed(found, replay, renumbered);
  const KernelInfo* k = kernels_.by_id(f.kernel_id);
  FindingFacts facts = facts_of(f, cs.device(), k);
  // An escalated replay's rescans count even when unchanged: the lineage of that replay is what
  // its window runs for (session 21: tier_replay7's watch was dropped as unchanged at replay 9,
  // and the amax reading it lost its parent and its leak).
  if (!GraphRegistry::ran_every_scan(replay) && stale_rescan(f, k && writes_arg(k->roles, f.arg))) {
    counters_.rescans_unchanged.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counters_.findings.fetch_add(1, std::memory_order_relaxed);
  counters_.nan.fetch_add(f.nan, std::memory_order_relaxed);
  counters_.pos_inf.fetch_add(f.pos_inf, std::memory_order_relaxed);
  counters_.neg_inf.fetch_add(f.neg_inf, std::memory_order_relaxed);
  const bool abort_now = aborts(f, watches_.effective(facts.watch.action));

  std::optional<lineage::DeviceFinding> lineage_input = device_finding(f, cs.device());
  // The sentinel tier: a replay that ran only the sentinels, or an eager launch outside the
  // sample's windows, read what was not all judged: its finding claims no origin.
  if (lineage_input && (replay == GraphRegistry::ReplayKind::sentinel_only ||
                        (!f.captured && eager_tier_.on() && !eager_tier_.in_window(f.launch_id))))
    lineage_input->sentinel_only = true;
  // Its launch's facts, from the slot its record names (nullopt: none filed, or evicted).
  const std::optional<LaunchFacts> launch = allocs_.launch_facts().find(f.facts_slot, f.launch_id);
  const std::optional<CandidateList> candidates = candidates_of(f, launch, lineage_input);
  // nullptr: more sites than Sites remembers; the finding is its own event, never lost.
  Site* site = cfg_.aggregate ? sites_.record(site_key(f, origin_kind(lineage_input)), f.replay) : nullptr;
  if (site && site->total > 1 && !abort_now) {
    // Its children name the event it repeats.
    const auto origin = classify(lineage_input, site->first_event, /*repeat=*/true);
    if (auto repeat = sites_.fold(*site, f, f.captured)) log_.emit(event_name::repeat, *repeat);
    on_judged(f, replay, is_fault(f, origin), site->first_event);
    return;
  }
  const bool first_at_site = !site || site->total == 1;

  if (f.captured) facts.graph_stream = graphs_.stream_of(f.graph_id);
  if (launch) facts.collective = launch->collective;
  const uint64_t id = log_.reserve_id();
  const auto origin = classify(lineage_input, id, /*repeat=*/false);
  add_launch_facts(facts, launch, candidates, origin && (origin->origin == lineage::Origin::candidate || origin->through_candidate));
  if (origin && origin->last_writer) {  // preexisting: the launch that left the values
    const lineage::Verdict::LastWriter& w = *origin->last_writer;
    facts.last_writer = CandidateFacts{kernel_name(w.kernel_id), w.launch_id, 0, python_.resolve(w.python)};
  }
  Json j = finding_event(facts, origin);
  // The first finding at each site, and the one that aborts, get a tensor dump.
  // No device copies from a fatal-signal handler; a normal exit still dumps what it drains.
  if (!cfg_.dump_dir.empty() && !in_signal_.load() && (first_at_site || abort_now))
    if (std::string path = dump_buffer(f, cs, id, j); !path.empty()) j[schema::key::dump] = path;
  log_.emit_with_id(id, event_name::nonfinite, j);
  on_judged(f, replay, is_fault(f, origin), id);
  if (site && site->total == 1) {
    site->first_event = id;
    site->identity = site_identity(f, facts.kernel);
    site->row_aware = f.row_aware;
  }
  if (origin && origin->leak) log_.warn(leak_line(facts, id, *origin));  // the moment it happens, not only in the summary
  log_.info(finding_line(facts));
  if (abort_now) abort_on_real(f, facts.kernel, facts.watch.name);
}

// The sentinel tier hears of a judged finding: a graph's (which may escalate its exec), or an
// eager launch's fault (which opens the eager sample's window at the next launch).
void FindingReporter::on_judged(const Finding& f, GraphRegistry::ReplayKind replay, bool fault, uint64_t event_id) {
  // From a fatal signal nothing runs after the drain, and the interrupted thread may hold the
  // registry's, the sample's or the slots' lock: no escalation then.
  if (in_signal_.load()) return;
  if (f.captured) return graphs_.on_judged(f, replay, fault, event_id);
  // A window opened: what launches left out of the sample wrote was never judged, so every
  // buffer's state is forgotten and the window's readers scan their inputs first. The drain holds
  // the contexts' lock (drain_all, retire).
  if (fault && eager_tier_.on_fault(counters_.launches.load(std::memory_order_relaxed) + 1))
    contexts_.for_each_held([](ContextState& cs) { cs.slots().invalidate_all(); });
}

// What escalates the sentinel tier: a fault by the verdict's rule (NaN; an infinity only under
// NANSCOPE_INF=fault), never an intended -inf mask. Without a verdict (NANSCOPE_ORIGIN=0), NaN.
bool FindingReporter::is_fault(const Finding& f, const std::optional<lineage::Verdict>& origin) const {
  if (origin) return origin->fault;
  return f.nan > 0 || (cfg_.inf_faults && (f.pos_inf > 0 || f.neg_inf > 0));
}

// Its Python line goes into the lineage with it: a later finding it left in place names it.
std::optional<CandidateList> FindingReporter::candidates_of(const Finding& f, const std::optional<LaunchFacts>& launch,
                                                           std::optional<lineage::DeviceFinding>& d) {
  if (!d) return std::nullopt;
  std::optional<CandidateList> found = attach_candidates(launch ? launch->candidates : std::nullopt, *d);
  d->python = python_of(f, launch, found);
  return found;
}

// The finding's line: its launch's (or its named writer's); a launch with none filed (a node of a
// graph built by hand, as XLA's command buffers are) takes its kernel's own line when the kernel
// names one (an XLA kernel's HLO metadata).
uint64_t FindingReporter::python_of(const Finding& f, const std::optional<LaunchFacts>& launch,
                                    const std::optional<CandidateList>& candidates) {
  if (const uint64_t key = finding_python(f.launch_id, f.kernel_id, launch, candidates)) return key;
  const KernelInfo* k = kernels_.by_id(f.kernel_id);
  return k && k->source_line ? python_.key_for(*k->source_line) : 0;
}

void FindingReporter::add_launch_facts(FindingFacts& facts, const std::optional<LaunchFacts>& launch,
                                       const std::optional<CandidateList>& candidates, bool candidate) {
  const Finding& f = facts.finding;
  facts.python = python_.resolve(python_of(f, launch, candidates));
  if (!candidate || !candidates) return;
  for (uint32_t i = 0; i < candidates->n; ++i) {
    const OpaqueWrite& w = candidates->w[i];
    facts.candidates.push_back({kernel_name(w.kernel_id), w.launch_id, w.stream, python_.resolve(w.python)});
  }
}

std::optional<lineage::Verdict> FindingReporter::classify(std::optional<lineage::DeviceFinding> d, uint64_t event_id,
                                                          bool repeat) {
  if (!d) return std::nullopt;
  d->event_id = event_id;
  d->repeat = repeat;
  std::lock_guard lock(lineage_mu_);
  return lineage_.on_device_finding(*d);
}

std::string FindingReporter::dump_buffer(const Finding& f, ContextState& cs, uint64_t event_id, const Json& event) {
  const uint64_t bytes = f.elements * dtype_size(f.dtype);
  if (dumps_ >= cfg_.dump_max || dump_bytes_ + bytes > cfg_.dump_max_bytes) {
    warn_once(log_, schema::Once::dump_budget,
              fmt::format("tensor dump budget reached (NANSCOPE_DUMP_MAX={}, NANSCOPE_DUMP_MAX_BYTES={}): later "
                          "findings are not dumped",
                          cfg_.dump_max, cfg_.dump_max_bytes));
    return {};
  }
  std::vector<unsigned char> host(bytes);
  if (std::string err = cs.copy_to_host(f.ptr, bytes, host.data()); !err.empty()) {
    warn_once(log_, schema::Once::dump_copy, "cannot copy a buffer for a tensor dump: " + err);
    return {};
  }
  // The directory was checked at start-up (config.cpp); none is created here.
  const std::string path =
      (std::filesystem::path(cfg_.dump_dir) / fmt::format("nanscope-{}-{}.npy", getpid(), event_id)).string();
  const std::vector<uint64_t> shape = dump_shape(f);
  if (std::string err = write_npy(path, f.dtype, shape, host.data(), host.size()); !err.empty()) {
    warn_once(log_, schema::Once::dump_write, err);
    return {};
  }
  const std::string sidecar = dump_sidecar(f, event_id, static_cast<long>(getpid()), event, shape).dump(2) + "\n";
  if (std::string err = write_new_file(path + ".json", sidecar); !err.empty()) warn_once(log_, schema::Once::dump_write, err);
  ++dumps_;
  dump_bytes_ += bytes;
  return path;
}

void FindingReporter::abort_on_real(const Finding& f, const std::string& kernel, const std::string& watch) {
  if (aborting_.exchange(true)) return;
  const std::string reason = abort_reason(f, kernel, watch);
  log_.emit(event_name::abort, abort_event(f, reason, watch));
  shut_down_.store(true);  // the signal handler must not write a second summary
  emit_closing_repeats();  // the caller drains under drain_mu_: what was folded so far
  write_summary(SummaryContexts::held);
  log_.flush();
  std::fprintf(stderr, "%s\n", reason.c_str());
  std::fflush(stderr);
  std::abort();  // asked for by the user (action abort): stop the process with SIGABRT
}

SummaryFigures FindingReporter::figures(const Contexts::ChannelTotals& channels) const {
  SummaryFigures s;
  s.launches = counters_.launches.load();
  s.scans = counters_.scans.load();
  s.findings = counters_.findings.load();
  s.kernels_inspected = kernels_.inspected_count();
  s.kernels_not_inspected = kernels_.not_inspected_count();
  s.scans_dropped = counters_.dropped.load();
  s.scans_overlapped = counters_.scans_overlapped.load();
  s.scans_merged = counters_.scans_merged.load();
  s.edges_programmatic = counters_.edges_programmatic.load();
  s.eager_batched = counters_.eager_batched.load();
  s.eager_batches = counters_.eager_group_launches.load();
  s.overflow = channels.overflow;
  s.corrupt = channels.corrupt;
  s.unchanged = counters_.rescans_unchanged.load() + channels.unchanged;
  const PythonFrames::Cost line = python_.cost();
  s.python_captures = line.captures;
  s.python_ns = line.ns;
  s.nan = counters_.nan.load();
  s.pos_inf = counters_.pos_inf.load();
  s.neg_inf = counters_.neg_inf.load();
  s.duration_ns = wall_clock_ns() - start_ns_;
  return s;
}

// Where typed and Triton extents came from: PyTorch's caching-allocator blocks, or why not.
Json FindingReporter::tensor_extents_json() {
  TorchBlockTracker& torch = allocs_.torch();
  namespace tk = schema::tensor_extents_key;
  Json j{{tk::torch, TorchBlockTracker::state_name(torch.state())}};
  if (!torch.torch_version().empty()) j[tk::torch_version] = torch.torch_version();
  if (!torch.reason().empty()) j[tk::reason] = torch.reason();
  if (torch.state() == TorchBlockTracker::State::kAttached) {
    const TensorBlockStats b = torch.stats();
    j[tk::blocks_live] = b.live;
    j[tk::blocks_seen] = b.allocs + b.seeded;
    j[tk::blocks_dropped] = b.dropped;
  }
  j[tk::opaque_buffers] = allocs_.opaque().size();
  return j;
}

void FindingReporter::write_summary(SummaryContexts contexts) {
  Contexts::ChannelTotals channels;
  if (contexts == SummaryContexts::lock) channels = contexts_.channel_totals();
  else if (contexts == SummaryContexts::held) channels = contexts_.channel_totals_held();
  const SummaryFigures s = figures(channels);
  // Origins: try-lock only, a fatal-signal flush may have interrupted a drain holding it.
  std::unique_lock lineage_lock(lineage_mu_, std::try_to_lock);
  const bool have_origins = lineage_lock.owns_lock();
  const lineage::Summary origins = have_origins ? lineage_.summary() : lineage::Summary{};
  if (have_origins) lineage_lock.unlock();
  const KernelName name = [this](uint32_t id) { return kernel_name(id); };
  Json summary = summary_event(s, cfg_.origin ? std::optional<Json>(origins_json(origins, name)) : std::nullopt);
  if (cfg_.origin && have_origins) add_verdict_totals(summary, origins);
  summary[schema::key::coverage] = counters_.coverage.to_json();
  summary[schema::key::tensor_extents] = tensor_extents_json();
  log_.emit(event_name::summary, summary);
  for (const std::string& line : cause_lines(origins, name, cfg_.inf_faults)) log_.info(line);
  log_.info(summary_line(s));
}

// The folded remainder of every site, so that the `nonfinite` and `repeat` events of the log add
// up to the summary's totals. Callers hold drain_mu_.
void FindingReporter::emit_closing_repeats() {
  for (const Json& r : sites_.closing()) log_.emit(event_name::repeat, r);
}

void FindingReporter::shutdown() {
  if (shut_down_.exchange(true)) return;
  if (drain_thread_.joinable()) {
    {
      std::lock_guard lock(wake_mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    drain_thread_.join();
  }
  // Work the app left in flight may still publish: give it a moment, without any CUDA call.
  graphs_.stop_event_queries();
  drain_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  drain_all();
  {
    std::lock_guard drain(drain_mu_);
    emit_closing_repeats();
    graphs_.at_exit();  // escalation windows that did not drain
  }
  write_summary();
  log_.flush();
}

void FindingReporter::emergency_flush() {
  in_signal_.store(true);
  if (shut_down_.exchange(true)) return;
  // No joins, no waits: the process is dying, and the thread we interrupted may hold any of our
  // locks, so only try them. Without the context lock the summary leaves the channel counts out.
  auto contexts = contexts_.try_lock_shared();
  if (contexts.owns_lock() && drain_mu_.try_lock()) {
    contexts_.for_each_held([&](ContextState& state) { drain_context(state); });
    emit_closing_repeats();  // the summary's totals include what was folded: so must the log
    drain_mu_.unlock();
  }
  write_summary(contexts.owns_lock() ? SummaryContexts::held : SummaryContexts::skip);
  log_.flush();
}

}  // namespace nanscope

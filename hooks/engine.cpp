#include "engine.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "nanscope/version.h"
#include "npy_writer.hpp"
#include "tool_scope.hpp"

namespace nanscope {

std::atomic<Engine*> Engine::instance_{nullptr};

namespace {

const char* attach_name(nanscope_attach_t a) {
  switch (a) {
    case NANSCOPE_ATTACH_INJECTION: return "injection";
    case NANSCOPE_ATTACH_PRELOAD: return "preload";
    default: return "linked";
  }
}

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

std::string program_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

std::string error_name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : fmt::format("CUresult {}", static_cast<int>(r));
}

Engine::Engine(Config cfg, nanscope_attach_t attach)
    : cfg_(std::move(cfg)),
      attach_(attach),
      start_ns_(wall_clock_ns()),
      kernels_(cfg_.kernel_filter, cfg_.kernel_exclude, &rules_) {
  std::string log_error;
  log_ = std::make_unique<EventLog>(EventLogOptions{cfg_.log_path, cfg_.console, cfg_.level}, &log_error);
  if (!log_error.empty()) log_->warn(log_error + "; JSON log disabled, console only");
  if (!cfg_.rules_path.empty()) {
    RulesResult loaded = load_rules(cfg_.rules_path);
    for (const auto& err : loaded.errors) {
      log_->warn(err);
      log_->emit("warning", Json{{"what", "rules"}, {"message", err}});
    }
    rules_ = std::move(loaded.file.rules);
    for (uint32_t i = 0; i < rules_.size(); ++i) watch_meta_[kRuleWatchBit | i] = {rules_[i].name, rules_[i].action};
    log_->info(fmt::format("{} rule(s) loaded from NANSCOPE_RULES={}", rules_.size(), cfg_.rules_path));
  }
}

nanscope_status_t Engine::init(nanscope_attach_t attach) {
  static std::once_flag once;
  static nanscope_status_t status = NANSCOPE_SUCCESS;
  std::call_once(once, [attach] {
    ConfigResult parsed = parse_config_from_environment();
    if (!parsed.config.enabled) {
      status = NANSCOPE_ERROR_UNAVAILABLE;
      return;
    }
    auto* e = new Engine(std::move(parsed.config), attach);  // lives until the process ends
    for (const auto& err : parsed.errors) e->log_->warn(err);
    e->log_->info(fmt::format("nanscope {} attached ({}): {}", NANSCOPE_VERSION_STRING,
                              attach_name(attach), e->cfg_.describe()));
    Json start;
    start["version"] = NANSCOPE_VERSION_STRING;
    start["attach"] = attach_name(attach);
    start["config"] = {{"mode", mode_name(e->cfg_.mode)},
                       {"log", e->cfg_.log_path},
                       {"level", e->cfg_.level},
                       {"kernel_filter", e->cfg_.kernel_filter},
                       {"kernel_exclude", e->cfg_.kernel_exclude},
                       {"channel_records", e->cfg_.channel_records},
                       {"max_captured_scans", e->cfg_.max_captured_scans},
                       {"poll_us", e->cfg_.poll_us},
                       {"max_scan_bytes", e->cfg_.max_scan_bytes},
                       {"typed", e->cfg_.typed},
                       {"origin", e->cfg_.origin},
                       {"aggregate", e->cfg_.aggregate},
                       {"rules", e->cfg_.rules_path}};
    if (!parsed.errors.empty()) start["config_errors"] = parsed.errors;
    start["argv0"] = program_name();
    e->log_->emit("start", start);
    if (!e->subscribe()) {
      status = NANSCOPE_ERROR_UNAVAILABLE;
      e->log_->flush();
      instance_.store(e, std::memory_order_release);  // keeps the C API answering
      return;
    }
    e->drain_thread_ = std::thread([e] {
      std::unique_lock lock(e->wake_mu_);
      while (!e->stopping_) {
        e->wake_.wait_for(lock, std::chrono::microseconds(e->cfg_.poll_us));
        lock.unlock();
        e->drain_all();
        lock.lock();
      }
    });
    instance_.store(e, std::memory_order_release);
  });
  return status;
}

bool Engine::subscribe() {
  CUptiResult r = cuptiSubscribe(&subscriber_, cupti_callback, this);
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    subscriber_ = nullptr;
    const std::string msg = fmt::format(
        "cannot subscribe to CUPTI ({}){}; the program runs on without nanscope", s ? s : "?",
        r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            ? ": another CUPTI tool (a profiler such as the PyTorch profiler or Nsight) holds it"
            : "");
    log_->warn(msg);
    log_->emit("warning", Json{{"what", "cupti_subscribe"}, {"message", msg}});
    return false;
  }
  // Only the callbacks we need: a serving process makes millions of driver calls.
  static const CUpti_CallbackId driver_cbids[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap,
      CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
      CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
      CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
  };
  for (CUpti_CallbackId id : driver_cbids)
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (cfg_.origin)  // copies and sets change tracked buffers' states
    for (CUpti_CallbackId id : copy_cbids()) cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  for (CUpti_CallbackId id : {CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING,
                              CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING})
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, id);
  return true;
}

void Engine::warn_once(std::atomic<bool>& flag, const std::string& what, const std::string& message) {
  if (flag.exchange(true)) return;
  log_->warn(message);
  log_->emit("warning", Json{{"what", what}, {"message", message}});
}

ContextState* Engine::context_for(CUcontext ctx) {
  {
    std::shared_lock lock(ctx_mu_);
    auto it = contexts_.find(ctx);
    if (it != contexts_.end()) return it->second.get();
    if (failed_contexts_.count(ctx)) return nullptr;
  }
  // First launch in this context: load our module and channel. Done outside the shared lock;
  // a second thread racing here builds a spare that is dropped.
  ContextLimits limits{cfg_.channel_records, 4096, cfg_.max_captured_scans, cfg_.origin};
  auto state = std::make_unique<ContextState>(ctx, limits);
  std::unique_lock lock(ctx_mu_);
  if (auto it = contexts_.find(ctx); it != contexts_.end()) return it->second.get();
  if (!state->ok()) {
    failed_contexts_[ctx] = state->error();
    lock.unlock();
    warn_once(warned_context_, "context_setup",
              "cannot set up scanning in a CUDA context (" + state->error() +
                  "); kernels in it are not scanned");
    return nullptr;
  }
  return (contexts_[ctx] = std::move(state)).get();
}

std::optional<AddressRange> Engine::extent(uint64_t ptr) {
  if (auto r = allocs_.find(ptr)) return r;
  // Allocated before we attached, or through a path we do not hook.
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cuMemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return std::nullopt;
  allocs_.insert(base, size);
  return AddressRange{base, size};
}


Action Engine::effective_action(Action declared) const {
  // NANSCOPE_MODE=fix|abort applies to every watch and rule that did not ask for more.
  if (declared != Action::detect) return declared;
  return cfg_.mode == Mode::fix ? Action::fix : cfg_.mode == Mode::abort ? Action::abort : Action::detect;
}

// NaN origin: which state words the scan updates (its buffers) and reads (the launch's tracked
// inputs, judged on the device as they were before the launch).
void Engine::add_origin(const KernelInfo& k, const LaunchArgs& a, ContextState& cs, nanscope_scan_task& task,
                        uint32_t n, const std::vector<const WatchSpec*>& watch_inputs) {
  BufferSlots& slots = cs.slots();
  task.buffer_state = cs.buffer_states();
  for (uint32_t b = 0; b < n; ++b) {
    const DType dt = static_cast<DType>(task.buffers[b].dtype);
    task.out_state[b] = slots.ref_for(task.buffers[b].ptr, dt, task.buffers[b].elements * dtype_size(dt));
  }
  uint32_t ins = 0;
  auto add_input = [&](uint32_t ref) {
    for (uint32_t i = 0; i < ins; ++i)
      if (task.in_state[i] == ref) return;
    if (ins < NANSCOPE_ORIGIN_MAX_INPUTS) task.in_state[ins++] = ref;
    else task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;  // more inputs than a task can name
  };
  for (const OutputParam& in : k.inputs) {
    const char* param = param_bytes(a, k.params, in.arg);
    uint64_t ptr = 0;
    if (param) std::memcpy(&ptr, param, sizeof(ptr));
    if (ptr) add_input(slots.ref_for(ptr, in.dtype));
  }
  for (const WatchSpec* w : watch_inputs)
    add_input(slots.ref_for(w->ptr, w->dtype, w->extent_bytes()));
  task.in_count = ins;
  if (k.hidden_reads) task.origin_flags |= NS_ORIGIN_READS_UNTRACKED;
}

void Engine::on_launch(const CUpti_CallbackData& cb, CUpti_CallbackId cbid) {
  LaunchArgs a;
  if (!decode_launch(cbid, cb.functionParams, a)) return;
  const uint64_t launch_id = launches_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (cb.functionReturnValue && *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS)
    return;  // the kernel did not run; its error is the app's to see

  const KernelInfo& k = kernel_info(a.function, cb.symbolName);
  if (!worth_a_look(k)) return;

  ToolScope scope;  // everything below is our own driver work
  ContextState* cs = context_for(cb.context);
  if (!cs) return;
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  if (!build_task(k, a, *cs, task, max_bytes)) return;
  task.launch_id = launch_id;
  task.correlation_id = cb.correlationId;

  submit_scan(*cs, task, a.stream, max_bytes);
}

// Launches the scan of `task` on `stream` right after the app's work there; inside a stream
// capture it becomes the next graph node.
void Engine::submit_scan(ContextState& ctx, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes) {
  ContextState* cs = &ctx;
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
    std::lock_guard lock(graph_mu_);
    task.graph_id = capture_id;
    task.graph_node = graph_nodes_[capture_id]++;
  }
  const CUresult r = cs->launch_scan(task, stream, captured, max_bytes);
  if (r == CUDA_SUCCESS) {
    scans_.fetch_add(1, std::memory_order_relaxed);
    if (app_node) {
      // Remember which captured node our scan follows, so later parameter updates reach it.
      const CUgraphNode* after = nullptr;
      size_t nafter = 0;
      if (cuStreamGetCaptureInfo(stream, &capture, &capture_id, nullptr, &after, nullptr, &nafter) ==
              CUDA_SUCCESS && nafter == 1) {
        std::lock_guard lock(graph_mu_);
        scan_after_[app_node] = {after[0], reinterpret_cast<CUdeviceptr>(task.accum), task.graph_id, task.graph_node};
      }
    }
    return;
  }
  report_scan_failure(r, captured);
}

const KernelInfo& Engine::kernel_info(void* handle, const char* symbol_name) {
  bool is_new = false;
  const KernelInfo& k = kernels_.resolve(handle, symbol_name, is_new);
  if (is_new && !k.inspected) {  // said once per kernel
    {
      std::lock_guard lock(not_inspected_mu_);
      if (!not_inspected_.insert(k.mangled).second) return k;
    }
    log_->emit("not_inspected", Json{{"kernel", k.demangled}, {"kernel_mangled", k.mangled}, {"reason", k.reason}});
    if (log_->debug_enabled()) log_->debug(fmt::format("not inspected: {} ({})", k.demangled, k.reason));
  }
  return k;
}

ContextState* Engine::current_context() {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return nullptr;
  return context_for(ctx);
}

bool Engine::worth_a_look(const KernelInfo& k) const {
  if (k.excluded) return false;
  return (cfg_.typed && k.inspected) || !k.rules.empty() || (!watches_.empty() && k.params_known);
}

void Engine::report_scan_failure(CUresult r, bool captured) {
  dropped_.fetch_add(1, std::memory_order_relaxed);
  if (captured && r == CUDA_ERROR_OUT_OF_MEMORY)
    warn_once(warned_capture_pool_, "captured_scans",
              fmt::format("NANSCOPE_MAX_CAPTURED_SCANS={} reached: later kernels captured into graphs "
                          "are not scanned (counted as scans_dropped)",
                          cfg_.max_captured_scans));
  else
    warn_once(warned_launch_, "scan_launch",
              fmt::format("a scan could not be launched or added to a graph ({}); such scans are skipped and "
                          "counted as scans_dropped",
                          error_name(r)));
}

bool Engine::build_task(const KernelInfo& k, const LaunchArgs& a, ContextState& ctx, nanscope_scan_task& task,
                        uint64_t& max_bytes) {
  ContextState* cs = &ctx;
  const bool check_watches = !watches_.empty() && k.params_known;
  uint32_t n = 0;
  auto full = [&] {
    if (n < NANSCOPE_SCAN_MAX_BUFFERS) return false;
    warn_once(warned_buffers_, "scan_buffers",
              fmt::format("a launch of {} references more than {} scanned buffers; the rest are skipped",
                          k.demangled, NANSCOPE_SCAN_MAX_BUFFERS));
    return true;
  };
  // `inferred`: rows guessed from the global spec; never fixed, never aborts, only reported.
  // `quiet`: an API watch referenced by a parameter not known to be written; a rescan that finds
  // it unchanged is counted on the device instead of posted (the host would drop it anyway).
  auto add_row_aware = [&](const WatchSpec& w, uint32_t watch_id, uint32_t arg, bool inferred = false,
                           bool quiet = false) {
    for (uint32_t i = 0; i < n; ++i)
      if (((task.row_aware_mask >> i) & 1u) && task.row_specs[i].watch_id == watch_id) return;
    if (full()) return;
    const CUdeviceptr bitmap = cs->row_bitmap(watch_id, w.rows);
    if (!bitmap) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const uint64_t elements = w.extent_bytes() / dtype_size(w.dtype);
    task.buffers[n] = {w.ptr, elements, static_cast<uint32_t>(w.dtype), arg};
    nanscope_row_spec& rs = task.row_specs[n];
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
    const Action action = effective_action(w.action);
    rs.fix = !inferred && (action == Action::fix || action == Action::zero_padding);
    rs.zero_only = rs.fix && action == Action::zero_padding;
    // Rows that start 16-byte aligned are walked row by row: one status lookup per chunk.
    rs.chunked = w.ptr % 16 == 0 && (w.stride() * dtype_size(w.dtype)) % 16 == 0;
    rs.watch_id = watch_id;
    rs.quiet_unchanged = quiet;
    task.row_aware_mask |= 1u << n;
    max_bytes = std::max(max_bytes, elements * dtype_size(w.dtype));
    ++n;
  };

  // 1. Rules: the kernel's own parameters say where the output and its padding are.
  for (uint32_t ri : k.rules) {
    const Rule& rule = rules_[ri];
    const ParamReader read = [&](uint32_t param, uint32_t offset, void* out, size_t bytes) {
      const char* base = param_bytes(a, k.params, param);
      if (!base || offset + bytes > k.params[param].second) return false;
      std::memcpy(out, base + offset, bytes);
      return true;
    };
    std::string error;
    if (auto w = resolve(rule, read, &error)) add_row_aware(*w, kRuleWatchBit | ri, rule.output.ptr.param);
    else warn_rule(ri, error);
  }
  // 2. Watches: any 8-byte word of any parameter that points into a watched buffer. A watched
  // buffer the launch may read is also an input for the NaN origin.
  std::vector<const WatchSpec*> watch_inputs;  // into `snapshot`, which outlives them
  decltype(watches_.snapshot()) snapshot;
  if (check_watches) {
    snapshot = watches_.snapshot();
    for (uint32_t i = 0; i < k.params.size(); ++i) {
      const ParamRole param_role = i < k.roles.size() ? k.roles[i] : ParamRole::other;
      const char* bytes = param_bytes(a, k.params, i);
      if (!bytes) continue;
      for (uint32_t off = 0; off + 8 <= k.params[i].second; off += 8) {
        uint64_t v = 0;
        std::memcpy(&v, bytes + off, sizeof(v));
        if (!v) continue;
        // In PyTorch's std::array<char*, N> only the first pointer is the output.
        const ParamRole role =
            static_cast<int32_t>(i) == k.output_first_array ? (off == 0 ? ParamRole::output : ParamRole::input) : param_role;
        // A pointer to const (`float const*`, `void const*`) is read, not written: the buffer
        // cannot have changed.
        const bool may_write = role == ParamRole::output || k.may_write_through(i, off);
        WatchRegistry::for_each_containing(*snapshot, v, [&](const WatchEntry& e) {
          if (role != ParamRole::output) watch_inputs.push_back(&e.spec);
          if (may_write) add_row_aware(e.spec, e.id, i, false, role != ParamRole::output);
        });
      }
    }
  }
  // 3. Typed outputs not already covered by a row-aware scan.
  const auto global = std::atomic_load(&global_padding_);
  static const std::vector<OutputParam> kNoOutputs;
  for (const OutputParam& out : cfg_.typed ? k.outputs : kNoOutputs) {  // NANSCOPE_TYPED=0: none
    const char* param = param_bytes(a, k.params, out.arg);
    if (!param) continue;
    uint64_t ptr = 0;
    std::memcpy(&ptr, param, sizeof(ptr));
    if (ptr == 0) continue;
    bool covered = false;
    for (uint32_t i = 0; i < n && !covered; ++i)
      covered = ((task.row_aware_mask >> i) & 1u) && ptr >= task.buffers[i].ptr &&
                ptr < task.buffers[i].ptr + task.buffers[i].elements * dtype_size(static_cast<DType>(task.buffers[i].dtype));
    if (covered) continue;
    const auto range = extent(ptr);
    if (!range) continue;  // not device memory we can scan (host pointer, freed, foreign)
    uint64_t bytes = range->base + range->size - ptr;
    if (cfg_.max_scan_bytes) bytes = std::min(bytes, cfg_.max_scan_bytes);
    const uint64_t elements = bytes / dtype_size(out.dtype);
    if (elements == 0 || full()) continue;
    if (global && global->rows && elements % global->rows == 0) {
      // Rows inferred from the global spec: only when the element count divides evenly.
      WatchSpec w;
      w.ptr = ptr;
      w.dtype = out.dtype;
      w.rows = global->rows;
      w.row_elements = elements / global->rows;
      w.padding = *global;
      add_row_aware(w, kGlobalWatchBit | out.arg, out.arg, /*inferred=*/true);
      continue;
    }
    task.buffers[n++] = {ptr, elements, static_cast<uint32_t>(out.dtype), out.arg};
    max_bytes = std::max(max_bytes, bytes);
  }
  if (n == 0) return false;
  if (cs->buffer_states()) add_origin(k, a, *cs, task, n, watch_inputs);
  task.buffer_count = n;
  task.kernel_id = k.id;
  task.stream = reinterpret_cast<uint64_t>(a.stream);
  return true;
}

void Engine::warn_rule(uint32_t rule_index, const std::string& error) {
  {
    std::lock_guard lock(meta_mu_);
    if (!warned_rules_.insert(rule_index).second) return;
  }
  const std::string msg = error + " (said once per rule; launches it cannot resolve are not scanned by it)";
  log_->warn(msg);
  log_->emit("warning", Json{{"what", "rule"}, {"message", msg}});
}

uint32_t Engine::add_watch(WatchSpec spec) {
  const std::string name = spec.name;
  const Action action = spec.action;
  const uint32_t id = watches_.add(std::move(spec));
  std::lock_guard lock(meta_mu_);
  watch_meta_[id] = {name, action};
  return id;
}

bool Engine::remove_watch(uint32_t id) { return watches_.remove(id); }

void Engine::set_global_padding(std::optional<PaddingSpec> spec) {
  std::atomic_store(&global_padding_, spec ? std::make_shared<const PaddingSpec>(*spec) : nullptr);
}

uint64_t Engine::graph_id_for(CUgraph graph) {
  std::lock_guard lock(graph_mu_);
  auto [it, fresh] = graph_ids_.try_emplace(graph, 0);
  if (fresh) it->second = next_graph_id_++;
  return it->second;
}

void Engine::on_end_capture(CUstream stream) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  if (cuStreamGetCaptureInfo(stream, &st, &id, &graph, nullptr, nullptr, nullptr) != CUDA_SUCCESS || !graph) return;
  std::lock_guard lock(graph_mu_);
  graph_ids_[graph] = id;  // findings in it already carry the capture id
}

void Engine::on_graph_instantiate(CUgraph graph) {
  if (!graph) return;
  ToolScope scope;
  ContextState* cs = current_context();
  if (!cs) return;
  instrument_graph(graph, graph_id_for(graph), *cs, 0);
  overlap_scans(graph, *cs);
}

void Engine::instrument_graph(CUgraph g, uint64_t graph_id, ContextState& cs, int depth) {
  size_t count = 0;
  if (cuGraphGetNodes(g, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
  std::vector<CUgraphNode> nodes(count);
  if (cuGraphGetNodes(g, nodes.data(), &count) != CUDA_SUCCESS) return;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && depth < 16) {
      CUgraph child = nullptr;
      if (cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS) instrument_graph(child, graph_id, cs, depth + 1);
      continue;
    }
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    {
      std::lock_guard lock(graph_mu_);
      if (scan_after_.count(node) || scan_nodes_.count(node)) continue;  // done, or ours
    }
    CUDA_KERNEL_NODE_PARAMS p{};
    if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) continue;
    if (p.func && cs.owns(p.func)) continue;  // a scan captured from a stream
    void* handle = p.func ? static_cast<void*>(p.func) : static_cast<void*>(p.kern);
    if (!handle) continue;
    const KernelInfo& k = kernel_info(handle, nullptr);
    if (!worth_a_look(k)) continue;
    size_t ndeps = 0;
    cuGraphNodeGetDependentNodes(node, nullptr, nullptr, &ndeps);
    std::vector<CUgraphNode> dependents(ndeps);
    if (ndeps && cuGraphNodeGetDependentNodes(node, dependents.data(), nullptr, &ndeps) != CUDA_SUCCESS) continue;
    bool scanned = false;  // a scan captured right after it, that capture did not let us record
    for (CUgraphNode d : dependents) {
      CUDA_KERNEL_NODE_PARAMS dp{};
      CUgraphNodeType dt;
      scanned |= cuGraphNodeGetType(d, &dt) == CUDA_SUCCESS && dt == CU_GRAPH_NODE_TYPE_KERNEL &&
                 cuGraphKernelNodeGetParams(d, &dp) == CUDA_SUCCESS && dp.func && cs.owns(dp.func);
    }
    if (scanned) continue;
    nanscope_scan_task task{};
    uint64_t max_bytes = 0;
    if (!build_task(k, LaunchArgs{handle, nullptr, p.kernelParams, p.extra}, cs, task, max_bytes)) continue;
    {
      std::lock_guard lock(graph_mu_);
      task.graph_id = graph_id;
      task.graph_node = graph_nodes_[graph_id]++;
    }
    if (!cs.prepare_task(task, /*captured=*/true)) {
      report_scan_failure(CUDA_ERROR_OUT_OF_MEMORY, true);
      continue;
    }
    ContextState::ScanArgs args;
    const CUDA_KERNEL_NODE_PARAMS sp = cs.node_params(task, args, max_bytes);
    CUgraphNode scan = nullptr;
    const CUresult r = cuGraphAddKernelNode(&scan, g, &node, 1, &sp);
    if (r != CUDA_SUCCESS) {
      report_scan_failure(r, true);
      continue;
    }
    // The kernel's dependents now wait for the scan (and, through it, for the kernel).
    for (CUgraphNode d : dependents)
      if (cuGraphRemoveDependencies(g, &node, &d, nullptr, 1) == CUDA_SUCCESS)
        cuGraphAddDependencies(g, &scan, &d, nullptr, 1);
    scans_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(graph_mu_);
    scan_after_[node] = {scan, reinterpret_cast<CUdeviceptr>(task.accum), task.graph_id, task.graph_node};
    scan_nodes_[scan] = true;
  }
}

void Engine::on_graph_instantiated(CUgraphExec exec, CUgraph graph) {
  std::lock_guard lock(graph_mu_);
  auto it = graph_ids_.find(graph);
  if (it != graph_ids_.end()) exec_graph_ids_[exec] = it->second;
}

void Engine::on_kernel_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p, bool v1) {
  if (!p) return;
  ScanNode sn;
  {
    std::lock_guard lock(graph_mu_);
    auto it = scan_after_.find(node);
    if (it == scan_after_.end()) return;
    sn = it->second;
  }
  ToolScope scope;
  ContextState* cs = current_context();
  if (!cs) return;
  void* handle = p->func ? static_cast<void*>(p->func) : v1 ? nullptr : static_cast<void*>(p->kern);
  if (!handle) return;
  const KernelInfo& k = kernel_info(handle, nullptr);
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  // New parameters with nothing to scan leave an empty scan: the node must stay.
  if (worth_a_look(k)) build_task(k, LaunchArgs{handle, nullptr, p->kernelParams, p->extra}, *cs, task, max_bytes);
  task.kernel_id = k.id;
  task.graph_id = sn.graph_id;
  task.graph_node = sn.graph_node;
  cs->prepare_task(task, true, sn.accum);
  warn_if_overlap_stale(sn.node, task, *cs);
  if (sn.group_launch != ScanNode::kAlone) {
    update_group_member(exec, sn, task, *cs);
    return;
  }
  bool beside;
  {
    std::lock_guard lock(graph_mu_);
    beside = detached_.count(sn.node) != 0;
  }
  ContextState::ScanArgs args;
  const CUDA_KERNEL_NODE_PARAMS sp = cs->node_params(task, args, max_bytes, beside);
  const CUresult r = exec ? cuGraphExecKernelNodeSetParams(exec, sn.node, &sp) : cuGraphKernelNodeSetParams(sn.node, &sp);
  if (r != CUDA_SUCCESS)
    warn_once(warned_graph_, "graph_update",
              fmt::format("a scan node could not follow a kernel node's new parameters ({}); it keeps scanning "
                          "the old buffers",
                          error_name(r)));
}

void Engine::on_graph_launch(CUgraphExec exec, CUstream stream) {
  std::lock_guard lock(graph_mu_);
  auto it = exec_graph_ids_.find(exec);
  if (it != exec_graph_ids_.end()) graph_streams_[it->second] = reinterpret_cast<uint64_t>(stream);
}

void Engine::on_graph_node_destroy(CUgraphNode node) {
  std::lock_guard lock(graph_mu_);
  scan_after_.erase(node);
  scan_nodes_.erase(node);
  detached_.erase(node);
}

void Engine::on_graph_destroy(CUgraph graph) {
  std::lock_guard lock(graph_mu_);
  graph_ids_.erase(graph);
}

void Engine::forget_group_tasks(CUgraphExec exec) {
  for (auto it = group_tasks_.lower_bound({exec, nullptr}); it != group_tasks_.end() && it->first.first == exec;)
    it = group_tasks_.erase(it);
}

void Engine::on_graph_exec_update(CUgraphExec exec) {
  if (!exec) return;
  std::lock_guard lock(graph_mu_);
  forget_group_tasks(exec);
  updated_execs_.insert(exec);
}

void Engine::on_graph_exec_destroy(CUgraphExec exec) {
  std::lock_guard lock(graph_mu_);
  exec_graph_ids_.erase(exec);
  forget_group_tasks(exec);
  updated_execs_.erase(exec);
}

void Engine::on_mem_alloc(CUpti_CallbackId cbid, const void* params) {
  CUdeviceptr* dptr = nullptr;
  uint64_t size = 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      auto* p = static_cast<const cuMemAlloc_v2_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* p = static_cast<const cuMemAllocPitch_v2_params*>(params);
      dptr = p->dptr, size = p->pPitch ? *p->pPitch * p->Height : 0;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* p = static_cast<const cuMemAllocManaged_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      auto* p = static_cast<const cuMemAllocAsync_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(params);
      dptr = p->dptr, size = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto* p = static_cast<const cuMemMap_params*>(params);
      allocs_.insert(p->ptr, p->size);
      return;
    }
    default: return;
  }
  if (dptr && *dptr) allocs_.insert(*dptr, size);
}

// A copy or memset into a buffer whose state is tracked: rescan it on the same stream, so its
// device state word stays true. Host copies and sets are an origin of their own ("host"); a
// device copy carries its source's lineage.
void Engine::on_copy(const CopyArgs& c, const CUpti_CallbackData& cb) {
  if (!cfg_.origin || c.bytes == 0) return;
  ToolScope scope;
  ContextState* cs = context_for(cb.context);
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
  if (c.kind == CopyArgs::Kind::unified) from_device = cs->slots().containing(c.src) || extent(c.src);
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

void Engine::on_mem_free(CUpti_CallbackId cbid, const void* params) {
  // Buffers inside the freed allocation give their origin slots back (a new allocation at the
  // same address starts unknown, not with the old buffer's state).
  auto forget = [&](uint64_t ptr) {
    const auto range = allocs_.find(ptr);
    if (!range) return;
    std::shared_lock lock(ctx_mu_);
    for (auto& [ctx, state] : contexts_) state->slots().forget_range(range->base, range->size);
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: forget(static_cast<const cuMemFree_v2_params*>(params)->dptr); break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      forget(static_cast<const cuMemFreeAsync_params*>(params)->dptr);
      break;
    default: break;
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      allocs_.erase(static_cast<const cuMemFree_v2_params*>(params)->dptr);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      allocs_.erase(static_cast<const cuMemFreeAsync_params*>(params)->dptr);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto* p = static_cast<const cuMemUnmap_params*>(params);
      allocs_.erase_range(p->ptr, p->size);
      break;
    }
    default: break;
  }
}

void Engine::on_context_destroy(CUcontext ctx) {
  std::unique_ptr<ContextState> dying;
  {
    std::lock_guard drain(drain_mu_);
    std::unique_lock lock(ctx_mu_);
    failed_contexts_.erase(ctx);
    auto it = contexts_.find(ctx);
    if (it == contexts_.end()) return;
    drain_context(*it->second);
    rescans_unchanged_.fetch_add(it->second->reader().unchanged(), std::memory_order_relaxed);
    dying = std::move(it->second);
    contexts_.erase(it);
  }
  ToolScope scope;
  dying.reset();
}

void Engine::drain_context(ContextState& cs) {
  cs.reader().drain([&](const Finding& f) { handle_finding(f, cs); });
}

void Engine::drain_all() {
  std::lock_guard drain(drain_mu_);
  std::shared_lock lock(ctx_mu_);
  for (auto& [ctx, state] : contexts_) {
    drain_context(*state);
    if (state->reader().overflow() != 0)
      warn_once(warned_overflow_, "channel_overflow",
                fmt::format("the device->host channel was full: findings were dropped on the GPU (counted in "
                            "the summary's overflow); raise NANSCOPE_CHANNEL_RECORDS (now {})",
                            cfg_.channel_records));
  }
}

namespace {

const char* region_of(const Finding& f) {
  if (!f.row_aware || f.padding_source == PaddingSource::none) return "unknown";
  return f.verdict.region();
}

Json rows_json(const Finding& f) {
  Json padding = Json::array(), real = Json::array(), unknown = Json::array();
  for (const RowRange& r : f.verdict.ranges) {
    Json range = Json::array({r.first, r.last});
    if (f.padding_source == PaddingSource::none) unknown.push_back(range);
    else (r.padding ? padding : real).push_back(range);
  }
  Json j{{"padding", padding}, {"real", real}};
  if (!unknown.empty()) j["unknown"] = unknown;
  j["truncated"] = f.verdict.truncated;
  return j;
}

// A kernel's name for a console line: the signature cut to a readable length.
std::string short_name(const std::string& kernel) {
  return kernel.size() > 120 ? kernel.substr(0, 117) + "..." : kernel;
}

Json rowset_json(const RowVerdict& v) {
  Json padding = Json::array(), real = Json::array();
  for (const RowRange& r : v.ranges) (r.padding ? padding : real).push_back(Json::array({r.first, r.last}));
  return Json{{"padding", padding}, {"real", real}, {"truncated", v.truncated}};
}

std::string ranges_text(const Finding& f) {
  std::string out;
  for (const RowRange& r : f.verdict.ranges) {
    if (!out.empty()) out += ",";
    out += r.first == r.last ? fmt::format("{}", r.first) : fmt::format("{}-{}", r.first, r.last);
    out += f.padding_source == PaddingSource::none ? "" : r.padding ? "p" : "r";
  }
  return out + (f.verdict.truncated ? ",..." : "");
}

}  // namespace

void Engine::handle_finding(const Finding& f, ContextState& cs) {
  const int device = cs.device();
  const KernelInfo* k = kernels_.by_id(f.kernel_id);
  const std::string kernel = k ? k->demangled : "?";
  const std::string region = region_of(f);
  WatchMeta meta;
  const bool rows_inferred = f.row_aware && (f.watch_id & kGlobalWatchBit) && !(f.watch_id & kRuleWatchBit);
  if (rows_inferred) {
    meta.name = "(global padding spec)";
  } else if (f.row_aware) {
    std::lock_guard lock(meta_mu_);
    if (auto it = watch_meta_.find(f.watch_id); it != watch_meta_.end()) meta = it->second;
  }
  // A rescan that finds a watched buffer exactly as the previous scan left it, after a launch
  // not known to write it (untyped, or a const parameter), is stale state: the launch only
  // referenced the buffer. It is counted, never blamed on that kernel.
  const bool api_watch = f.row_aware && !(f.watch_id & (kRuleWatchBit | kGlobalWatchBit));
  const bool known_writer = k && f.arg < k->roles.size() && k->roles[f.arg] == ParamRole::output;
  if (f.unchanged && api_watch && !known_writer) {
    rescans_unchanged_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  findings_.fetch_add(1, std::memory_order_relaxed);
  total_nan_.fetch_add(f.nan, std::memory_order_relaxed);
  total_pinf_.fetch_add(f.pos_inf, std::memory_order_relaxed);
  total_ninf_.fetch_add(f.neg_inf, std::memory_order_relaxed);
  const bool abort_now = f.row_aware && !rows_inferred && effective_action(meta.action) == Action::abort &&
                         f.verdict.counts_real > 0;

  // Identical findings (same site, buffer, region and rows) fold together; a change of region
  // or rows is a new event: padding-only turning real is what users need to see.
  // The origin's kind is part of the site too: a NaN re-introduced after its lineage closed must
  // not fold into an earlier propagated event, nor the reverse.
  const std::optional<lineage::DeviceFinding> lineage_input = device_finding(f, cs);
  const char* origin_kind = lineage_input ? lineage::origin_name(lineage::device_origin(*lineage_input)) : "";
  Site& site = sites_[{f.kernel_id, f.arg, f.graph_id, f.graph_node, region, f.ptr, f.watch_id,
                       (f.row_aware ? ranges_text(f) : std::string()) + "|" + origin_kind}];
  ++site.total;
  if (site.total == 1) site.first_replay = f.replay;
  site.last_replay = f.replay;
  if (cfg_.aggregate && site.total > 1 && !abort_now) {
    classify(lineage_input, site.first_event, /*repeat=*/true);  // its children name the event it repeats
    // Bounded log volume: repeat events at totals 4, 16, 64, ... (powers of four), and a
    // closing total at exit.
    ++site.pending;
    if ((site.total & (site.total - 1)) == 0 && (std::countr_zero(site.total) % 2) == 0) {
      Json r{{"of", site.first_event}, {"count", site.pending}, {"total", site.total}, {"final", false}};
      if (f.captured) r["first_replay"] = site.first_replay, r["last_replay"] = site.last_replay;
      log_->emit("repeat", r);
      site.pending = 0;
    }
    return;
  }

  Json j;
  j["device"] = device;
  j["stream"] = hex(f.stream);
  j["kernel"] = kernel;
  j["kernel_mangled"] = k ? k->mangled : "";
  j["launch_id"] = f.launch_id;
  j["correlation_id"] = f.correlation_id;
  j["buffer"] = {{"arg", f.arg}, {"ptr", hex(f.ptr)}, {"dtype", dtype_name(f.dtype)}, {"elements", f.elements}};
  if (f.row_aware) j["buffer"]["name"] = meta.name;
  j["counts"] = {{"nan", f.nan}, {"pos_inf", f.pos_inf}, {"neg_inf", f.neg_inf}};
  j["first_index"] = f.first_index;
  j["last_index"] = f.last_index;
  if (f.captured) {
    j["graph_id"] = f.graph_id;
    j["graph_node"] = f.graph_node;
    j["replay"] = f.replay;
    std::lock_guard lock(graph_mu_);
    if (auto it = graph_streams_.find(f.graph_id); it != graph_streams_.end()) j["stream"] = hex(it->second);
  }
  j["region"] = region;
  if (f.row_aware) {
    j["counts_padding"] = f.verdict.counts_padding;
    j["counts_real"] = f.verdict.counts_real;
    j["rows"] = rows_json(f);
    j["rows_total"] = f.rows_total;
    j["watch"] = meta.name;
    j["padding_source"] = padding_source_name(f.padding_source);
    if (rows_inferred) j["rows_inferred"] = true;
    if (f.fixed) j["action"] = "zeroed";
  }
  const uint64_t id = log_->reserve_id();
  const auto origin = classify(lineage_input, id, /*repeat=*/false);
  if (origin) {
    j["origin"] = lineage::origin_name(origin->origin);
    if (origin->origin == lineage::Origin::unknown) j["origin_why"] = lineage::unknown_name(origin->why);
    if (!origin->parents.empty()) j["parents"] = origin->parents;
    j["root"] = origin->roots;
    if (origin->incomplete) j["origin_incomplete"] = true;  // a parent finding was never seen
    if (origin->leak) {
      j["leak"] = true;
      j["rows_before"] = rowset_json(origin->rows_before);
      j["rows_after"] = rowset_json(origin->rows_after);
    }
  }
  // The first finding at each site, and the one that aborts, get a tensor dump.
  // No device copies from a fatal-signal handler; a normal exit still dumps what it drains.
  if (!cfg_.dump_dir.empty() && !in_signal_.load() && (site.total == 1 || abort_now))
    if (std::string path = dump_buffer(f, cs, id, j); !path.empty()) j["dump"] = path;
  log_->emit_with_id(id, "nonfinite", j);
  if (site.total == 1) site.first_event = id;
  if (origin && origin->leak)  // the moment it happens, not only in the summary
    log_->warn(fmt::format("leak: non-finite values crossed from padding rows into real rows in {} ('{}', event {}, "
                           "from event{} {})",
                           short_name(kernel),
                           meta.name.empty() ? hex(f.ptr) : meta.name, id, origin->parents.size() > 1 ? "s" : "",
                           fmt::join(origin->parents, ", ")));

  std::string where = fmt::format("launch {}, stream {}", f.launch_id, hex(f.stream));
  if (f.captured) where += fmt::format(", graph {} node {} replay {}", f.graph_id, f.graph_node, f.replay);
  std::string verdict;
  if (f.row_aware)
    verdict = fmt::format(" [{} '{}': {} in padding rows, {} in real rows; rows {}{}]", region, meta.name,
                          f.verdict.counts_padding, f.verdict.counts_real, ranges_text(f),
                          f.fixed ? "; padding rows zeroed" : "");
  log_->info(fmt::format("non-finite output: {} arg {} ({} x{} at {}): {} NaN, {} +Inf, {} -Inf, first at {} ({}){}",
                         kernel.size() > 160 ? kernel.substr(0, 157) + "..." : kernel, f.arg,
                         dtype_name(f.dtype), f.elements, hex(f.ptr), f.nan, f.pos_inf, f.neg_inf,
                         f.first_index, where, verdict));
  if (abort_now) abort_on_real(f, kernel, meta.name);
}

Json Engine::origins_json(const lineage::Summary& o) {
  Json roots = Json::array();
  for (const lineage::RootSummary& r : o.roots) {
    const KernelInfo* k = kernels_.by_id(r.site.kernel_id);
    Json j{{"event", r.event_id},
           {"kernel", k ? k->demangled : "?"},
           {"origin", lineage::origin_name(r.origin)},
           {"launch_id", r.site.launch_id},
           {"stream", hex(r.site.stream)},
           {"buffer", hex(r.buffer.ptr)},
           {"rows", rowset_json(r.rows)},
           {"findings", r.findings},
           {"leaks", r.leaks},
           {"kernels_reached", r.kernels.size()},
           {"buffers_reached", r.buffers.size()},
           {"last_event", r.last_event_id}};
    if (r.origin == lineage::Origin::unknown) j["origin_why"] = lineage::unknown_name(r.why);
    if (r.site.captured) j["graph_id"] = r.site.graph_id, j["graph_node"] = r.site.graph_node, j["replay"] = r.site.replay;
    if (r.first_leak) {
      const KernelInfo* lk = kernels_.by_id(r.first_leak->site.kernel_id);
      j["first_leak"] = {{"event", r.first_leak->event_id},
                         {"kernel", lk ? lk->demangled : "?"},
                         {"launch_id", r.first_leak->site.launch_id},
                         {"buffer", hex(r.first_leak->buffer.ptr)},
                         {"rows_before", rowset_json(r.first_leak->rows_before)},
                         {"rows_after", rowset_json(r.first_leak->rows_after)}};
    } else {
      j["first_leak"] = nullptr;
    }
    roots.push_back(std::move(j));
  }
  return Json{{"roots", roots},          {"roots_not_listed", o.roots_not_listed},
              {"introduced", o.introduced}, {"propagated", o.propagated},
              {"host", o.host},            {"unknown", o.unknown},
              {"leaks", o.leaks},          {"evictions", o.evictions}};
}

std::optional<lineage::DeviceFinding> Engine::device_finding(const Finding& f, const ContextState& cs) {
  if (!f.origin_tracked) return std::nullopt;
  // Sequence numbers are per context: the device ordinal keeps contexts apart.
  const uint64_t ctx_bits = static_cast<uint64_t>(cs.device() + 1) << 48;
  lineage::DeviceFinding d;
  d.seq = ctx_bits | f.seq;
  d.buffer = {f.ptr};
  if (f.row_aware && f.padding_source != PaddingSource::none) d.rows = f.verdict;
  d.site = {f.launch_id, f.kernel_id, f.stream, f.captured, f.graph_id, f.graph_node, f.replay};
  for (uint64_t p : f.parents) d.parent_seqs.push_back(p ? ctx_bits | p : 0);
  d.parent_count = f.parent_count;
  d.input_unknown = f.input_unknown;
  d.reads_untracked = f.reads_untracked;
  d.host = f.host_write;
  d.fixed = f.fixed;
  return d;
}

std::optional<lineage::Verdict> Engine::classify(std::optional<lineage::DeviceFinding> d, uint64_t event_id,
                                                 bool repeat) {
  if (!d) return std::nullopt;
  d->event_id = event_id;
  d->repeat = repeat;
  std::lock_guard lock(lineage_mu_);
  return lineage_.on_device_finding(*d);
}

std::string Engine::dump_buffer(const Finding& f, ContextState& cs, uint64_t event_id, const Json& event) {
  const uint64_t bytes = f.elements * dtype_size(f.dtype);
  if (dumps_ >= cfg_.dump_max || dump_bytes_ + bytes > cfg_.dump_max_bytes) {
    warn_once(warned_dump_, "dump_budget",
              fmt::format("tensor dump budget reached (NANSCOPE_DUMP_MAX={}, NANSCOPE_DUMP_MAX_BYTES={}): later "
                          "findings are not dumped",
                          cfg_.dump_max, cfg_.dump_max_bytes));
    return {};
  }
  std::vector<unsigned char> host(bytes);
  if (std::string err = cs.copy_to_host(f.ptr, bytes, host.data()); !err.empty()) {
    warn_once(warned_dump_, "dump_copy", "cannot copy a buffer for a tensor dump: " + err);
    return {};
  }
  std::error_code ec;
  std::filesystem::create_directories(cfg_.dump_dir, ec);
  const std::string path =
      (std::filesystem::path(cfg_.dump_dir) / fmt::format("nanscope-{}-{}.npy", getpid(), event_id)).string();
  // Row-aware buffers keep their rows when they are dense; anything else is one dimension.
  std::vector<uint64_t> shape{f.elements};
  if (f.row_aware && f.rows_total && f.elements % f.rows_total == 0)
    shape = {f.rows_total, f.elements / f.rows_total};
  if (std::string err = write_npy(path, f.dtype, shape, host.data(), host.size()); !err.empty()) {
    warn_once(warned_dump_, "dump_write", err);
    return {};
  }
  Json side;
  side["schema"] = "nanscope-dump/1";
  side["event_id"] = event_id;
  side["pid"] = static_cast<long>(getpid());
  side["kernel"] = event.value("kernel", "");
  side["buffer"] = event["buffer"];
  side["dtype"] = dtype_name(f.dtype);
  side["storage"] = npy_descr(f.dtype);
  side["shape"] = shape;
  side["counts"] = event["counts"];
  if (f.row_aware) {
    side["padding_source"] = padding_source_name(f.padding_source);
    Json verdicts = Json::array();
    for (const RowRange& r : f.verdict.ranges)
      verdicts.push_back(Json{{"rows", {r.first, r.last}},
                              {"kind", f.padding_source == PaddingSource::none ? "unknown" : r.padding ? "padding" : "real"},
                              {"verdict", "nonfinite"},
                              {"fixed", f.fixed && r.padding}});
    side["row_verdicts"] = verdicts;
  }
  side["note"] = "copied when the finding was drained: later writes to the buffer may show";
  std::ofstream(path + ".json") << side.dump(2) << "\n";
  ++dumps_;
  dump_bytes_ += bytes;
  return path;
}

void Engine::abort_on_real(const Finding& f, const std::string& kernel, const std::string& watch) {
  if (aborting_.exchange(true)) return;
  const std::string reason =
      fmt::format("nanscope: abort: {} non-finite value(s) in real rows of '{}' written by {} (launch {}{})",
                  f.verdict.counts_real, watch, kernel, f.launch_id,
                  f.captured ? fmt::format(", graph {} replay {}", f.graph_id, f.replay) : "");
  log_->emit("abort", Json{{"reason", reason}, {"launch_id", f.launch_id}, {"watch", watch}});
  shut_down_.store(true);  // the signal handler must not write a second summary
  write_summary(SummaryContexts::held);
  log_->flush();
  std::fprintf(stderr, "%s\n", reason.c_str());
  std::fflush(stderr);
  std::abort();  // asked for by the user (action abort): stop the process with SIGABRT
}

void Engine::flush() {
  drain_all();
  log_->flush();
}

void Engine::write_summary(SummaryContexts contexts) {
  uint64_t overflow = 0, corrupt = 0, unchanged = rescans_unchanged_.load();
  if (contexts != SummaryContexts::skip) {
    std::shared_lock lock(ctx_mu_, std::defer_lock);
    if (contexts == SummaryContexts::lock) lock.lock();
    for (auto& [ctx, state] : contexts_) {
      overflow += state->reader().overflow();
      corrupt += state->reader().corrupt();
      unchanged += state->reader().unchanged();  // counted on the device (quiet rescans)
    }
  }
  Json s;
  s["launches"] = launches_.load();
  s["scans"] = scans_.load();
  s["findings"] = findings_.load();
  s["kernels_inspected"] = kernels_.inspected_count();
  s["kernels_not_inspected"] = kernels_.not_inspected_count();
  s["scans_dropped"] = dropped_.load();
  s["graph_scans_overlapped"] = overlapped_scans_.load();  // scan nodes moved off a graph's critical path
  s["graph_scans_merged"] = merged_scans_.load();          // scan nodes folded into merged ones
  s["overflow"] = overflow;         // findings the device dropped: channel full
  s["corrupt_records"] = corrupt;   // records that failed validation on the host
  s["rescans_unchanged"] = unchanged;  // watched buffers found as the last scan left them
  s["counts"] = {{"nan", total_nan_.load()}, {"pos_inf", total_pinf_.load()}, {"neg_inf", total_ninf_.load()}};
  s["duration_ns"] = wall_clock_ns() - start_ns_;
  // Origins: try-lock only, a fatal-signal flush may have interrupted a drain holding it.
  std::unique_lock lineage_lock(lineage_mu_, std::try_to_lock);
  const lineage::Summary origins = lineage_lock ? lineage_.summary() : lineage::Summary{};
  if (lineage_lock) lineage_lock.unlock();
  if (cfg_.origin) s["origins"] = origins_json(origins);
  log_->emit("summary", s);
  // First causes up front: each independent origin, in time order, with its first leak.
  for (std::size_t i = 0; i < origins.roots.size() && i < 5; ++i) {
    const lineage::RootSummary& r = origins.roots[i];
    const KernelInfo* k = kernels_.by_id(r.site.kernel_id);
    std::string line = fmt::format("{} cause: {} {} (event {}, launch {}{}) in {}", i == 0 ? "first" : "also",
                                   lineage::origin_name(r.origin), short_name(k ? k->demangled : "?"), r.event_id,
                                   r.site.launch_id,
                                   r.site.captured ? fmt::format(", graph {} node {} replay {}", r.site.graph_id,
                                                                 r.site.graph_node, r.site.replay)
                                                   : std::string(),
                                   hex(r.buffer.ptr));
    if (r.first_leak) {
      const KernelInfo* lk = kernels_.by_id(r.first_leak->site.kernel_id);
      line += fmt::format("; leaked into real rows at {} (event {})", short_name(lk ? lk->demangled : "?"),
                          r.first_leak->event_id);
    }
    line += fmt::format("; reached {} kernel(s), {} buffer(s)", r.kernels.size(), r.buffers.size());
    log_->info(line);
  }
  log_->info(fmt::format("summary: {} launches, {} scans, {} findings ({} NaN, {} +Inf, {} -Inf), {} kernels "
                         "inspected, {} not inspected, {} scans dropped",
                         launches_.load(), scans_.load(), findings_.load(), total_nan_.load(),
                         total_pinf_.load(), total_ninf_.load(), kernels_.inspected_count(),
                         kernels_.not_inspected_count(), dropped_.load()));
}

void Engine::shutdown() {
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
  drain_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  drain_all();
  {
    std::lock_guard drain(drain_mu_);
    for (auto& [key, site] : sites_) {
      if (!cfg_.aggregate || site.total <= 1) continue;
      Json r{{"of", site.first_event}, {"count", site.pending}, {"total", site.total}, {"final", true}};
      if (std::get<2>(key)) r["first_replay"] = site.first_replay, r["last_replay"] = site.last_replay;
      log_->emit("repeat", r);
    }
  }
  write_summary();
  log_->flush();
}

void Engine::emergency_flush() {
  in_signal_.store(true);
  if (shut_down_.exchange(true)) return;
  // No joins, no waits: the process is dying, and the thread we interrupted may hold any of our
  // locks, so only try them. Without the context lock the summary leaves the channel counts out.
  std::shared_lock contexts(ctx_mu_, std::try_to_lock);
  if (contexts.owns_lock() && drain_mu_.try_lock()) {
    for (auto& [ctx, state] : contexts_)
      drain_context(*state);
    drain_mu_.unlock();
  }
  write_summary(contexts.owns_lock() ? SummaryContexts::held : SummaryContexts::skip);
  log_->flush();
}

void Engine::fill_stats(nanscope_stats_t& s) const {
  s.launches = launches_.load();
  s.scans = scans_.load();
  s.findings = findings_.load();
  s.kernels_inspected = kernels_.inspected_count();
  s.kernels_not_inspected = kernels_.not_inspected_count();
  s.scans_dropped = dropped_.load();
  uint64_t overflow = 0;
  std::shared_lock lock(ctx_mu_);
  for (auto& [ctx, state] : contexts_) overflow += state->reader().overflow();
  s.overflow = overflow;
}

}  // namespace nanscope

#include "engine.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "nanscope/version.h"
#include "stream_points.hpp"
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

std::string program_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::unique_ptr<EventLog> open_log(const Config& cfg) {
  std::string error;
  EventLogOptions options{cfg.log_path, cfg.console, cfg.level, "nanscope", cfg.log_path_unique};
  options.fallback_path = cfg.log_path_fallback;
  options.rank = cfg.rank.rank, options.local_rank = cfg.rank.local_rank, options.world_size = cfg.rank.world_size;
  auto log = std::make_unique<EventLog>(options, &error);
  if (!error.empty()) log->warn(log->has_file() ? error : error + "; JSON log disabled, console only");
  return log;
}

}  // namespace

Engine::Engine(Config cfg)
    : cfg_(std::move(cfg)),
      start_ns_(wall_clock_ns()),
      log_(open_log(cfg_)),
      watches_(cfg_.mode, *log_),
      xla_modules_(cfg_.xla_dump, cfg_.xla_dumps_off, *log_),
      kernels_(cfg_.kernel_filter, cfg_.kernel_exclude, &watches_.rules()),
      contexts_(ContextLimits{cfg_.channel_records, 4096, cfg_.max_captured_scans, cfg_.origin}, *log_),
      allocs_(contexts_, cfg_.max_whole_alloc_bytes),
      failures_(cfg_, *log_, counters_),
      python_(cfg_.python_line),
      tasks_(cfg_, kernels_, watches_, allocs_, counters_, *log_),
      graphs_(cfg_, *log_, tasks_, contexts_, allocs_, counters_, failures_),
      scans_(cfg_, graphs_, allocs_, kernels_, counters_, failures_, python_, *log_),
      eager_tier_(cfg_),
      launches_(cfg_, tasks_, scans_, contexts_, allocs_, kernels_, counters_, eager_tier_, *log_),
      library_(cfg_, scans_, tasks_, graphs_, contexts_, allocs_, kernels_, counters_, *log_),
      flush_points_(scans_, tasks_, allocs_),
      reporter_(cfg_, *log_, kernels_, watches_, contexts_, allocs_, graphs_, eager_tier_, counters_, python_,
                start_ns_) {
  watches_.load_rules(cfg_.rules_path);  // before the first launch
  kernels_.set_triton(&modules_);
  kernels_.set_xla(&xla_modules_);
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
    auto* e = new Engine(std::move(parsed.config));  // lives until the process ends
    e->cupti_ = load_cupti(cupti_search_inputs_from_environment());
    e->log_start(attach, parsed.errors);
    if (!e->subscribe()) {
      status = NANSCOPE_ERROR_UNAVAILABLE;
      e->log_->flush();
      instance_.store(e, std::memory_order_release);  // keeps the C API answering
      return;
    }
    e->reporter_.start();
    e->library_.start();
    e->graphs_.start_launch_interposer();  // the sentinel tier's twin execs (graph_twin.cpp)
    instance_.store(e, std::memory_order_release);
  });
  return status;
}

void Engine::log_start(nanscope_attach_t attach, const std::vector<std::string>& config_errors) {
  for (const auto& err : config_errors) log_->warn(err);
  log_->info(fmt::format("nanscope {} attached ({}): {}", NANSCOPE_VERSION_STRING, attach_name(attach),
                         cfg_.describe()));
  namespace key = schema::key;
  namespace ck = schema::config_key;
  Json start;
  start[key::version] = NANSCOPE_VERSION_STRING;
  start[key::attach] = attach_name(attach);
  start[key::config] = {{ck::mode, mode_name(cfg_.mode)},
                        {ck::log, cfg_.log_path},
                        {ck::level, cfg_.level},
                        {ck::kernel_filter, cfg_.kernel_filter},
                        {ck::kernel_exclude, cfg_.kernel_exclude},
                        {ck::channel_records, cfg_.channel_records},
                        {ck::max_captured_scans, cfg_.max_captured_scans},
                        {ck::poll_us, cfg_.poll_us},
                        {ck::max_scan_bytes, cfg_.max_scan_bytes},
                        {ck::max_whole_alloc_bytes, cfg_.max_whole_alloc_bytes},
                        {ck::typed, cfg_.typed},
                        {ck::origin, cfg_.origin},
                        {ck::aggregate, cfg_.aggregate},
                        {ck::eager_batch, cfg_.eager_batch},
                        {ck::rules, cfg_.rules_path},
                        {ck::tier, tier_name(cfg_.tier)},
                        {ck::escalate, cfg_.escalate}};
  if (cupti_.ok()) {
    log_->info(fmt::format("CUPTI {}: {}, from {}", cupti_.path, cupti_.origin, cupti_.source));
    namespace cu = schema::cupti_key;
    start[key::cupti] = {{cu::path, cupti_.path}, {cu::origin, cupti_.origin}, {cu::source, cupti_.source}};
  }
  if (!config_errors.empty()) start[key::config_errors] = config_errors;
  start[key::argv0] = program_name();
  log_->emit(schema::event::start, start);
}

bool Engine::subscribe() {
  if (!cupti_.ok()) {
    const std::string msg = cupti_.error + "; the program runs on without nanscope";
    log_->warning(schema::warning_what::cupti_load, msg);
    return false;
  }
  const CuptiApi& cupti = cupti_.api;
  CUptiResult r = cupti.subscribe(&subscriber_, cupti_callback, this);
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cupti.result_string(r, &s);
    subscriber_ = nullptr;
    const std::string msg = fmt::format(
        "cannot subscribe to CUPTI ({}){}; the program runs on without nanscope", s ? s : "?",
        r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            ? ": another CUPTI tool (a profiler such as the PyTorch profiler or Nsight) holds it"
            : "");
    log_->warning(schema::warning_what::cupti_subscribe, msg);
    return false;
  }
  // Only the callbacks we need: a serving process makes millions of driver calls.
  for (CUpti_CallbackId id : driver_hook_cbids()) cupti.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  // Copies and sets change tracked buffers' states (origin) and watched buffers' contents.
  for (CUpti_CallbackId id : copy_cbids()) cupti.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  // Held eager scans must run before synchronisation, event records, copies to the host, ...
  if (cfg_.eager_batch)
    for (CUpti_CallbackId id : stream_point_cbids()) cupti.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  for (CUpti_CallbackId id : {CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING,
                              CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING})
    cupti.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, id);
  return true;
}

void Engine::on_callback_error(const std::string& message) {
  warn_once(*log_, schema::Once::callback, message);
}

void Engine::on_context_destroy(CUcontext ctx) {
  {
    ToolScope scope;
    scans_.flush_held(ctx, /*wait=*/true);  // the last drain below must see them
  }
  std::unique_ptr<ContextState> dying = reporter_.retire(ctx);
  if (!dying) return;
  ToolScope scope;
  dying.reset();
}

std::string Engine::note_generated_line(std::string_view generated_file, uint32_t generated_line, const char* traceback) {
  if (!python_.enabled()) return "Python lines are off (NANSCOPE_PYTHON_LINE=0)";
  if (!python_.note_generated_line(generated_file, generated_line, traceback))
    return fmt::format("the map of generated lines is full ({} files, {} lines at most)", GeneratedLines::kMaxFiles,
                       GeneratedLines::kMaxEntries);
  return {};
}

void Engine::flush() {
  {
    ToolScope scope;
    scans_.flush_held(nullptr, false);
  }
  reporter_.drain_all();
  log_->flush();
}

void Engine::shutdown() {
  {
    ToolScope scope;
    scans_.flush_held(nullptr, /*wait=*/true);  // scans still held at exit run before the last drain
  }
  scans_.log_host_profile();
  reporter_.shutdown();
  xla_modules_.remove_if_unused();
}

void Engine::fill_stats(nanscope_stats_t& s) const {
  const SummaryFigures f = reporter_.figures(contexts_.channel_totals());
  s.launches = f.launches;
  s.scans = f.scans;
  s.findings = f.findings;
  s.kernels_inspected = f.kernels_inspected;
  s.kernels_not_inspected = f.kernels_not_inspected;
  s.scans_dropped = f.scans_dropped;
  s.overflow = f.overflow;
}

}  // namespace nanscope

#include "event_log.hpp"

#include <unistd.h>

#include <chrono>

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "log_schema.hpp"
#include "safe_file.hpp"

namespace nanscope {

uint64_t wall_clock_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

EventLog::EventLog(const EventLogOptions& opts, std::string* error)
    : pid_(static_cast<long>(getpid())),
      rank_(opts.rank),
      local_rank_(opts.local_rank),
      world_size_(opts.world_size) {
  if (opts.console) {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    console_ = std::make_shared<spdlog::logger>("nanscope-console", sink);
    console_->set_pattern("[" + opts.console_prefix + "] %v");
    console_->set_level(spdlog::level::from_str(opts.level));
    console_->flush_on(spdlog::level::warn);
  }
  if (!opts.path.empty()) {
    // One write(2) per event on an O_APPEND file: lines from several processes sharing one
    // log (a launcher's children, compile workers) never interleave mid-line.
    std::string why;
    fd_ = open_for_writing(opts.path, opts.unique_path ? NewFile::exclusive : NewFile::append, &why);
    if (fd_ < 0 && !opts.fallback_path.empty()) {
      std::string why_fallback;
      fd_ = open_for_writing(opts.fallback_path, NewFile::exclusive, &why_fallback);
      if (fd_ >= 0 && error) *error = why + "; writing '" + opts.fallback_path + "' instead";
      if (fd_ < 0) why += "; and " + why_fallback;
    }
    if (fd_ < 0 && error) *error = "cannot open NANSCOPE_LOG file: " + why;
  }
}

EventLog::~EventLog() {
  flush();
  if (fd_ >= 0) ::close(fd_);
}

uint64_t EventLog::emit(std::string_view event, const Json& body) {
  const uint64_t id = reserve_id();
  emit_with_id(id, event, body);
  return id;
}

void EventLog::emit_with_id(uint64_t id, std::string_view event, const Json& body) {
  if (fd_ < 0) return;
  namespace key = schema::key;
  Json j;
  j[key::schema] = schema::kVersion;
  j[key::event] = event;
  j[key::id] = id;
  j[key::ts_ns] = wall_clock_ns();
  j[key::pid] = pid_;
  if (rank_) j[key::rank] = *rank_;
  if (local_rank_) j[key::local_rank] = *local_rank_;
  if (world_size_) j[key::world_size] = *world_size_;
  for (auto it = body.begin(); it != body.end(); ++it) j[it.key()] = it.value();
  // Invalid UTF-8 in kernel names must not lose the event: replace, don't throw.
  std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  line += '\n';
  write_all(fd_, line);
}

void EventLog::info(std::string_view line) {
  if (console_) console_->info(line);
}
void EventLog::warn(std::string_view line) {
  if (console_) console_->warn(line);
}
void EventLog::warning(std::string_view what, const std::string& message) {
  warn(message);
  emit(schema::event::warning, Json{{schema::key::what, what}, {schema::key::message, message}});
}
void EventLog::debug(std::string_view line) {
  if (console_) console_->debug(line);
}
bool EventLog::debug_enabled() const { return console_ && console_->should_log(spdlog::level::debug); }

void EventLog::flush() {
  if (console_) console_->flush();
}

}  // namespace nanscope

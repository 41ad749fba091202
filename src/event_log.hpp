// Event output: JSON lines (schema nanscope/1, docs/log-schema.md) to a file, and short
// human lines on stderr, both through spdlog loggers private to nanscope.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "log_schema.hpp"

namespace spdlog { class logger; }

namespace nanscope {

using Json = nlohmann::ordered_json;

struct EventLogOptions {
  std::string path;          // JSONL file; empty: no file
  bool console = true;       // human lines on stderr
  std::string level = "info";
  std::string console_prefix = "nanscope";
  bool unique_path = false;  // the name is this process's own (NANSCOPE_LOG with %p): created, never reused
  std::string fallback_path; // a unique name taken already (a rank's rerun): this one instead
  // Written into every event when known (rank_env.hpp).
  std::optional<long> rank, local_rank, world_size;
};

class EventLog {
 public:
  // Never throws. A file that cannot be opened is reported in `error` (naming the path) and
  // the log continues on the console alone; `error` also says when the fallback name was used.
  explicit EventLog(const EventLogOptions& opts, std::string* error = nullptr);
  ~EventLog();

  // Writes one event: adds schema, event, id, ts_ns, pid, rank, local_rank and world_size (the
  // last three when known) in front of `body`.
  // Returns the event id.
  uint64_t emit(std::string_view event, const Json& body);
  // For events that must know their id before they are written (a dump names it).
  uint64_t reserve_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  void emit_with_id(uint64_t id, std::string_view event, const Json& body);

  // True the first time a once-only warning is asked for (the one registry of what was said:
  // lock-free, one flag per schema::Once), false ever after.
  bool first_time(schema::Once what) { return !said_[static_cast<size_t>(what)].exchange(true, std::memory_order_relaxed); }
  bool said(schema::Once what) const { return said_[static_cast<size_t>(what)].load(std::memory_order_relaxed); }

  void info(std::string_view line);
  void warn(std::string_view line);
  // Something nanscope could not do: `message` on the console and a `warning` event with `what`
  // (warn_once in hooks/counters.hpp says it once per schema::Once).
  void warning(std::string_view what, const std::string& message);
  void debug(std::string_view line);
  bool debug_enabled() const;
  void flush();
  bool has_file() const { return fd_ >= 0; }

 private:
  int fd_ = -1;  // the JSONL file (safe_file.hpp), one write(2) per event
  std::shared_ptr<spdlog::logger> console_;
  std::atomic<uint64_t> next_id_{1};
  long pid_;
  std::optional<long> rank_, local_rank_, world_size_;
  std::atomic<bool> said_[static_cast<size_t>(schema::Once::count)] = {};
};

uint64_t wall_clock_ns();

}  // namespace nanscope

#include "config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "safe_regex.hpp"
#include "xla_flags.hpp"

namespace nanscope {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::detect: return "detect";
    case Mode::fix: return "fix";
    case Mode::abort: return "abort";
  }
  return "detect";
}

const char* graph_pdl_name(GraphPdl g) {
  switch (g) {
    case GraphPdl::off: return "off";
    case GraphPdl::release: return "release";
    case GraphPdl::both: return "both";
  }
  return "release";
}

const char* tier_name(Tier t) { return t == Tier::sentinel ? "sentinel" : "full"; }

namespace {

struct Parser {
  const EnvLookup& env;
  std::vector<std::string>& errors;

  std::optional<std::string> raw(const char* name) {
    auto v = env(name);
    if (v && v->empty()) {  // set but empty: the default, said once so a typo'd export is seen
      errors.push_back(fmt::format("{} is set but empty; using its default", name));
      return std::nullopt;
    }
    return v;
  }

  // NANSCOPE_DUMP_DIR must be a directory this process can write into; checked at start-up so
  // the first finding does not discover it (no directory is created).
  void dump_dir(std::string& out) {
    auto v = raw("NANSCOPE_DUMP_DIR");
    if (!v) return;
    struct stat st{};
    std::string problem;
    if (::stat(v->c_str(), &st) != 0) problem = fmt::format("does not exist ({})", std::strerror(errno));
    else if (!S_ISDIR(st.st_mode)) problem = "is not a directory";
    else if (::access(v->c_str(), W_OK | X_OK) != 0) problem = "is not writable by this process";
    if (problem.empty()) out = *v;
    else errors.push_back(fmt::format("NANSCOPE_DUMP_DIR='{}' {} (nanscope creates no directories); no tensor dumps", *v, problem));
  }

  void reject(const char* name, const std::string& value, const std::string& accepts,
              const std::string& fallback) {
    errors.push_back(fmt::format("{}='{}' is not valid (accepts {}); using {}", name, value, accepts,
                                 fallback));
  }

  void boolean(const char* name, bool& out) {
    auto v = raw(name);
    if (!v) return;
    std::string s = *v;
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "1" || s == "on" || s == "true" || s == "yes") out = true;
    else if (s == "0" || s == "off" || s == "false" || s == "no") out = false;
    else reject(name, *v, "1/0, on/off, true/false, yes/no", out ? "on" : "off");
  }

  template <typename T>
  void integer(const char* name, T& out, T lo, T hi) {
    auto v = raw(name);
    if (!v) return;
    T parsed{};
    const char* b = v->data();
    const char* e = b + v->size();
    auto [p, ec] = std::from_chars(b, e, parsed);
    if (ec != std::errc() || p != e || parsed < lo || parsed > hi) {
      reject(name, *v, fmt::format("an integer from {} to {}", lo, hi), std::to_string(out));
      return;
    }
    out = parsed;
  }

  // NANSCOPE_EAGER_BATCH: on/off like a boolean, or the buffers one grouped launch may hold.
  void eager_batch(uint32_t& out) {
    auto v = raw("NANSCOPE_EAGER_BATCH");
    if (!v) return;
    uint32_t n = 0;
    const char* e = v->data() + v->size();
    auto [p, ec] = std::from_chars(v->data(), e, n);
    if (ec == std::errc() && p == e && n >= 2 && n <= 8) {
      out = n;
      return;
    }
    bool on = out != 0;
    std::vector<std::string> before = errors;
    boolean("NANSCOPE_EAGER_BATCH", on);
    if (errors.size() != before.size()) {
      errors = before;
      reject("NANSCOPE_EAGER_BATCH", *v, "on/off (1/0, true/false, yes/no) or a buffer count from 2 to 8",
             out ? std::to_string(out) : "off");
      return;
    }
    out = on ? 8 : 0;
  }

  void choice(const char* name, std::string& out, std::initializer_list<const char*> allowed) {
    auto v = raw(name);
    if (!v) return;
    std::string accepts;
    for (const char* a : allowed) {
      if (*v == a) { out = *v; return; }
      accepts += accepts.empty() ? a : fmt::format(", {}", a);
    }
    reject(name, *v, accepts, "'" + out + "'");
  }

  void regex(const char* name, std::string& out) {
    auto v = raw(name);
    if (!v) return;
    std::string error;
    if (SafeRegex::compile(*v, &error)) out = *v;
    else reject(name, *v, fmt::format("a regular expression (docs/configuration.md); {}", error), "no filter");
  }
};

std::string replace_all(std::string path, const char* what, const std::string& with) {
  for (size_t at = path.find(what); at != std::string::npos; at = path.find(what, at)) {
    path.replace(at, 2, with);
    at += with.size();
  }
  return path;
}

// `tag` inserted before the file name's extension ("run.jsonl" -> "run.rank1.jsonl").
std::string with_tag(const std::string& path, const std::string& tag) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const bool has_ext = dot != std::string::npos && dot > (slash == std::string::npos ? 0 : slash + 1);
  return has_ext ? path.substr(0, dot) + "." + tag + path.substr(dot) : path + "." + tag;
}

}  // namespace

LogFileName log_file_name(const std::string& pattern, long pid, const RankInfo& rank) {
  LogFileName n;
  const bool has_p = pattern.find("%p") != std::string::npos;
  const bool has_r = pattern.find("%r") != std::string::npos;
  n.path = replace_all(pattern, "%p", std::to_string(pid));
  n.unique = has_p || has_r;
  if (has_r) {
    if (!rank.rank)
      n.note = fmt::format("NANSCOPE_LOG='{}' has %r but no rank is known (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, "
                           "SLURM_PROCID); %r becomes the pid {}", pattern, pid);
    n.path = replace_all(n.path, "%r", rank.rank ? std::to_string(*rank.rank) : std::to_string(pid));
    if (rank.rank && !has_p) n.fallback = with_tag(n.path, fmt::format("pid{}", pid));
  } else if (!has_p && rank.multi_process()) {
    const std::string tag = rank.rank ? fmt::format("rank{}", *rank.rank) : fmt::format("pid{}", pid);
    n.path = with_tag(n.path, tag);
    n.unique = true;
    n.note = fmt::format("NANSCOPE_LOG='{}' names one file but this process is one of a multi-process job "
                         "({}); writing '{}' so that processes never share a file (put %r or %p in the name "
                         "to choose where it goes)", pattern, rank.source ? rank.source : "?", n.path);
  }
  return n;
}

ConfigResult parse_config(const EnvLookup& getenv_fn, long pid) {
  ConfigResult r;
  Config& c = r.config;
  Parser p{getenv_fn, r.errors};
  p.boolean("NANSCOPE_ENABLE", c.enabled);
  c.rank = detect_rank(getenv_fn);
  r.errors.insert(r.errors.end(), c.rank.errors.begin(), c.rank.errors.end());
  if (auto v = p.raw("NANSCOPE_LOG")) {
    LogFileName name = log_file_name(*v, pid, c.rank);
    c.log_path = std::move(name.path);
    c.log_path_unique = name.unique;
    c.log_path_fallback = std::move(name.fallback);
    if (!name.note.empty()) r.errors.push_back(std::move(name.note));
  }
  p.boolean("NANSCOPE_CONSOLE", c.console);
  p.choice("NANSCOPE_LEVEL", c.level, {"trace", "debug", "info", "warn", "error", "off"});
  p.regex("NANSCOPE_KERNEL_FILTER", c.kernel_filter);
  p.regex("NANSCOPE_KERNEL_EXCLUDE", c.kernel_exclude);
  std::string mode = mode_name(c.mode);
  p.choice("NANSCOPE_MODE", mode, {"detect", "fix", "abort"});
  c.mode = mode == "fix" ? Mode::fix : mode == "abort" ? Mode::abort : Mode::detect;
  p.integer<uint32_t>("NANSCOPE_CHANNEL_RECORDS", c.channel_records, 16, 1u << 20);
  p.integer<uint32_t>("NANSCOPE_MAX_CAPTURED_SCANS", c.max_captured_scans, 0, 1u << 24);
  p.integer<uint32_t>("NANSCOPE_POLL_US", c.poll_us, 10, 1000000);
  p.integer<uint64_t>("NANSCOPE_MAX_SCAN_BYTES", c.max_scan_bytes, 0, UINT64_MAX);
  p.integer<uint64_t>("NANSCOPE_MAX_WHOLE_ALLOC_BYTES", c.max_whole_alloc_bytes, 0, UINT64_MAX);
  p.boolean("NANSCOPE_TYPED", c.typed);
  p.boolean("NANSCOPE_ORIGIN", c.origin);
  std::string inf = c.inf_faults ? "fault" : "ignore";
  p.choice("NANSCOPE_INF", inf, {"ignore", "fault"});
  c.inf_faults = inf == "fault";
  p.boolean("NANSCOPE_AGGREGATE", c.aggregate);
  p.boolean("NANSCOPE_PYTHON_LINE", c.python_line);
  p.boolean("NANSCOPE_GRAPH_OVERLAP", c.graph_overlap);
  p.boolean("NANSCOPE_GRAPH_MERGE", c.graph_merge);
  std::string pdl = graph_pdl_name(c.graph_pdl);
  p.choice("NANSCOPE_GRAPH_PDL", pdl, {"off", "release", "both"});
  c.graph_pdl = pdl == "off" ? GraphPdl::off : pdl == "both" ? GraphPdl::both : GraphPdl::release;
  std::string tier = tier_name(c.tier);
  p.choice("NANSCOPE_TIER", tier, {"full", "sentinel"});
  c.tier = tier == "sentinel" ? Tier::sentinel : Tier::full;
  p.integer<uint32_t>("NANSCOPE_ESCALATE", c.escalate, 1, kMaxEscalate);
  p.eager_batch(c.eager_batch);
  p.integer<uint32_t>("NANSCOPE_EAGER_BATCH_US", c.eager_batch_us, 0, 1000000);
  // Abort mode stops the app at the first finding: a held scan would let it run on further.
  if (c.mode == Mode::abort) c.eager_batch = 0;
  if (auto v = p.raw("NANSCOPE_RULES")) c.rules_path = *v;
  if (auto v = p.raw("NANSCOPE_XLA_DUMP")) {
    c.xla_dumps_off = *v == xla::kDumpsOff;
    if (!c.xla_dumps_off) c.xla_dump = *v;
  } else if (auto flags = getenv_fn("XLA_FLAGS")) {
    c.xla_dump = xla::dump_dir_in_flags(*flags);
  }
  p.dump_dir(c.dump_dir);
  p.integer<uint32_t>("NANSCOPE_DUMP_MAX", c.dump_max, 0, 1u << 20);
  p.integer<uint64_t>("NANSCOPE_DUMP_MAX_BYTES", c.dump_max_bytes, 0, UINT64_MAX);
  return r;
}

ConfigResult parse_config_from_environment() {
  return parse_config(
      [](const char* name) -> std::optional<std::string> {
        const char* v = std::getenv(name);
        return v ? std::optional<std::string>(v) : std::nullopt;
      },
      static_cast<long>(getpid()));
}

std::string Config::describe() const {
  return fmt::format(
      "mode={} log={} console={} level={} filter={} exclude={} channel={} poll_us={} "
      "max_scan_bytes={} max_whole_alloc_bytes={} typed={} origin={} aggregate={} graph_overlap={} graph_merge={} graph_pdl={} eager_batch={} python_line={} "
      "rules={} inf={} tier={} escalate={}",
      mode_name(mode), log_path.empty() ? "(none)" : log_path, console ? "on" : "off", level,
      kernel_filter.empty() ? "(all)" : kernel_filter,
      kernel_exclude.empty() ? "(none)" : kernel_exclude, channel_records, poll_us,
      max_scan_bytes, max_whole_alloc_bytes, typed ? "on" : "off", origin ? "on" : "off", aggregate ? "on" : "off",
      graph_overlap ? "on" : "off", graph_merge ? "on" : "off", graph_pdl_name(graph_pdl), eager_batch ? std::to_string(eager_batch) : "off",
      python_line ? "on" : "off",
      rules_path.empty() ? "(none)" : rules_path, inf_faults ? "fault" : "ignore", tier_name(tier), escalate);
}

}  // namespace nanscope

// See xla_dump_dir.hpp.
#include "xla_dump_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>

#include "safe_file.hpp"
#include "xla_text.hpp"

namespace nanscope::xla {

namespace {

// The module a GPU HLO file belongs to ("module_5968.jit_step.sm_9.0a_gpu_after_optimizations.txt"
// -> "module_5968.jit_step"): what precedes ".sm_" (the last one: a jitted name may hold ".sm_").
std::optional<std::string> hlo_module(std::string_view name, std::string_view suffix) {
  if (!name.ends_with(suffix)) return std::nullopt;
  const size_t sm = name.rfind(".sm_");
  if (sm == std::string_view::npos || sm == 0) return std::nullopt;
  return std::string(name.substr(0, sm));
}

// A dump file's text, or nullopt with `error` naming it.
std::optional<std::string> read_dump_file(const std::filesystem::path& path, uint64_t max_bytes, std::string& error) {
  std::string text;
  switch (read_bounded(path.string(), max_bytes, text)) {
    case BoundedRead::ok: return text;
    case BoundedRead::missing: error = fmt::format("{}: cannot be opened", path.string()); break;
    case BoundedRead::too_large: error = fmt::format("{}: over the {} read for one dump file", path.string(), max_bytes); break;
    case BoundedRead::failed: error = fmt::format("{}: not a regular file, or a short read", path.string()); break;
  }
  return std::nullopt;
}

}  // namespace

std::vector<DumpFiles> group_dump_files(const std::vector<std::string>& names) {
  // The module a file of the thunk plan belongs to: its name less `suffix`.
  const auto module_of = [](std::string_view n, std::string_view suffix) -> std::optional<std::string> {
    if (!n.ends_with(suffix)) return std::nullopt;
    return std::string(n.substr(0, n.size() - suffix.size()));
  };
  std::map<std::string, DumpFiles> by_module;
  std::set<std::string> after_passes;
  for (const std::string& n : names) {
    if (!n.starts_with("module_")) continue;
    if (auto m = module_of(n, ".thunk_sequence_after_thunk_passes.txt")) {
      by_module[*m].thunk_sequence = n;
      after_passes.insert(*m);
    } else if (auto s = module_of(n, ".thunk_sequence.txt")) {
      if (!after_passes.count(*s)) by_module[*s].thunk_sequence = n;
    } else if (auto t = module_of(n, ".thunk_metadata.txt")) {
      by_module[*t].thunk_metadata = n;
    } else if (auto b = hlo_module(n, "_gpu_after_optimizations-buffer-assignment.txt")) {
      by_module[*b].buffer_assignment = n;
    } else if (auto h = hlo_module(n, "_gpu_after_optimizations.txt")) {
      by_module[*h].hlo = n;
    }
  }
  std::vector<DumpFiles> out;
  for (auto& [module, files] : by_module) {
    files.module = module;
    out.push_back(std::move(files));
  }
  return out;
}

namespace {

// "module_0662.jit__threefry_seed..." -> 662; nullopt for a name of another form.
std::optional<uint64_t> module_number(std::string_view name) {
  if (!name.starts_with("module_")) return std::nullopt;
  const size_t dot = name.find('.', 7);
  uint64_t n = 0;
  if (dot == std::string_view::npos || !text::number(name.substr(7, dot - 7), n)) return std::nullopt;
  return n;
}

}  // namespace

std::string module_being_optimized(const std::vector<std::string>& names) {
  constexpr std::string_view kStarted = ".before_optimizations.txt", kFinished = "_after_optimizations.txt";
  std::optional<std::pair<uint64_t, std::string>> newest;  // the newest module whose compile started
  std::optional<uint64_t> last_finished;                    // cpu_ or sm_90a_gpu_: a pipeline ended
  for (const std::string& n : names) {
    const std::optional<uint64_t> number = module_number(n);
    if (!number) continue;
    if (n.ends_with(kFinished)) last_finished = std::max(last_finished.value_or(0), *number);
    else if (n.ends_with(kStarted) && (!newest || *number > newest->first))
      newest = {*number, n.substr(0, n.size() - kStarted.size())};
  }
  // The newest started one, unless it or a newer one finished: older unfinished ones are closed.
  if (!newest || (last_finished && *last_finished >= newest->first)) return "";
  return newest->second;
}

DumpDirRead read_dump_dir(const std::string& dir, const std::set<std::string>& known, uint64_t max_file_bytes) {
  DumpDirRead out;
  std::vector<std::string> names;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec) && !ec) return out;  // XLA makes it at its first dump
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) names.push_back(it->path().filename().string());
  if (ec) {
    out.errors.push_back(fmt::format("{}: {}", dir, ec.message()));
    return out;
  }
  out.compiling_began = std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("module_"); });
  out.optimizing = module_being_optimized(names);
  for (const DumpFiles& f : group_dump_files(names)) {
    if (!f.complete() || known.count(f.module)) continue;
    std::string error;
    std::optional<std::string> texts[4];
    const std::string* paths[4] = {&f.thunk_sequence, &f.thunk_metadata, &f.hlo, &f.buffer_assignment};
    bool read = true;
    for (int i = 0; i < 4 && read; ++i)
      read = (texts[i] = read_dump_file(std::filesystem::path(dir) / *paths[i], max_file_bytes, error)).has_value();
    if (!read) {
      out.errors.push_back(error);
      continue;
    }
    out.modules.push_back(read_dump_module(f.module, *texts[0], *texts[1], *texts[2], *texts[3]));
  }
  return out;
}

}  // namespace nanscope::xla

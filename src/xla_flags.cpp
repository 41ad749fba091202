// See xla_flags.hpp.
#include "xla_flags.hpp"

#include <fmt/format.h>
#include <link.h>

#include <vector>

namespace nanscope::xla {

namespace {

// XLA_FLAGS as XLA reads it: flags separated by whitespace.
std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    const size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// The value of `--name=value` or `-name=value` for `name`; `--name` alone gives "" and true.
bool flag_value(std::string_view token, std::string_view name, std::string_view& value) {
  while (!token.empty() && token.front() == '-') token.remove_prefix(1);
  if (token.substr(0, name.size()) != name) return false;
  token.remove_prefix(name.size());
  if (token.empty()) {
    value = {};
    return true;
  }
  if (token.front() != '=') return false;
  value = token.substr(1);
  return true;
}

}  // namespace

std::string dump_dir_in_flags(std::string_view flags) {
  std::string dir;
  std::string_view v;
  for (std::string_view t : tokens(flags))
    if (flag_value(t, "xla_dump_to", v)) dir = std::string(v);
  return dir;
}

FlagsWithDumps flags_with_dumps(std::string_view flags, const std::string& dir) {
  FlagsWithDumps out;
  out.flags = std::string(flags);
  out.dump_dir = dump_dir_in_flags(flags);
  out.users_dir = !out.dump_dir.empty();
  bool text_set = false;
  std::string_view v;
  for (std::string_view t : tokens(flags))
    if (flag_value(t, "xla_dump_hlo_as_text", v)) {
      text_set = true;
      if (v == "false" || v == "0") out.conflict = "XLA_FLAGS sets --xla_dump_hlo_as_text=false: nanscope reads the text dumps";
      else out.conflict.clear();
    }
  auto add = [&](const std::string& flag) { out.flags += (out.flags.empty() ? "" : " ") + flag; };
  if (!out.users_dir) {
    out.dump_dir = dir;
    add("--xla_dump_to=" + dir);
  }
  if (!text_set) add("--xla_dump_hlo_as_text");
  return out;
}

bool is_xla_runtime(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return file.starts_with("xla_cuda_plugin") || file.starts_with("xla_extension") ||
         file.starts_with("libtensorflow_framework");
}

std::string loaded_xla_runtime(unsigned long long& loads_seen) {
  struct Walk {
    unsigned long long seen = 0, now = 0;
    std::string found;
  } walk{loads_seen, 0, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& w = *static_cast<Walk*>(data);
        w.now = info->dlpi_adds;
        if (w.now == w.seen) return 1;  // nothing loaded since the last look
        if (info->dlpi_name && is_xla_runtime(info->dlpi_name)) w.found = info->dlpi_name;
        return w.found.empty() ? 0 : 1;
      },
      &walk);
  loads_seen = walk.now;
  return walk.found;
}

std::string no_dumps_reason(std::string_view runtime, bool off) {
  const size_t slash = runtime.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? runtime : runtime.substr(slash + 1);
  if (off)
    return fmt::format("XLA runs in this process ({}) and nanscope reads no XLA dumps (NANSCOPE_XLA_DUMP=off, the "
                       "launcher's --no-xla-dumps)", file);
  return fmt::format("XLA runs in this process ({}) and writes no dumps nanscope reads, which say what its kernels "
                     "write: set XLA_FLAGS=--xla_dump_to=DIR before the program starts (XLA reads it once), or run "
                     "the program under `nanscope --`, which sets it",
                     file);
}

}  // namespace nanscope::xla

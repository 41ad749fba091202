// See xla_flags.hpp.
#include "xla_flags.hpp"

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

}  // namespace nanscope::xla

// Small text helpers the XLA dump readers share (xla_dump.cpp, xla_hlo.cpp, xla_thunks.cpp, ...).
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace nanscope::xla::text {

// A whole decimal number, nothing before or after it.
inline bool number(std::string_view s, uint64_t& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Calls f(line, line_number) for each line (numbers from 1), the last one without its newline.
template <class F>
void each_line(std::string_view text, F&& f) {
  uint32_t n = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    f(text.substr(0, end), ++n);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// Calls f(item) for each comma-separated item of `list` outside brackets, trimmed: the operands
// of an instruction, the elements of a tuple shape.
template <class F>
void each_top_level_item(std::string_view list, F&& f) {
  size_t start = 0;
  for (size_t i = 0, depth = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '(' || c == '{' || c == '[') ++depth;
    else if (c == ')' || c == '}' || c == ']') --depth;
    if (c != ',' || depth != 0) continue;
    f(trim(list.substr(start, i - start)));
    start = i + 1;
  }
}

// A line no reader could read, as each reader's errors name it: its number and its start.
inline std::string line_error(uint32_t n, std::string_view line) {
  return "line " + std::to_string(n) + ": " + std::string(line.substr(0, 160));
}

// The value of `key=` in `s`: a quoted string (quotes removed) or a bare token.
inline std::string_view field(std::string_view s, std::string_view key) {
  for (size_t at = s.find(key); at != std::string_view::npos; at = s.find(key, at + 1)) {
    if (at > 0 && s[at - 1] != ' ' && s[at - 1] != '{' && s[at - 1] != ',') continue;  // a longer key
    std::string_view v = s.substr(at + key.size());
    if (v.starts_with('"')) return v.substr(1, v.find('"', 1) == std::string_view::npos ? 0 : v.find('"', 1) - 1);
    return v.substr(0, v.find_first_of(" ,}"));
  }
  return {};
}

// The computation an instruction line's "calls=%name" names, without its '%'; empty when none.
inline std::string_view callee(std::string_view instruction_line) {
  const std::string_view c = field(instruction_line, "calls=");
  return c.starts_with('%') ? c.substr(1) : std::string_view{};
}

// "%fused_computation.2 (param_0.5: f32[4,8]) -> f32[4] {" or "ENTRY %main.2 (...) -> ... {".
inline std::string_view computation_name(std::string_view t) {
  if (!t.ends_with('{')) return {};
  if (t.starts_with("ENTRY ")) t.remove_prefix(6);
  if (!t.starts_with('%')) return {};
  return t.substr(1, t.find_first_of(" (") - 1);
}

}  // namespace nanscope::xla::text

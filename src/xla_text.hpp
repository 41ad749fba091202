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

// A line no reader could read, as each reader's errors name it: its number and its start.
inline std::string line_error(uint32_t n, std::string_view line) {
  return "line " + std::to_string(n) + ": " + std::string(line.substr(0, 160));
}

}  // namespace nanscope::xla::text

// Small text helpers the XLA dump readers share (xla_dump.cpp, xla_hlo.cpp).
#pragma once
#include <charconv>
#include <cstdint>
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

}  // namespace nanscope::xla::text

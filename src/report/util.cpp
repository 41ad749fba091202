#include "util.hpp"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace nanscope::report {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + std::int64_t(doe) - 719468;
}

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

}  // namespace

std::optional<std::int64_t> parse_time(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool all_digits = true;
  for (size_t i = 0; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i])) && !(i == 0 && s[i] == '-')) all_digits = false;
  if (all_digits) {
    try {
      return std::stoll(std::string(s));
    } catch (...) {
      return std::nullopt;
    }
  }
  int Y, M, D, h = 0, m = 0, sec = 0;
  if (!digits(s, 0, 4, Y) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, M) || s[7] != '-' ||
      !digits(s, 8, 2, D))
    return std::nullopt;
  if (M < 1 || M > 12 || D < 1 || D > 31) return std::nullopt;
  size_t p = 10;
  std::int64_t frac_ns = 0;
  if (p < s.size() && (s[p] == 'T' || s[p] == 't' || s[p] == ' ')) {
    ++p;
    if (!digits(s, p, 2, h) || p + 2 >= s.size() || s[p + 2] != ':' || !digits(s, p + 3, 2, m))
      return std::nullopt;
    p += 5;
    if (p < s.size() && s[p] == ':') {
      if (!digits(s, p + 1, 2, sec)) return std::nullopt;
      p += 3;
      if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
        ++p;
        std::int64_t scale = 100000000;
        size_t start = p;
        while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
          frac_ns += (s[p] - '0') * scale;
          scale /= 10;
          ++p;
        }
        if (p == start) return std::nullopt;
      }
    }
    if (h > 23 || m > 59 || sec > 60) return std::nullopt;
  }
  std::int64_t offset_s = 0;
  if (p < s.size()) {
    if (s[p] == 'Z' || s[p] == 'z') {
      ++p;
    } else if (s[p] == '+' || s[p] == '-') {
      int oh, om = 0;
      int sign = s[p] == '-' ? -1 : 1;
      if (!digits(s, p + 1, 2, oh)) return std::nullopt;
      p += 3;
      if (p < s.size() && s[p] == ':') ++p;
      if (p < s.size()) {
        if (!digits(s, p, 2, om)) return std::nullopt;
        p += 2;
      }
      offset_s = sign * (oh * 3600 + om * 60);
    }
    if (p != s.size()) return std::nullopt;
  }
  const std::int64_t secs = days_from_civil(Y, unsigned(M), unsigned(D)) * 86400 + h * 3600 + m * 60 + sec - offset_s;
  std::int64_t ns = 0;  // past 2262-04-11T23:47:16Z (or before 1677) ns do not fit in an int64
  if (__builtin_mul_overflow(secs, std::int64_t(1000000000), &ns) || __builtin_add_overflow(ns, frac_ns, &ns))
    return std::nullopt;
  return ns;
}

std::string iso8601(std::int64_t ns) {
  std::int64_t secs = ns >= 0 ? ns / 1000000000LL : (ns - 999999999LL) / 1000000000LL;
  std::int64_t frac = ns - secs * 1000000000LL;
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(frac));
  return buf;
}

std::string rel_time(std::int64_t d) {
  char buf[64];
  const char* sign = d < 0 ? "-" : "+";
  double a = d < 0 ? -double(d) : double(d);
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%s%.0f ns", sign, a);
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%s%.3f us", sign, a / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%s%.3f ms", sign, a / 1e6);
  else if (a < 60e9) std::snprintf(buf, sizeof buf, "%s%.3f s", sign, a / 1e9);
  else {
    long long mins = static_cast<long long>(a / 60e9);
    std::snprintf(buf, sizeof buf, "%s%lldm%04.1fs", sign, mins, (a - double(mins) * 60e9) / 1e9);
  }
  return buf;
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1B && i + 1 < s.size() && s[i + 1] == '[') {  // ANSI colour: no width
      i += 2;
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

namespace {

// Byte offset of the code point with index `cp` in s.
std::size_t cp_offset(std::string_view s, std::size_t cp) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == cp) return i;
      ++n;
    }
  }
  return s.size();
}

// Index of the '(' that opens the parameter list of a demangled name, or npos.
std::size_t params_open(std::string_view s) {
  if (s.empty() || s.back() != ')') return std::string_view::npos;
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    else if (s[i] == '(' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string shorten_kernel(std::string_view name, std::size_t width) {
  if (display_width(name) <= width) return std::string(name);
  std::string s(name);
  // 1. Drop the parameter list: "kern<T>(float*, int)" -> "kern<T>(…)".
  if (auto open = params_open(s); open != std::string::npos && open > 0) s = s.substr(0, open) + "(…)";
  // 2. Drop a leading return type ("void ").
  if (s.starts_with("void ")) s = s.substr(5);
  // 3. Collapse template argument lists, innermost first, until it fits.
  while (display_width(s) > width) {
    std::size_t best_open = std::string::npos, best_close = 0;
    int depth = 0, maxdepth = 0;
    std::size_t open_at[64] = {};
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '<') {
        ++depth;
        if (depth < 64) open_at[depth] = i;
      } else if (s[i] == '>' && depth > 0) {
        if (depth < 64 && depth >= maxdepth && i - open_at[depth] > 2) {
          std::string_view inner(s.data() + open_at[depth] + 1, i - open_at[depth] - 1);
          if (inner != "…") {
            maxdepth = depth;
            best_open = open_at[depth];
            best_close = i;
          }
        }
        --depth;
      }
    }
    if (best_open == std::string::npos) break;
    s = s.substr(0, best_open + 1) + "…" + s.substr(best_close);
  }
  // 4. Still too long: keep the head and the tail (the function name usually ends it).
  if (display_width(s) > width && width > 4) {
    std::size_t total = display_width(s);
    std::size_t head = (width - 1) / 3, tail = width - 1 - head;
    s = s.substr(0, cp_offset(s, head)) + "…" + s.substr(cp_offset(s, total - tail));
  }
  return s;
}

std::string pad(std::string_view s, std::size_t width, bool right_align) {
  std::size_t w = display_width(s);
  std::string out;
  if (w >= width) return std::string(s);
  if (right_align) out.append(width - w, ' ');
  out.append(s);
  if (!right_align) out.append(width - w, ' ');
  return out;
}

std::string ranges_str(const std::vector<RowRange>& r, std::size_t max_items) {
  std::string s;
  for (std::size_t i = 0; i < r.size() && i < max_items; ++i) {
    if (i) s += ", ";
    s += std::to_string(r[i].first);
    if (r[i].second != r[i].first) s += ".." + std::to_string(r[i].second);
  }
  if (r.size() > max_items) s += ", … (" + std::to_string(r.size() - max_items) + " more)";
  return s;
}

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string group_digits(std::int64_t v) {
  // The magnitude as unsigned: -INT64_MIN does not fit in an int64.
  const std::uint64_t mag = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  std::string d = std::to_string(mag), o;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) o += ',';
    o += d[i];
  }
  return v < 0 ? "-" + o : o;
}

void append_control_escape(std::string& out, unsigned cp) {
  char buf[8];
  std::snprintf(buf, sizeof buf, cp < 0x80 ? "\\x%02x" : "\\u%04x", cp);
  out += buf;
}

void append_utf8(std::string& out, unsigned cp) {
  if (is_control(cp)) return append_control_escape(out, cp);
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string printable(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0u;
    if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {  // a C1 control in UTF-8
      append_control_escape(o, next);
      ++i;
    } else if (is_control(c)) {
      append_control_escape(o, c);
    } else {
      o += char(c);
    }
  }
  return o;
}

}  // namespace nanscope::report

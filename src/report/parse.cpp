// Strict single-pass JSON line parser for nanscope/1 events. See event.hpp.
#include "event.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <type_traits>

#include "fields.hpp"
#include "util.hpp"
#include "log_schema.hpp"

namespace nanscope::report {

namespace {

struct SyntaxError {
  ErrorKind kind;
  std::string message;
};

constexpr int kMaxDepth = 128;

class Parser {
 public:
  Parser(std::string_view line, Event& ev)
      : b_(line.data()), p_(line.data()), e_(line.data() + line.size()), ev_(ev) {}

  ParseError run() {
    try {
      object_top();
    } catch (SyntaxError& s) {
      return {s.kind, std::move(s.message)};
    }
    if (!field_error_.empty()) return {ErrorKind::field, std::move(field_error_)};
    return check_event(ev_);
  }

 private:
  const char* b_;
  const char* p_;
  const char* e_;
  Event& ev_;
  std::string key_scratch_, str_scratch_, field_error_;
  std::string_view scope_;  // the nested object being read ("buffer"), for error messages

  [[noreturn]] void syntax(const char* what) {
    std::string m;
    if (p_ >= e_) {
      m = "truncated JSON: the line ends early (";
      m += what;
      m += ')';
    } else {
      m = "invalid JSON at column " + std::to_string(p_ - b_ + 1) + ": " + what;
    }
    throw SyntaxError{ErrorKind::syntax, std::move(m)};
  }

  void type_error(std::string_view key, const char* expected) {
    if (!field_error_.empty()) return;
    field_error_ = "field '";
    if (!scope_.empty()) field_error_.append(scope_).append(".");
    field_error_ += key;
    field_error_ += "': expected ";
    field_error_ += expected;
  }

  void ws() {
    while (p_ < e_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }

  void expect(char c, const char* what) {
    if (p_ >= e_ || *p_ != c) syntax(what);
    ++p_;
  }

  // ---- strings -------------------------------------------------------------------------

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  unsigned u4() {  // p_ after "\u"
    if (e_ - p_ < 4) {
      p_ = e_;
      syntax("inside a \\u escape");
    }
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      int h = hex(p_[i]);
      if (h < 0) {
        p_ += i;
        syntax("bad hex digit in \\u escape");
      }
      v = v * 16 + unsigned(h);
    }
    p_ += 4;
    return v;
  }

  static void put_utf8(std::string* out, unsigned cp) {
    if (out) append_utf8(*out, cp);
  }

  // Validates one UTF-8 multi-byte sequence starting at p_ (a byte >= 0x80) and advances.
  void utf8() {
    auto c = static_cast<unsigned char>(*p_);
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) n = 2, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 2;
    else if (c == 0xED) n = 2, hi = 0x9F;
    else if (c == 0xF0) n = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) n = 3, hi = 0x8F;
    else syntax("invalid UTF-8 in string");
    ++p_;
    for (int i = 0; i < n; ++i) {
      if (p_ >= e_) syntax("inside a string");
      auto d = static_cast<unsigned char>(*p_);
      if (d < lo || d > hi) syntax("invalid UTF-8 in string");
      lo = 0x80, hi = 0xBF;
      ++p_;
    }
  }

  // Advances p_ over plain ASCII: 8 bytes a step while none of them is a quote, a backslash, a
  // control character or DEL and up (any such byte: the byte loop decides where it stops).
  void skip_plain() {
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
    while (e_ - p_ >= 8) {
      std::uint64_t x;
      std::memcpy(&x, p_, 8);
      const std::uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
      const std::uint64_t special = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                                    ((x - kOnes * 0x20) & ~x) | x | (x + kOnes);
      if (special & kHighs) break;
      p_ += 8;
    }
    while (p_ < e_) {
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7F) return;  // DEL and up: the slow path
      ++p_;
    }
  }

  // p_ at the opening quote. Returns the decoded string: a view into the line when it has
  // no escapes, else into *scratch (or an empty view when scratch is null: validate only).
  std::string_view string(std::string* scratch) {
    ++p_;
    const char* start = p_;
    skip_plain();  // the fast path: plain ASCII without escapes
    if (p_ < e_ && *p_ == '"') {
      std::string_view v(start, size_t(p_ - start));
      ++p_;
      return v;
    }
    // Slow path: escapes, control characters or UTF-8.
    if (scratch) scratch->assign(start, size_t(p_ - start));
    bool escaped = false;
    while (true) {
      if (p_ >= e_) syntax("inside a string");
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        if (!escaped) return {start, size_t(p_ - 1 - start)};
        return scratch ? std::string_view(*scratch) : std::string_view();
      }
      if (c < 0x20) syntax("control character inside a string");
      if (c == '\\') {
        escaped = true;
        ++p_;
        if (p_ >= e_) syntax("inside a string escape");
        char x = *p_++;
        switch (x) {
          case '"': case '\\': case '/':
            if (scratch) scratch->push_back(x);
            break;
          case 'b': put_utf8(scratch, '\b'); break;
          case 'f': put_utf8(scratch, '\f'); break;
          case 'n': put_utf8(scratch, '\n'); break;
          case 'r': put_utf8(scratch, '\r'); break;
          case 't': put_utf8(scratch, '\t'); break;
          case 'u': {
            unsigned cp = u4();
            if (cp >= 0xDC00 && cp <= 0xDFFF) syntax("lone low surrogate in \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (e_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
                if (e_ - p_ < 2) p_ = e_;
                syntax("high surrogate not followed by a low surrogate");
              }
              p_ += 2;
              unsigned lo = u4();
              if (lo < 0xDC00 || lo > 0xDFFF) syntax("high surrogate not followed by a low surrogate");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(scratch, cp);
            break;
          }
          default:
            --p_;
            syntax("invalid escape in string");
        }
        continue;
      }
      if (c >= 0x80) {
        const char* s = p_;
        utf8();
        const bool c1 = p_ - s == 2 && static_cast<unsigned char>(s[0]) == 0xC2 && static_cast<unsigned char>(s[1]) < 0xA0;
        escaped |= c1;  // U+0080..U+009F: written as an escape, so the view into the line will not do
        if (scratch && c1) append_control_escape(*scratch, static_cast<unsigned char>(s[1]));
        else if (scratch) scratch->append(s, size_t(p_ - s));
        continue;
      }
      escaped |= c == 0x7F;
      put_utf8(scratch, c);
      ++p_;
    }
  }

  void str_field(std::string_view key, std::string& out) {
    if (*p_ == '"') {
      std::string_view v = string(&str_scratch_);
      out.assign(v.data(), v.size());
    } else {
      if (!null()) type_error(key, "a string");
    }
  }

  // ---- numbers and literals -------------------------------------------------------------

  // Parses a JSON number. Sets *integral and returns the value if it is an integer that fits.
  std::int64_t number(bool* integral, bool* overflow) {
    bool neg = false;
    if (*p_ == '-') {
      neg = true;
      ++p_;
    }
    if (p_ >= e_) syntax("inside a number");
    std::uint64_t v = 0;
    bool ovf = false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < e_ && *p_ >= '0' && *p_ <= '9') {
        unsigned d = unsigned(*p_ - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) ovf = true;
        else v = v * 10 + d;
        ++p_;
      }
    } else {
      syntax("invalid number");
    }
    bool integer = true;
    if (p_ < e_ && *p_ == '.') {
      ++p_;
      if (p_ >= e_) syntax("inside a number");
      if (*p_ < '0' || *p_ > '9') syntax("invalid number: digit expected after '.'");
      while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
      integer = false;
    }
    if (p_ < e_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < e_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= e_) syntax("inside a number");
      if (*p_ < '0' || *p_ > '9') syntax("invalid number: digit expected in exponent");
      while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
      integer = false;
    }
    constexpr auto kMax = std::uint64_t(std::numeric_limits<std::int64_t>::max());
    if (v > kMax + (neg ? 1 : 0)) ovf = true;
    *integral = integer;
    *overflow = ovf;
    if (ovf || !integer) return 0;
    return neg ? std::int64_t(0 - v) : std::int64_t(v);
  }

  bool literal(const char* word, size_t n) {
    if (size_t(e_ - p_) < n) {
      if (std::memcmp(p_, word, size_t(e_ - p_)) == 0) {
        p_ = e_;
        syntax("inside a literal");
      }
      syntax("invalid literal");
    }
    if (std::memcmp(p_, word, n) != 0) syntax("invalid literal");
    p_ += n;
    return true;
  }

  bool null() {
    if (*p_ == 'n') return literal("null", 4);
    skip_value(0);
    return false;
  }

  // Reads an integer field into out; returns false (and records a type error) otherwise.
  bool int_field(std::string_view key, std::int64_t& out) {
    char c = *p_;
    if (c == '-' || (c >= '0' && c <= '9')) {
      bool integral, overflow;
      std::int64_t v = number(&integral, &overflow);
      if (!integral) {
        type_error(key, "an integer");
        return false;
      }
      if (overflow) {
        type_error(key, "an integer in 64-bit range");
        return false;
      }
      out = v;
      return true;
    }
    if (!null()) type_error(key, "an integer");
    return false;
  }

  // A number, integer or not (spread shares); the grammar is number()'s.
  void real_field(std::string_view key, double& out) {
    const char c = *p_;
    if (c != '-' && (c < '0' || c > '9')) {
      if (!null()) type_error(key, "a number");
      return;
    }
    const char* start = p_;
    bool integral, overflow;
    number(&integral, &overflow);
    std::from_chars(start, p_, out);  // out of double range: left as it was
  }

  bool bool_field(std::string_view key, bool& out) {
    if (*p_ == 't') {
      literal("true", 4);
      out = true;
      return true;
    }
    if (*p_ == 'f') {
      literal("false", 5);
      out = false;
      return true;
    }
    if (!null()) type_error(key, "a boolean");
    return false;
  }

  // ---- generic skipping -----------------------------------------------------------------

  void skip_value(int depth) {
    if (p_ >= e_) syntax("where a value was expected");
    switch (*p_) {
      case '"': string(nullptr); return;
      case '{':
        if (depth >= kMaxDepth) throw SyntaxError{ErrorKind::limit, "nesting deeper than 128 levels"};
        members([&](std::string_view) { skip_value(depth + 1); });
        return;
      case '[':
        if (depth >= kMaxDepth) throw SyntaxError{ErrorKind::limit, "nesting deeper than 128 levels"};
        elements([&] { skip_value(depth + 1); });
        return;
      case 't': literal("true", 4); return;
      case 'f': literal("false", 5); return;
      case 'n': literal("null", 4); return;
      default: {
        char c = *p_;
        if (c == '-' || (c >= '0' && c <= '9')) {
          bool i, o;
          number(&i, &o);
          return;
        }
        syntax("where a value was expected");
      }
    }
  }

  // Iterates an object's members: p_ at '{'. fn(key) is called with p_ at the value (after
  // whitespace) and must consume it.
  template <class Fn>
  void members(Fn&& fn) {
    ++p_;
    ws();
    if (p_ < e_ && *p_ == '}') {
      ++p_;
      return;
    }
    while (true) {
      ws();
      if (p_ >= e_ || *p_ != '"') syntax("where an object key was expected");
      std::string_view key = string(&key_scratch_);
      std::string key_copy;
      if (!key.empty() && key.data() == key_scratch_.data()) {  // escaped key: keep it stable
        key_copy.assign(key);
        key = key_copy;
      }
      ws();
      expect(':', "expected ':' after an object key");
      ws();
      if (p_ >= e_) syntax("where a value was expected");
      fn(key);
      ws();
      if (p_ < e_ && *p_ == ',') {
        ++p_;
        continue;
      }
      expect('}', "expected ',' or '}' in an object");
      return;
    }
  }

  template <class Fn>
  void elements(Fn&& fn) {  // p_ at '['
    ++p_;
    ws();
    if (p_ < e_ && *p_ == ']') {
      ++p_;
      return;
    }
    while (true) {
      ws();
      if (p_ >= e_) syntax("where a value was expected");
      fn();
      ws();
      if (p_ < e_ && *p_ == ',') {
        ++p_;
        continue;
      }
      expect(']', "expected ',' or ']' in an array");
      return;
    }
  }

  // ---- nanscope fields ------------------------------------------------------------------

  void int_array(std::string_view key, std::vector<std::int64_t>& out) {
    if (*p_ != '[') {
      if (!null()) type_error(key, "an array of integers");
      return;
    }
    elements([&] {
      std::int64_t v;
      if (int_field(key, v)) out.push_back(v);
    });
  }

  void ranges(std::string_view key, std::vector<RowRange>& out) {
    if (*p_ != '[') {
      if (!null()) type_error(key, "an array of [lo,hi] pairs");
      return;
    }
    elements([&] {
      if (*p_ != '[') {
        skip_value(2);
        type_error(key, "an array of [lo,hi] pairs");
        return;
      }
      std::int64_t v[2] = {0, 0};
      int n = 0;
      elements([&] {
        std::int64_t x;
        if (int_field(key, x) && n < 2) v[n] = x;
        ++n;
      });
      if (n != 2) type_error(key, "an array of [lo,hi] pairs");
      else out.emplace_back(v[0], v[1]);
    });
  }

  // A nested object: each member's value decoded by the object's table (fields.cpp).
  template <typename O>
  void sub_object(std::string_view key, Has h, std::span<const Field<O>> table, O& obj) {
    if (*p_ != '{') {
      if (!null()) type_error(key, "an object");
      return;
    }
    ev_.has |= h;
    scope_ = key;
    members([&](std::string_view k) {
      auto f = std::find_if(table.begin(), table.end(), [&](const Field<O>& x) { return x.key == k; });
      if (f == table.end()) skip_value(2);
      else value(*f, k, obj, 2);
    });
    scope_ = {};
  }

  // A string field whose value is one of the schema's enum strings.
  void enum_string(std::string_view key, FieldKind kind) {
    if (*p_ != '"') {
      if (!null()) type_error(key, "a string");
      return;
    }
    const std::string_view v = string(&str_scratch_);
    if (kind == FieldKind::region) {
      ev_.has |= h_region;
      ev_.region = schema::region_from(v);
    } else if (kind == FieldKind::origin) {
      ev_.has |= h_origin;
      ev_.origin = schema::origin_from(v);
    } else if (kind == FieldKind::inf) {
      ev_.has |= h_inf;
      ev_.inf = v == schema::inf_str::intended     ? InfKind::intended
                : v == schema::inf_str::arithmetic ? InfKind::arithmetic
                                                   : InfKind::other;
    } else if (v == schema::action_str::zeroed) {  // action
      ev_.fixed = true;
      ev_.has |= h_fixed;
    }
  }

  void object_field(std::string_view k) {
    if (k == schema::key::buffer) sub_object(k, h_buffer, buffer_fields(), ev_.buffer);
    else if (k == schema::key::counts) sub_object(k, h_counts, counts_fields(), ev_.counts);
    else if (k == schema::key::spread) sub_object(k, h_spread, spread_fields(), ev_.spread);
    else if (k == schema::key::last_writer) sub_object(k, h_last_writer, last_writer_fields(), ev_.last_writer);
    else if (k == schema::key::infinities) sub_object(k, h_infinities, infinities_fields(), ev_);
    else sub_object(k, h_rows, rows_fields(), ev_);  // rows
  }

  // Decodes one value by its table entry into obj; `depth` for skipping an ignored value.
  template <typename O>
  void value(const Field<O>& f, std::string_view k, O& obj, int depth) {
    switch (f.kind) {
      case FieldKind::i64:
        if (int_field(k, obj.*f.i)) ev_.has |= f.has;
        return;
      case FieldKind::str: {
        const bool was_string = *p_ == '"';
        str_field(k, obj.*f.s);
        if (was_string) ev_.has |= f.has;
        return;
      }
      case FieldKind::boolean:
        if (bool_field(k, obj.*f.b)) ev_.has |= f.has;
        return;
      case FieldKind::ints:
        if (*p_ == '[') ev_.has |= f.has;
        return int_array(k, obj.*f.v);
      case FieldKind::ranges: return ranges(k, obj.*f.r);
      case FieldKind::real: return real_field(k, obj.*f.d);
      case FieldKind::region:
      case FieldKind::origin:
      case FieldKind::inf:
      case FieldKind::action: return enum_string(k, f.kind);
      case FieldKind::object:
        if constexpr (std::is_same_v<O, Event>) return object_field(k);
        break;
      case FieldKind::raw: {
        const char* start = p_;
        skip_value(depth);  // validated
        (obj.*f.s).assign(start, static_cast<std::size_t>(p_ - start));
        return;
      }
      case FieldKind::ignored: break;
    }
    skip_value(depth);  // validated and ignored
  }

  void field(std::string_view k) {
    if (const Field<Event>* f = top_field(k)) value(*f, k, ev_, 1);
    else skip_value(1);  // unknown field: validated and ignored
  }

  void object_top() {
    ws();
    if (p_ >= e_) syntax("no JSON value");
    if (*p_ != '{') {
      skip_value(0);  // report a syntax error if there is one, else a type error
      ws();
      if (p_ < e_) syntax("unexpected characters after the JSON value");
      throw SyntaxError{ErrorKind::field, "the line is not a JSON object"};
    }
    members([&](std::string_view k) { field(k); });
    ws();
    if (p_ < e_) syntax("unexpected characters after the JSON object");
  }
};

}  // namespace

ParseError parse_line(std::string_view line, Event& ev) {
  ev.reset();
  Parser p(line, ev);
  ParseError pe = p.run();
  if (!pe) pe = check_ranges(ev);
  if (!pe && !ev.collective_json.empty())
    if (std::string e = decode_collective(ev.collective_json, ev.collective); !e.empty()) pe = {ErrorKind::field, e};
  return pe;
}

}  // namespace nanscope::report

#include "rules.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace nanscope {

using nlohmann::json;

bool Rule::matches(std::string_view demangled) const { return kernel_re && kernel_re->search(demangled); }

std::string Rule::where() const {
  auto rule = fmt::format("rule {} (\"{}\")", index, name);
  return file.empty() ? rule : file + ": " + rule;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Parsing. A problem inside a rule throws Bad, caught once per rule: the rule is skipped.

struct Bad {
  std::string field;  // dotted path inside the rule, e.g. "output.rows.param"
  std::string message;
};

std::string join(std::string_view field, std::string_view key) {
  return field.empty() ? std::string(key) : fmt::format("{}.{}", field, key);
}

// The value as JSON, shortened for messages.
std::string shown(const json& v) {
  auto s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

const char* kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "a binary value";
  }
}

[[noreturn]] void bad(std::string field, std::string message) {
  throw Bad{std::move(field), std::move(message)};
}

const json& object(const json& v, const std::string& field,
                   std::initializer_list<std::string_view> allowed) {
  if (!v.is_object()) bad(field, fmt::format("expected an object, got {} {}", kind(v), shown(v)));
  for (const auto& [key, _] : v.items()) {
    bool known = false;
    for (auto a : allowed) known = known || key == a;
    if (!known)
      bad(join(field, key), fmt::format("unknown field (expected {})", fmt::join(allowed, ", ")));
  }
  return v;
}

const json& required(const json& obj, const std::string& field, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(join(field, key), "missing");
  return *it;
}

const json* optional_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

uint64_t unsigned_int(const json& v, const std::string& field, uint64_t max) {
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)
    bad(field, fmt::format("{} is negative", shown(v)));
  if (v.is_number_float()) bad(field, fmt::format("{} is not an integer", shown(v)));
  if (!v.is_number_integer())
    bad(field, fmt::format("expected a non-negative integer, got {} {}", kind(v), shown(v)));
  const auto u = v.get<uint64_t>();
  if (u > max) bad(field, fmt::format("{} is larger than {}", u, max));
  return u;
}

std::string string(const json& v, const std::string& field) {
  if (!v.is_string()) bad(field, fmt::format("expected a string, got {} {}", kind(v), shown(v)));
  return v.get<std::string>();
}

DType dtype(const json& v, const std::string& field) {
  static constexpr std::array kTypes = {DType::f64,  DType::f32,    DType::f16,
                                        DType::bf16, DType::f8e4m3, DType::f8e5m2};
  const auto s = string(v, field);
  for (auto t : kTypes)
    if (s == dtype_name(t)) return t;
  bad(field, fmt::format("\"{}\" is not one of f64, f32, f16, bf16, f8e4m3, f8e5m2", s));
}

IndexType index_type(const json& v, const std::string& field) {
  const auto s = string(v, field);
  if (s == "int32") return IndexType::i32;
  if (s == "int64") return IndexType::i64;
  bad(field, fmt::format("\"{}\" is not one of int32, int64", s));
}

Action action(const json& v, const std::string& field) {
  const auto s = string(v, field);
  for (auto a : {Action::detect, Action::fix, Action::abort, Action::zero_padding})
    if (s == action_name(a)) return a;
  bad(field, fmt::format("\"{}\" is not one of detect, fix, abort, zero_padding", s));
}

constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();

// {"param": N, "offset": B, "type": "int32"|"int64"}: the caller has checked the keys.
ParamRef param_ref(const json& v, const std::string& field) {
  ParamRef r;
  r.param = static_cast<uint32_t>(
      unsigned_int(required(v, field, "param"), join(field, "param"), kU32Max));
  if (auto* o = optional_field(v, "offset"))
    r.offset = static_cast<uint32_t>(unsigned_int(*o, join(field, "offset"), kU32Max));
  if (auto* t = optional_field(v, "type")) r.type = index_type(*t, join(field, "type"));
  return r;
}

// A positive constant, or an integer parameter.
SizeRef size_ref(const json& v, const std::string& field) {
  SizeRef s;
  if (v.is_object()) {
    s.from_param = true;
    s.ref = param_ref(object(v, field, {"param", "offset", "type"}), field);
    return s;
  }
  if (!v.is_number())
    bad(field, fmt::format("expected a positive integer or {{\"param\": N}}, got {} {}", kind(v),
                           shown(v)));
  s.value = unsigned_int(v, field, std::numeric_limits<uint64_t>::max());
  if (s.value == 0) bad(field, "is 0");
  return s;
}

RuleOutput output(const json& v, const std::string& field) {
  object(v, field, {"param", "offset", "dtype", "rows", "row_elements", "row_stride"});
  RuleOutput o;
  o.ptr = param_ref(v, field);  // "type" is not an allowed key here
  o.dtype = dtype(required(v, field, "dtype"), join(field, "dtype"));
  o.rows = size_ref(required(v, field, "rows"), join(field, "rows"));
  o.row_elements = size_ref(required(v, field, "row_elements"), join(field, "row_elements"));
  if (auto* st = optional_field(v, "row_stride")) {
    o.row_stride = size_ref(*st, join(field, "row_stride"));
    if (!o.row_stride->from_param && !o.row_elements.from_param &&
        o.row_stride->value < o.row_elements.value)
      bad(join(field, "row_stride"), fmt::format("{} is smaller than row_elements ({})",
                                                 o.row_stride->value, o.row_elements.value));
  }
  return o;
}

RulePadding padding(const json& v, const std::string& field) {
  RulePadding p;
  if (v.is_null()) return p;
  object(v, field, {"seq_lens", "real_rows", "real_rows_device", "mask"});
  if (v.size() != 1)
    bad(field, fmt::format("expected exactly one of seq_lens, real_rows, real_rows_device, mask; "
                           "got {}",
                           v.size()));
  const std::string key = v.begin().key();
  const json& body = v.begin().value();
  const auto sub = join(field, key);
  if (key == "seq_lens") {
    p.source = PaddingSource::seq_lens;
    object(body, sub, {"param", "offset", "type", "pad_value"});
    if (auto* pv = optional_field(body, "pad_value")) {
      if (!pv->is_number_integer())
        bad(join(sub, "pad_value"),
            fmt::format("expected an integer, got {} {}", kind(*pv), shown(*pv)));
      if (pv->is_number_unsigned() &&
          pv->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        bad(join(sub, "pad_value"), fmt::format("{} does not fit int64", shown(*pv)));
      p.pad_value = pv->get<int64_t>();
    }
    p.ref = param_ref(body, sub);
    if (p.ref.type == IndexType::i32 && (p.pad_value < std::numeric_limits<int32_t>::min() ||
                                         p.pad_value > std::numeric_limits<int32_t>::max()))
      bad(join(sub, "pad_value"), fmt::format("{} does not fit type int32", p.pad_value));
  } else if (key == "mask") {
    p.source = PaddingSource::mask;
    p.ref = param_ref(object(body, sub, {"param", "offset"}), sub);
  } else {
    p.source = key == "real_rows" ? PaddingSource::real_count_host
                                  : PaddingSource::real_count_device;
    p.ref = param_ref(object(body, sub, {"param", "offset", "type"}), sub);
  }
  return p;
}

SafeRegex kernel_regex(const std::string& pattern, const std::string& field) {
  if (pattern.empty()) bad(field, "is empty (use \".\" to match every kernel)");
  std::string error;
  auto re = SafeRegex::compile(pattern, &error);
  if (!re) bad(field, fmt::format("\"{}\" is not a valid regular expression: {}", pattern, error));
  return std::move(*re);
}

Rule rule(const json& v) {
  object(v, "", {"name", "kernel", "output", "padding", "action", "comment"});
  Rule r;
  r.name = string(required(v, "", "name"), "name");
  if (r.name.empty()) bad("name", "is empty");
  r.kernel = string(required(v, "", "kernel"), "kernel");
  r.kernel_re = kernel_regex(r.kernel, "kernel");
  r.output = output(required(v, "", "output"), "output");
  if (auto* p = optional_field(v, "padding")) r.padding = padding(*p, "padding");
  if (auto* a = optional_field(v, "action")) r.action = action(*a, "action");
  return r;
}

std::string rule_label(const json& v, std::size_t i) {
  if (v.is_object())
    if (auto it = v.find("name"); it != v.end() && it->is_string())
      return fmt::format("rule {} (\"{}\")", i, it->get<std::string>());
  return fmt::format("rule {}", i);
}

}  // namespace

RulesResult parse_rules(std::string_view text, const std::string& path) {
  RulesResult out;
  auto error = [&](std::string_view what) {
    out.errors.push_back(fmt::format("{}: {}", path, what));
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    std::string_view what = e.what();  // "[json.exception.parse_error.101] parse error at ..."
    if (auto p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
    error(fmt::format("not valid JSON: {} (byte {})", what, e.byte));
    return out;
  } catch (const json::exception& e) {  // a number past double range (406): found by .ci/fuzz
    std::string_view what = e.what();
    if (auto p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
    error(fmt::format("not valid JSON: {}", what));
    return out;
  }
  if (!doc.is_object()) {
    error(fmt::format("expected an object {{\"version\": 1, \"rules\": [...]}}, got {}",
                      kind(doc)));
    return out;
  }
  for (const auto& [key, _] : doc.items())
    if (key != "version" && key != "rules" && key != "comment")
      error(fmt::format("{}: unknown field (expected version, rules, comment)", key));
  if (auto it = doc.find("version"); it != doc.end() && !(it->is_number_integer() && *it == 1)) {
    error(fmt::format("version: {} is not supported (this nanscope reads version 1)", shown(*it)));
    return out;
  }
  auto it = doc.find("rules");
  if (it == doc.end()) {
    error("rules: missing");
    return out;
  }
  if (!it->is_array()) {
    error(fmt::format("rules: expected an array, got {}", kind(*it)));
    return out;
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& v = (*it)[i];
    try {
      Rule r = rule(v);
      for (const auto& prev : out.file.rules)
        if (prev.name == r.name)
          bad("name", fmt::format("\"{}\" is already used by rule {}", r.name, prev.index));
      r.file = path;
      r.index = i;
      out.file.rules.push_back(std::move(r));
    } catch (const Bad& b) {
      error(fmt::format("{}: {}{}{}", rule_label(v, i), b.field, b.field.empty() ? "" : ": ",
                        b.message));
    }
  }
  return out;
}

RulesResult load_rules(const std::string& path) {
  RulesResult out;
  // Opened without blocking (a FIFO must not hang the application) and checked before it is
  // read: a directory, a device or a file larger than any rules file is named as such.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    out.errors.push_back(fmt::format("{}: cannot open rules file: {}", path, std::strerror(errno)));
    return out;
  }
  struct stat st{};
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = fmt::format("cannot stat rules file: {}", std::strerror(errno));
  else if (S_ISDIR(st.st_mode)) problem = "is a directory, not a rules file";
  else if (!S_ISREG(st.st_mode)) problem = "is not a regular file";
  else if (std::uint64_t(st.st_size) > kMaxRulesBytes)
    problem = fmt::format("rules file of {} bytes is larger than the {} MiB limit; no rules loaded", st.st_size,
                          kMaxRulesBytes >> 20);
  std::string text;
  if (problem.empty()) {
    text.resize(std::size_t(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += std::size_t(n);
    }
    if (got != text.size()) problem = "cannot read rules file";
  }
  ::close(fd);
  if (!problem.empty()) {
    out.errors.push_back(fmt::format("{}: {}", path, problem));
    return out;
  }
  return parse_rules(text, path);
}

// ---------------------------------------------------------------------------------------------
// Resolution at launch time.

namespace {

struct Resolver {
  const ParamReader& read;
  std::string error;  // set by the first failure

  bool fail(std::string_view field, std::string message) {
    error = fmt::format("{}: {}", field, message);
    return false;
  }

  bool bytes(std::string_view field, const ParamRef& r, void* out, size_t n) {
    if (read(r.param, r.offset, out, n)) return true;
    return fail(field, fmt::format("cannot read {} bytes of parameter {} at offset {}", n, r.param,
                                   r.offset));
  }

  bool pointer(std::string_view field, const ParamRef& r, uint64_t* out) {
    if (!bytes(field, r, out, sizeof *out)) return false;
    if (*out == 0)
      return fail(field, fmt::format("parameter {} offset {} holds a null pointer", r.param,
                                     r.offset));
    return true;
  }

  // A non-negative integer parameter of width r.type.
  bool count(std::string_view field, const ParamRef& r, uint64_t* out) {
    int64_t v = 0;
    if (r.type == IndexType::i32) {
      int32_t v32 = 0;
      if (!bytes(field, r, &v32, sizeof v32)) return false;
      v = v32;
    } else if (!bytes(field, r, &v, sizeof v)) {
      return false;
    }
    if (v < 0) return fail(field, fmt::format("parameter {} holds {} (negative)", r.param, v));
    *out = static_cast<uint64_t>(v);
    return true;
  }

  bool size(std::string_view field, const SizeRef& s, uint64_t* out) {
    if (!s.from_param) {
      *out = s.value;
      return true;
    }
    if (!count(field, s.ref, out)) return false;
    if (*out == 0) return fail(field, fmt::format("parameter {} holds 0", s.ref.param));
    return true;
  }
};

}  // namespace

std::optional<WatchSpec> resolve(const Rule& rule, const ParamReader& read, std::string* error) {
  auto failed = [&](const std::string& what) -> std::optional<WatchSpec> {
    if (error) *error = fmt::format("{}: {}", rule.where(), what);
    return std::nullopt;
  };
  if (!read) return failed("no parameter reader");
  Resolver r{read, {}};
  WatchSpec w;
  w.name = rule.name;
  w.dtype = rule.output.dtype;
  w.action = rule.action;
  if (!r.pointer("output", rule.output.ptr, &w.ptr) ||
      !r.size("output.rows", rule.output.rows, &w.rows) ||
      !r.size("output.row_elements", rule.output.row_elements, &w.row_elements) ||
      (rule.output.row_stride && !r.size("output.row_stride", *rule.output.row_stride,
                                         &w.row_stride)))
    return failed(r.error);

  const auto& p = rule.padding;
  PaddingSpec& spec = w.padding;
  spec.source = p.source;
  spec.rows = w.rows;
  spec.index_type = p.ref.type;
  spec.pad_value = p.pad_value;
  switch (p.source) {
    case PaddingSource::none: spec.rows = 0; break;
    case PaddingSource::seq_lens:
      if (!r.pointer("padding.seq_lens", p.ref, &spec.device_ptr)) return failed(r.error);
      break;
    case PaddingSource::real_count_device:
      if (!r.pointer("padding.real_rows_device", p.ref, &spec.device_ptr)) return failed(r.error);
      break;
    case PaddingSource::mask:
      if (!r.pointer("padding.mask", p.ref, &spec.device_ptr)) return failed(r.error);
      spec.index_type = IndexType::i32;
      break;
    case PaddingSource::real_count_host:
      if (!r.count("padding.real_rows", p.ref, &spec.host_count)) return failed(r.error);
      if (spec.host_count > w.rows)
        return failed(fmt::format("padding.real_rows: parameter {} holds {}, more than rows ({})",
                                  p.ref.param, spec.host_count, w.rows));
      break;
  }
  if (auto e = validate(w); !e.empty()) return failed("invalid watch: " + e);
  return w;
}

}  // namespace nanscope

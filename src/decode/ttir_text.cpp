// Line-level MLIR text for the Triton decoder; see ttir_text.hpp.
#include "decode/ttir_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace nanscope::decode::ttir {

namespace {

constexpr std::size_t kMaxValues = 1u << 21;  // far above any kernel; bounds memory on garbage
constexpr std::size_t kMaxScopes = 512;
constexpr std::size_t kMaxRootSteps = 4096;

struct OpKind {
  std::string_view name;
  Op op;
};
// The ops the decoder models; every other op defines an opaque value.
constexpr std::array kOps{
    OpKind{"tt.splat", Op::shape},          OpKind{"tt.broadcast", Op::shape},
    OpKind{"tt.expand_dims", Op::shape},    OpKind{"tt.reshape", Op::shape},
    OpKind{"arith.extsi", Op::shape},  // widening a non-negative index keeps its value (64-bit indexing)
    OpKind{"tt.bitcast", Op::ptr_view},     OpKind{"tt.trans", Op::ptr_view},
    OpKind{"tt.advance", Op::ptr_view},     OpKind{"tt.make_tensor_ptr", Op::ptr_view},
    OpKind{"tt.addptr", Op::addptr},        OpKind{"arith.select", Op::select},
    OpKind{"tt.make_range", Op::make_range}, OpKind{"tt.get_program_id", Op::program_id},
    OpKind{"arith.muli", Op::muli},         OpKind{"arith.addi", Op::addi},
    OpKind{"arith.cmpi", Op::cmpi_slt},     OpKind{"arith.constant", Op::constant},
};

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '.' || c == '-' || c == '#';
}

// Index just past the quoted string starting at `q` (text[q] == '"'); npos if unterminated.
std::size_t skip_quoted(std::string_view text, std::size_t q) {
  for (std::size_t i = q + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Bracket depth walker shared by the splitters: calls `at(i, depth)` for each character outside
// quoted strings; stops when `at` returns true. "->" does not close a '<'.
template <typename F>
std::size_t walk(std::string_view text, F at) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = skip_quoted(text, i);
      if (end == std::string_view::npos) return std::string_view::npos;
      i = end - 1;
      continue;
    }
    if (at(i, depth)) return i;
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '}' || (c == '>' && (i == 0 || text[i - 1] != '-'))) --depth;
  }
  return std::string_view::npos;
}

std::size_t top_level(std::string_view text, std::string_view needle) {
  return walk(text, [&](std::size_t i, int depth) { return depth == 0 && text.substr(i, needle.size()) == needle; });
}

bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// The integer after `key = ` in an attribute dictionary ("end = 1024 : i32").
bool attr_int(std::string_view text, std::string_view key, int64_t& out) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return false;
  std::string_view v = text.substr(at + key.size());
  const std::size_t end = v.find_first_of(" :,}");
  return parse_int(v.substr(0, end), out);
}

std::vector<std::string_view> tokens(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') {
      const std::size_t end = skip_quoted(text, i);
      if (end == std::string_view::npos) break;
      i = end - 1;
    } else if (text[i] == '%') {
      std::size_t j = i + 1;
      while (j < text.size() && name_char(text[j])) ++j;
      if (j > i + 1) out.push_back(text.substr(i + 1, j - i - 1));
      i = j - 1;
    }
  }
  return out;
}

}  // namespace

std::string_view trim(std::string_view s) {
  const std::size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const std::size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::size_t match_close(std::string_view text, std::size_t open) {
  if (open >= text.size() || text[open] != '(') return std::string_view::npos;
  int parens = 0;
  const std::size_t at = walk(text.substr(open), [&](std::size_t i, int) {
    const char c = text[open + i];
    parens += c == '(' ? 1 : c == ')' ? -1 : 0;
    return parens == 0;
  });
  return at == std::string_view::npos ? at : open + at;
}

std::vector<std::string_view> split_top(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  walk(text, [&](std::size_t i, int depth) {
    if (depth == 0 && text[i] == ',') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
    return false;
  });
  if (!trim(text.substr(start)).empty()) out.push_back(text.substr(start));
  return out;
}

std::string_view type_token(std::string_view text) {
  const std::size_t end = walk(text, [&](std::size_t i, int depth) { return depth == 0 && (text[i] == ' ' || text[i] == '{'); });
  return end == std::string_view::npos ? text : text.substr(0, end);
}

std::string_view pointee(std::string_view ptr_type) {
  std::string_view inner = ptr_type.substr(8);  // after "!tt.ptr<"
  const std::size_t end = walk(inner, [&](std::size_t i, int depth) {
    return depth == 0 && (inner[i] == ',' || inner[i] == '>');
  });
  return trim(end == std::string_view::npos ? inner : inner.substr(0, end));
}

std::string_view name_loc(std::string_view text) {
  const std::size_t at = text.rfind("loc(\"");
  if (at == std::string_view::npos) return {};
  const std::size_t q = at + 4;
  const std::size_t end = skip_quoted(text, q);
  if (end == std::string_view::npos || end >= text.size() || text[end] != '(') return {};
  return text.substr(q + 1, end - q - 2);
}

std::string_view ssa_name(std::string_view text) {
  const std::vector<std::string_view> t = tokens(text.substr(0, text.find(':')));
  return t.empty() ? std::string_view{} : t.front();
}

Prototype find_prototype(std::string_view text) {
  Prototype p;
  const std::string_view key = "tt.func public @";
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return p.error = "triton: no tt.func public in the TTIR", p;
  std::size_t i = at + key.size();
  const std::size_t name_start = i;
  while (i < text.size() && name_char(text[i]) && text[i] != '#') ++i;
  p.name = text.substr(name_start, i - name_start);
  const std::size_t close = match_close(text, i);
  if (p.name.empty() || close == std::string_view::npos) return p.error = "triton: the tt.func prototype is truncated", p;
  const std::size_t nl = text.find('\n', close);
  const std::string_view tail = trim(text.substr(close + 1, (nl == std::string_view::npos ? text.size() : nl) - close - 1));
  if (tail.empty() || tail.back() != '{' || nl == std::string_view::npos) return p.error = "triton: the tt.func has no body", p;
  p.args = split_top(text.substr(i + 1, close - i - 1));
  p.body = nl + 1;
  return p;
}

Line split_line(std::string_view line) {
  Line l;
  l.closes = !line.empty() && line.front() == '}';
  l.opens = !line.empty() && line.back() == '{';
  l.block_label = !line.empty() && line.front() == '^';
  if (l.closes || l.block_label) return l;  // region tails ("}) : ...", "} else {") carry no op
  std::string_view s = l.opens ? trim(line.substr(0, line.size() - 1)) : line;
  const std::size_t loc = s.rfind(" loc(");
  if (loc != std::string_view::npos && match_close(s, loc + 4) == s.size() - 1) s = trim(s.substr(0, loc));
  if (!s.empty() && s.front() == '%') {
    const std::size_t eq = s.find(" = ");
    if (eq == std::string_view::npos) return l;
    l.results = s.substr(0, eq);
    s = s.substr(eq + 3);
  }
  std::size_t op_end = 0;
  if (!s.empty() && s.front() == '"') {
    op_end = skip_quoted(s, 0);
    if (op_end == std::string_view::npos) return l;
    l.op = s.substr(1, op_end - 2);
  } else {
    op_end = std::min(s.find_first_of(" ("), s.size());
    l.op = s.substr(0, op_end);
  }
  const std::string_view rest = s.substr(op_end);
  const std::size_t colon = top_level(rest, " : ");
  l.operands = colon == std::string_view::npos ? rest : rest.substr(0, colon);
  l.types = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 3);
  return l;
}

Body::Body() { scopes_.emplace_back(); }

const Value& Body::at(uint32_t id) const {
  static const Value kOpaque{};
  return id < values_.size() ? values_[id] : kOpaque;
}

uint32_t Body::lookup(std::string_view name) const {
  const std::string key(name);
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    const auto it = s->names.find(key);
    if (it != s->names.end()) return it->second;
  }
  return kNone;
}

uint32_t Body::define(std::string_view name, const Value& v) {
  if (values_.size() >= kMaxValues || scopes_.empty()) return kNone;
  values_.push_back(v);
  const uint32_t id = static_cast<uint32_t>(values_.size() - 1);
  scopes_.back().names[std::string(name)] = id;
  return id;
}

void Body::define_arg(std::string_view ssa, uint32_t index) {
  Value v;
  v.op = Op::arg;
  v.k = index;
  define(ssa, v);
}

bool Body::pop() {
  if (scopes_.empty()) return false;
  scopes_.pop_back();
  return true;
}

void Body::define_block_args(std::string_view label) {
  const std::size_t open = label.find('(');
  if (open == std::string_view::npos) return;
  for (std::string_view a : split_top(label.substr(open + 1, match_close(label, open) - open - 1))) {
    const std::string_view n = ssa_name(trim(a));
    if (!n.empty()) define(n, Value{});
  }
}

Value Body::make_value(const Line& l, const std::vector<uint32_t>& ops) const {
  Value v;
  const auto kind = std::find_if(kOps.begin(), kOps.end(), [&](const OpKind& k) { return k.name == l.op; });
  if (kind == kOps.end()) return v;
  v.op = kind->op;
  v.a = ops.size() > 0 ? ops[0] : kNone;
  v.b = ops.size() > 1 ? ops[1] : kNone;
  v.c = ops.size() > 2 ? ops[2] : kNone;
  const std::string_view text = trim(l.operands);
  bool ok = true;
  switch (v.op) {
    case Op::make_range: ok = attr_int(text, "end = ", v.k) && attr_int(text, "start = ", v.k2); break;
    case Op::program_id:
      v.k = text == "x" ? 0 : text == "y" ? 1 : text == "z" ? 2 : -1;
      if (v.k < 0) ok = attr_int(text, "axis = ", v.k);  // older spelling {axis = 0 : i32}
      break;
    case Op::cmpi_slt: ok = text.substr(0, 4) == "slt,"; break;
    case Op::constant:
      ok = text.substr(0, 6) == "dense<" ? parse_int(text.substr(6, text.find('>') - 6), v.k) : parse_int(text, v.k);
      break;
    default: break;
  }
  return ok ? v : Value{};
}

void Body::define_results(const Line& l, const Value& v, const std::vector<uint32_t>& inits) {
  const std::vector<std::string_view> names = tokens(l.results);
  const std::size_t colon = l.results.find(':');
  int64_t count = 1;
  if (names.size() == 1 && colon != std::string_view::npos && !parse_int(l.results.substr(colon + 1), count)) count = 1;
  const bool loop = l.op == "scf.for";
  auto result = [&](std::size_t k) {
    if (loop) return Value{Op::alias, k < inits.size() ? inits[k] : kNone};
    return names.size() == 1 && count == 1 ? v : Value{};
  };
  if (names.size() == 1 && count > 1) {
    for (int64_t k = 0; k < count && k < 4096; ++k)
      define(std::string(names[0]) + "#" + std::to_string(k), result(static_cast<std::size_t>(k)));
    return;
  }
  for (std::size_t k = 0; k < names.size(); ++k) define(names[k], result(k));
}

// scf.for's `iter_args(%x = %init, ...)`: the initial values, looked up before the region opens.
std::vector<uint32_t> Body::open_for(const Line& l) {
  std::vector<uint32_t> inits;
  const std::size_t at = l.operands.find("iter_args(");
  if (at == std::string_view::npos) return inits;
  const std::size_t open = at + 9;
  const std::size_t close = match_close(l.operands, open);
  if (close == std::string_view::npos) return inits;
  for (std::string_view pair : split_top(l.operands.substr(open + 1, close - open - 1))) {
    const std::vector<std::string_view> t = tokens(pair);
    inits.push_back(t.size() == 2 ? lookup(t[1]) : kNone);
  }
  return inits;
}

bool Body::apply(const Line& l, std::vector<uint32_t>& operands) {
  operands.clear();
  for (std::string_view t : tokens(l.operands)) operands.push_back(lookup(t));
  const bool loop = l.op == "scf.for";
  const std::vector<uint32_t> inits = loop ? open_for(l) : std::vector<uint32_t>{};
  define_results(l, make_value(l, operands), inits);
  if (values_.size() >= kMaxValues) return false;
  if (!l.opens) return true;
  if (scopes_.size() >= kMaxScopes) return false;
  scopes_.emplace_back();
  if (!loop) return true;
  const std::vector<std::string_view> t = tokens(l.operands);
  if (!t.empty()) define(t[0], Value{});  // the induction variable
  const std::size_t at = l.operands.find("iter_args(");
  const std::size_t close = at == std::string_view::npos ? at : match_close(l.operands, at + 9);
  if (close == std::string_view::npos) return true;
  std::size_t k = 0;
  for (std::string_view pair : split_top(l.operands.substr(at + 10, close - at - 10))) {
    const std::vector<std::string_view> names = tokens(pair);
    const uint32_t id = names.empty() ? kNone : define(names[0], Value{Op::alias, k < inits.size() ? inits[k] : kNone});
    scopes_.back().iter_args.push_back(id);
    ++k;
  }
  return true;
}

uint32_t Body::strip_shape(uint32_t id) const {
  for (std::size_t steps = 0; steps < kMaxRootSteps && at(id).op == Op::shape; ++steps) id = at(id).a;
  return id;
}

Roots Body::roots(uint32_t id) const {
  Roots r;
  std::vector<uint32_t> work{id};
  for (std::size_t steps = 0; !work.empty(); ++steps) {
    if (steps >= kMaxRootSteps) return r.unresolved = true, r;
    const Value& v = at(work.back());
    work.pop_back();
    switch (v.op) {
      case Op::arg:
        if (std::find(r.args.begin(), r.args.end(), v.k) == r.args.end()) r.args.push_back(static_cast<uint32_t>(v.k));
        break;
      case Op::shape:
      case Op::ptr_view:
      case Op::addptr:
      case Op::alias: work.push_back(v.a); break;
      case Op::select:
        work.push_back(v.b);
        work.push_back(v.c);
        break;
      default: r.unresolved = true; break;
    }
  }
  return r;
}

bool Body::yield_keeps_roots(const std::vector<uint32_t>& yielded) const {
  if (scopes_.empty()) return true;
  const std::vector<uint32_t>& carried = scopes_.back().iter_args;
  for (std::size_t k = 0; k < carried.size() && k < yielded.size(); ++k) {
    const Roots init = roots(at(carried[k]).a);
    if (init.unresolved || init.args.empty()) continue;  // not a pointer the decoder follows
    const Roots now = roots(yielded[k]);
    if (now.unresolved) return false;
    for (uint32_t a : now.args)
      if (std::find(init.args.begin(), init.args.end(), a) == init.args.end()) return false;
  }
  return true;
}

}  // namespace nanscope::decode::ttir

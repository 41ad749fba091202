#include "xla_dump.hpp"
#include "xla_text.hpp"


namespace nanscope::xla {

namespace {

struct ElementType {
  std::string_view xla;
  DType dtype;
};
// XLA's floating-point element types nanscope scans; every other type is read as DType::none.
constexpr ElementType kFloatTypes[] = {{"f64", DType::f64}, {"f32", DType::f32},         {"f16", DType::f16},
                                       {"bf16", DType::bf16}, {"f8e4m3fn", DType::f8e4m3}, {"f8e5m2", DType::f8e5m2}};

using text::each_line;
using text::line_error;
using text::number;
using text::trim;

// The text after `key` up to the first of `stops`, e.g. after("size=2048,offset=0", "size=", ",").
std::string_view after(std::string_view s, std::string_view key, std::string_view stops) {
  const size_t at = s.find(key);
  if (at == std::string_view::npos) return {};
  s.remove_prefix(at + key.size());
  return s.substr(0, s.find_first_of(stops));
}

// "allocation 3: size 16, output shape is |f32[4]|, maybe-live-out:" (shapes hold commas: the
// |...| parts are cut out before the rest is split).
bool allocation_header(std::string_view line, Allocation& a) {
  line = trim(line);
  if (!line.starts_with("allocation ") || !line.ends_with(":")) return false;
  uint64_t index = 0, size = 0;
  if (!number(after(line, "allocation ", ":"), index) || !number(after(line, ": size ", ",:"), size)) return false;
  a = Allocation{};
  a.index = static_cast<uint32_t>(index);
  a.size = size;
  std::string rest;
  for (bool in_shape = false; char c : line.substr(line.find(": size ") + 7)) {
    if (c == '|') in_shape = !in_shape;
    else if (!in_shape) rest += c;
  }
  uint64_t parameter = 0;
  if (number(after(rest, "parameter ", ",:"), parameter)) a.parameter = static_cast<int>(parameter);
  a.output = rest.find(" output shape is") != std::string::npos;
  a.maybe_live_out = rest.find("maybe-live-out") != std::string::npos;
  a.thread_local_ = rest.find("thread-local") != std::string::npos;
  a.constant = rest.find(", constant") != std::string::npos;
  a.preallocated_temp = rest.find("preallocated-temp") != std::string::npos;
  return true;
}

// " value: <19 w1.1 @0> (size=2048,offset=0): f32[16,32]{1,0}", or a loop's
// " value: <93 arg_tuple.1{1} (phi) @0> (size=65536,offset=524288): f32[64,256]{1,0}"
bool value_line(std::string_view line, Value& v) {
  line = trim(line);
  if (!line.starts_with("value: <")) return false;
  const size_t close = line.find('>');
  if (close == std::string_view::npos) return false;
  const std::string_view inner = line.substr(8, close - 8);  // "19 w1.1 @0"
  const size_t s1 = inner.find(' '), s2 = inner.rfind(' ');
  if (s1 == std::string_view::npos || s2 == s1 || !number(inner.substr(0, s1), v.id)) return false;
  std::string_view name = inner.substr(s1 + 1, s2 - s1 - 1);
  constexpr std::string_view kPhi = " (phi)";  // HloValue::ToShortString's mark of a loop's value
  v.phi = name.ends_with(kPhi);
  if (v.phi) name.remove_suffix(kPhi.size());
  v.instruction = std::string(name);
  v.index = std::string(inner.substr(s2 + 1));
  const std::string_view tail = line.substr(close + 1);
  if (!number(after(tail, "size=", ",)"), v.size) || !number(after(tail, "offset=", ",)"), v.offset)) return false;
  const size_t colon = tail.find("): ");
  if (colon == std::string_view::npos) return false;
  v.shape_text = std::string(trim(tail.substr(colon + 3)));
  v.shape = parse_shape(v.shape_text);
  return true;
}

}  // namespace

uint64_t Shape::elements() const {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return n;
}

namespace {

// "4,<=16" -> {4, 16} (a dynamic dimension is read as its bound); false on anything else.
bool parse_dims(std::string_view dims, std::vector<int64_t>& out) {
  while (!dims.empty()) {
    const size_t comma = dims.find(',');
    std::string_view d = trim(dims.substr(0, comma));
    if (d.starts_with("<=")) d.remove_prefix(2);
    uint64_t n = 0;
    if (!number(d, n)) return false;
    out.push_back(static_cast<int64_t>(n));
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  return true;
}

bool element_name(std::string_view e) {
  for (char c : e)
    if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9')) return false;  // a tuple, a token
  return !e.empty();
}

}  // namespace

std::optional<Shape> parse_shape(std::string_view text) {
  text = trim(text);
  const size_t open = text.find('['), close = text.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  if (const std::string_view layout = text.substr(close + 1); !layout.empty() && layout.front() != '{') return std::nullopt;
  Shape s;
  s.element = std::string(text.substr(0, open));
  if (!element_name(s.element) || !parse_dims(text.substr(open + 1, close - open - 1), s.dims)) return std::nullopt;
  for (const ElementType& t : kFloatTypes)
    if (t.xla == s.element) s.dtype = t.dtype;
  return s;
}

const Allocation* BufferAssignment::holding(std::string_view instruction) const {
  for (const Allocation& a : allocations)
    for (const Value& v : a.values)
      if (v.instruction == instruction) return &a;
  return nullptr;
}

BufferAssignment parse_buffer_assignment(std::string_view text) {
  BufferAssignment out;
  each_line(text, [&](std::string_view line, uint32_t n) {
    const std::string_view t = trim(line);
    if (t.empty() || t == "BufferAssignment:") return;
    Allocation a;
    if (allocation_header(t, a)) {
      out.allocations.push_back(std::move(a));
      return;
    }
    Value v;
    if (value_line(t, v) && !out.allocations.empty()) {
      out.allocations.back().values.push_back(std::move(v));
      return;
    }
    if (t.starts_with("allocation ") || t.starts_with("value: "))
      out.errors.push_back(line_error(n, t));
  });
  return out;
}

}  // namespace nanscope::xla

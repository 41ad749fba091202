// Line-level reading of MLIR text as Triton prints its TTIR, for decode/triton.cpp: lexical
// helpers (brackets, quoted strings, locations) and the SSA values of one function body with
// their region scopes. Internal to the Triton decoder; nothing here throws.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nanscope::decode::ttir {

inline constexpr uint32_t kNone = UINT32_MAX;

std::string_view trim(std::string_view s);
// Index of the ')' matching the '(' at `open`, skipping quoted strings; npos if unbalanced.
std::size_t match_close(std::string_view text, std::size_t open);
// Splits at commas outside brackets and quoted strings.
std::vector<std::string_view> split_top(std::string_view text);
// The type at the start of `text`: up to the first space or '{' outside brackets.
std::string_view type_token(std::string_view text);
// "!tt.ptr<bf16>" / "!tt.ptr<bf16, 1>" -> "bf16".
std::string_view pointee(std::string_view ptr_type);
// The name of a NameLoc `loc("in_ptr0"(#loc))`; "" for file locations `loc("f.py":18:0)`.
std::string_view name_loc(std::string_view text);
// "%in_ptr0: ..." -> "in_ptr0".
std::string_view ssa_name(std::string_view text);

struct Prototype {
  std::string_view name;
  std::vector<std::string_view> args;  // one entry per argument, as printed
  std::size_t body = 0;                // offset of the first body line in the text
  std::string_view error;
};
// The first `tt.func public @name(...) ... {` of a module.
Prototype find_prototype(std::string_view text);

// One printed op, split into its parts (location stripped).
struct Line {
  std::string_view results;   // "%a", "%v:3", "" when none
  std::string_view op;        // "tt.store", "tt.reduce" (quotes removed); "" for '}' lines
  std::string_view operands;  // between the op name and the top-level " : "
  std::string_view types;     // after the top-level " : "
  bool closes = false;        // starts with '}': ends a region
  bool opens = false;         // ends with '{': starts a region
  bool block_label = false;   // "^bb0(...):"
};
Line split_line(std::string_view line);

enum class Op : uint8_t {
  other,       // opaque: not a pointer chain, not an Inductor offset
  arg,         // function argument k
  shape,       // splat, broadcast, expand_dims, reshape, extsi: same values, new shape or width
  ptr_view,    // bitcast, trans, advance, make_tensor_ptr: same base pointer
  addptr,      // a + b
  select,      // a ? b : c
  make_range,  // [k2, k)
  program_id,  // axis k
  muli,
  addi,
  cmpi_slt,
  constant,  // integer k (scalar or dense splat)
  alias,     // loop-carried value: its initial value a
};

struct Value {
  Op op = Op::other;
  uint32_t a = kNone, b = kNone, c = kNone;
  int64_t k = 0, k2 = 0;
};

struct Roots {
  std::vector<uint32_t> args;  // argument indices the pointer derives from
  bool unresolved = false;     // some path ends in an opaque value
};

// The SSA values of one function body, looked up through the open regions.
class Body {
 public:
  Body();
  void define_arg(std::string_view ssa, uint32_t index);
  // Defines the line's results (and a region's arguments when it opens one); `operands` gets
  // the resolved operand ids in order. False when a bound is exceeded.
  bool apply(const Line& l, std::vector<uint32_t>& operands);
  void define_block_args(std::string_view label);
  bool pop();
  std::size_t depth() const { return scopes_.size(); }

  const Value& at(uint32_t id) const;
  uint32_t strip_shape(uint32_t id) const;
  Roots roots(uint32_t id) const;
  // For an scf.yield: every pointer carried by the enclosing loop still derives only from the
  // arguments its initial value came from.
  bool yield_keeps_roots(const std::vector<uint32_t>& yielded) const;

 private:
  struct Scope {
    std::unordered_map<std::string, uint32_t> names;
    std::vector<uint32_t> iter_args;  // scf.for: the region's loop-carried values
  };
  uint32_t lookup(std::string_view name) const;
  uint32_t define(std::string_view name, const Value& v);
  Value make_value(const Line& l, const std::vector<uint32_t>& ops) const;
  void define_results(const Line& l, const Value& v, const std::vector<uint32_t>& inits);
  std::vector<uint32_t> open_for(const Line& l);

  std::vector<Value> values_;
  std::vector<Scope> scopes_;
};

}  // namespace nanscope::decode::ttir

// Triton TTIR: prototype, written pointers and recognised store extents; see triton.hpp.
//
// The TTIR is MLIR's generic text, one op per line. It is read line by line with a scope stack
// rather than an MLIR parser: value names are unique along a chain of enclosing regions but
// reused by sibling regions (two scf.for bodies both define %16), so a name is looked up from
// the innermost open region outwards. Only the ops that move a pointer or form an Inductor
// offset are modelled; everything else is an opaque value, and a store through an opaque
// pointer makes the whole kernel "unresolved" rather than guessed.
#include "decode/triton.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "decode/ttir_text.hpp"

namespace nanscope::decode {

namespace {

using ttir::Body;
using ttir::kNone;
using ttir::Op;
using ttir::Value;

struct ElemType {
  std::string_view text;
  DType dtype;
};
// TTIR element types (MLIR builtin spellings) of the floating formats nanscope scans.
constexpr std::array kElemTypes{
    ElemType{"f32", DType::f32},        ElemType{"f16", DType::f16},       ElemType{"bf16", DType::bf16},
    ElemType{"f64", DType::f64},        ElemType{"f8E4M3FN", DType::f8e4m3}, ElemType{"f8E5M2", DType::f8e5m2},
};

struct ScalarType {
  std::string_view text;
  uint32_t size;
};
// driver.py ty_to_cpp: i1 travels as int8_t, floats as their storage width.
constexpr std::array kScalarTypes{
    ScalarType{"i1", 1},  ScalarType{"i8", 1},  ScalarType{"i16", 2}, ScalarType{"i32", 4},
    ScalarType{"i64", 8}, ScalarType{"f16", 2}, ScalarType{"bf16", 2}, ScalarType{"f32", 4},
    ScalarType{"f64", 8},
};

struct RolePrefix {
  std::string_view prefix;
  InductorRole role;
};
// Longest prefix first: "in_out_ptr" must win over "in_ptr"-like checks.
constexpr std::array kRoles{
    RolePrefix{"in_out_ptr", InductorRole::in_out_ptr},
    RolePrefix{"out_ptr", InductorRole::out_ptr},
    RolePrefix{"in_ptr", InductorRole::in_ptr},
};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `%arg3` is MLIR's default block-argument name: the TTIR did not name the argument.
bool default_arg_name(std::string_view ssa) { return ssa.size() > 3 && ssa.substr(0, 3) == "arg" && all_digits(ssa.substr(3)); }

// One prototype entry: `%name: TYPE {attrs} loc(...)`.
std::optional<TritonArg> parse_arg(std::string_view text) {
  text = ttir::trim(text);
  if (text.size() < 2 || text[0] != '%') return std::nullopt;
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view ssa = text.substr(1, colon - 1);
  const std::string_view type = ttir::type_token(ttir::trim(text.substr(colon + 1)));
  if (ssa.empty() || type.empty()) return std::nullopt;
  TritonArg a;
  const std::string_view loc_name = ttir::name_loc(text);
  a.name = std::string(default_arg_name(ssa) ? loc_name : ssa);
  if (type.substr(0, 8) == "!tt.ptr<") {
    a.kind = TritonArgKind::pointer;
    a.type = std::string(ttir::pointee(type));
    a.dtype = ttir_dtype(a.type);
    a.size = 8;
  } else if (const uint32_t size = ttir_scalar_size(type)) {
    a.kind = TritonArgKind::scalar;
    a.type = std::string(type);
    a.size = size;
  } else {
    a.type = std::string(type);  // tensor descriptors and the like: expanded at the driver
  }
  a.role = inductor_role(a.name);
  return a;
}

// The pointer operands of ops that write memory, and which ops they are.
enum class WriteOp : uint8_t { none, store, atomic, untied };

WriteOp write_op(std::string_view op) {
  if (op == "tt.store") return WriteOp::store;
  if (op == "tt.atomic_rmw" || op == "tt.atomic_cas") return WriteOp::atomic;
  // Descriptor stores/reduces/scatters and anything else that writes global memory: their
  // target is a tensor descriptor or a pointer form this parser does not follow.
  for (std::string_view w : {"store", "atomic", "scatter", "descriptor_reduce"})
    if (op.find(w) != std::string_view::npos) return WriteOp::untied;
  return WriteOp::none;
}

class Analysis {
 public:
  explicit Analysis(TritonSignature& sig) : sig_(sig) {}

  void on_write(const Body& b, WriteOp kind, const std::vector<uint32_t>& ops) {
    if (kind == WriteOp::untied || ops.empty()) return untie("triton: a store the TTIR does not tie to an argument");
    const ttir::Roots r = b.roots(ops[0]);
    if (r.unresolved || r.args.empty()) return untie("triton: a store the TTIR does not tie to an argument");
    StoreExtent e;
    // Only a store the function always reaches: one inside scf.if/for/while may write a
    // subset, and an extent wider than the write would scan stale memory as this launch's.
    if (kind == WriteOp::store && r.args.size() == 1 && b.depth() == 1)
      e = recognise_extent(b, ops[0], ops.size() > 2 ? ops[2] : kNone, r.args[0]);
    for (uint32_t i : r.args) mark_written(i, kind == WriteOp::atomic, r.args.size() == 1 ? e : StoreExtent{});
  }

  void on_load(const Body& b, const std::vector<uint32_t>& ops) {
    if (ops.empty()) return;
    const ttir::Roots r = b.roots(ops[0]);
    if (!r.unresolved)
      for (uint32_t i : r.args) sig_.args[i].read = true;
  }

  void untie(std::string_view why) {
    if (sig_.unresolved.empty()) sig_.unresolved = why;
  }

 private:
  void mark_written(uint32_t i, bool atomic, const StoreExtent& e) {
    TritonArg& a = sig_.args[i];
    if (!a.written) {
      a.extent = atomic ? StoreExtent{} : e;
    } else if (atomic || !(a.extent == e)) {
      a.extent = StoreExtent{};  // stores that disagree: the block map decides
    }
    a.written = true;
    a.atomic = a.atomic || atomic;
  }

  // `pid * B + make_range(0, B)` (either operand order), or `pid` alone (B = 1).
  static uint32_t offset_block(const Body& b, uint32_t off) {
    const Value& v = b.at(b.strip_shape(off));
    if (v.op == Op::program_id) return v.k == 0 ? 1 : 0;
    if (v.op != Op::addi) return 0;
    for (auto [x, y] : {std::pair{v.a, v.b}, std::pair{v.b, v.a}}) {
      const Value& range = b.at(b.strip_shape(x));
      const Value& mul = b.at(b.strip_shape(y));
      if (range.op != Op::make_range || range.k2 != 0 || range.k <= 0 || mul.op != Op::muli) continue;
      for (auto [p, c] : {std::pair{mul.a, mul.b}, std::pair{mul.b, mul.a}}) {
        const Value& pid = b.at(b.strip_shape(p));
        const Value& cst = b.at(c);
        if (pid.op == Op::program_id && pid.k == 0 && cst.op == Op::constant && cst.k == range.k)
          return static_cast<uint32_t>(range.k);
      }
    }
    return 0;
  }

  StoreExtent recognise_extent(const Body& b, uint32_t ptr, uint32_t mask, uint32_t arg) const {
    const Value& p = b.at(b.strip_shape(ptr));
    if (p.op != Op::addptr || b.at(b.strip_shape(p.a)).op != Op::arg || b.at(b.strip_shape(p.a)).k != arg) return {};
    StoreExtent e;
    e.block = offset_block(b, p.b);
    if (e.block == 0) return {};
    if (mask == kNone) return e;
    const Value& m = b.at(b.strip_shape(mask));
    if (m.op != Op::cmpi_slt || b.strip_shape(m.a) != b.strip_shape(p.b)) return {};
    const Value& bound = b.at(b.strip_shape(m.b));
    if (bound.op == Op::constant) {
      e.bound = StoreExtent::Bound::constant;
      e.bound_value = bound.k;
    } else if (bound.op == Op::arg && sig_.args[bound.k].kind == TritonArgKind::scalar &&
               sig_.args[bound.k].type[0] == 'i') {
      e.bound = StoreExtent::Bound::arg;
      e.bound_arg = static_cast<uint32_t>(bound.k);
    } else {
      return {};
    }
    return e;
  }

  TritonSignature& sig_;
};

// Walks the function body: defines values, follows scopes, feeds writes and loads to `an`.
// Returns false when the body is malformed (unbalanced regions, too many values, no end).
bool walk_body(std::string_view body, Body& b, Analysis& an) {
  std::vector<uint32_t> ops;
  bool returned = false;  // a function body ends in tt.return: without it the text is not TTIR
  for (std::size_t pos = 0; pos < body.size();) {
    std::size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) nl = body.size();
    const std::string_view line = ttir::trim(body.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty() || line.substr(0, 2) == "//") continue;
    const ttir::Line l = ttir::split_line(line);
    if (l.closes && !b.pop()) return false;
    if (b.depth() == 0) return returned;  // the function's closing brace
    if (l.block_label) {
      b.define_block_args(line);
      continue;
    }
    if (!b.apply(l, ops)) return false;
    returned = returned || (l.op == "tt.return" && b.depth() == 1);
    const WriteOp w = write_op(l.op);
    if (w != WriteOp::none) an.on_write(b, w, ops);
    if (l.op == "tt.load") an.on_load(b, ops);
    const bool pointer_types =
        l.types.find("!tt.ptr") != std::string_view::npos || l.types.find("tensordesc") != std::string_view::npos;
    if ((l.op == "tt.call" || l.op == "tt.elementwise_inline_asm") && pointer_types)
      an.untie("triton: a call the TTIR does not inline takes a pointer");
    if (l.op == "scf.yield" && !b.yield_keeps_roots(ops)) an.untie("triton: a loop carries a pointer to another argument");
  }
  return false;  // ran out of text inside the function
}

}  // namespace

DType ttir_dtype(std::string_view elem) {
  for (const ElemType& e : kElemTypes)
    if (e.text == elem) return e.dtype;
  return DType::none;
}

uint32_t ttir_scalar_size(std::string_view type) {
  for (const ScalarType& s : kScalarTypes)
    if (s.text == type) return s.size;
  return 0;
}

InductorRole inductor_role(std::string_view name) {
  if (name == "ws_ptr") return InductorRole::ws_ptr;
  for (const RolePrefix& r : kRoles)
    if (name.size() > r.prefix.size() && name.substr(0, r.prefix.size()) == r.prefix &&
        all_digits(name.substr(r.prefix.size())))
      return r.role;
  return InductorRole::none;
}

bool TritonSignature::named() const {
  return std::all_of(args.begin(), args.end(), [](const TritonArg& a) { return !a.name.empty(); });
}

bool TritonSignature::inductor() const {
  return std::any_of(args.begin(), args.end(), [](const TritonArg& a) {
    return a.role == InductorRole::in_ptr || a.role == InductorRole::out_ptr || a.role == InductorRole::in_out_ptr;
  });
}

ParsedTtir parse_ttir(std::string_view text) {
  ParsedTtir out;
  if (text.size() > kMaxTtirBytes) return {std::nullopt, "triton: TTIR larger than the parser accepts"};
  if (text.find('\0') != std::string_view::npos) return {std::nullopt, "triton: TTIR is not text"};
  const ttir::Prototype proto = ttir::find_prototype(text);
  if (!proto.error.empty()) return {std::nullopt, proto.error};
  TritonSignature sig;
  sig.name = std::string(proto.name);
  for (std::string_view a : proto.args) {
    std::optional<TritonArg> arg = parse_arg(a);
    if (!arg) return {std::nullopt, "triton: an argument of the tt.func prototype does not parse"};
    sig.args.push_back(std::move(*arg));
    if (sig.args.size() > kMaxTtirArgs) return {std::nullopt, "triton: more arguments than the parser accepts"};
  }
  Body body;
  for (std::size_t i = 0; i < sig.args.size(); ++i) {
    body.define_arg(ttir::ssa_name(ttir::trim(proto.args[i])), static_cast<uint32_t>(i));
  }
  Analysis an(sig);
  if (!walk_body(text.substr(proto.body), body, an)) return {std::nullopt, "triton: the TTIR function body is truncated or malformed"};
  out.signature = std::move(sig);
  return out;
}

std::vector<bool> triton_stored_params(const TritonSignature& sig, std::size_t driver_params) {
  if (!sig.unresolved.empty() || driver_params != sig.args.size() + kTritonScratchParams) return {};
  std::vector<bool> out(driver_params, true);  // the scratch pointers may be written
  for (std::size_t i = 0; i < sig.args.size(); ++i)
    out[i] = sig.args[i].kind == TritonArgKind::pointer && (sig.args[i].written || sig.args[i].atomic);
  return out;
}

namespace {

// Why the launch's layout is not the signature's; empty when it is.
std::string_view layout_gate(const TritonSignature& sig, const Layout& layout, const LaunchView& launch) {
  if (!sig.unresolved.empty()) return sig.unresolved;
  const std::size_t n = sig.args.size();
  if (layout.size() != n + kTritonScratchParams || launch.count != layout.size())
    return "triton: parameter count is not the TTIR's arguments + 2 scratch pointers";
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const uint32_t want = i < n ? sig.args[i].size : 8;
    if (want == 0 || layout[i].second != want) return "triton: a parameter's size is not the TTIR type's";
  }
  if (!launch.params) return "triton: no parameter bytes";
  uint32_t writes = 0;
  for (const TritonArg& a : sig.args) writes += a.written && a.dtype != DType::none && a.role != InductorRole::ws_ptr;
  if (writes > kMaxWrites) return "triton: more written pointers than a launch record holds";
  return {};
}

// `!tt.ptr<i1>` .. `!tt.ptr<i64>`: MLIR spells integers iN (signless, as Triton prints them).
bool integer_pointee(const TritonArg& a) {
  return a.type.size() > 1 && a.type[0] == 'i' && all_digits(std::string_view(a.type).substr(1));
}

// A pointer only loaded from: its element type is the pointer's (`!tt.ptr<bf16>`); Triton
// passes no sizes, so the extent is the engine's (allocation block). Integer and bool pointees
// hold no NaN and are no reads.
void add_loaded(Decoded& d, const TritonArg& a, uint64_t ptr) {
  if (a.read && !a.written && !integer_pointee(a)) d.add_read(ptr, a.dtype, 0);
}

// A signed integer scalar parameter; -1 when it cannot be read.
int64_t read_scalar(const TritonArg& a, const char* bytes) {
  if (!bytes || a.kind != TritonArgKind::scalar || a.type.empty() || a.type[0] != 'i') return -1;
  if (a.size == 4) {
    int32_t v = 0;
    std::memcpy(&v, bytes, 4);
    return v;
  }
  int64_t v = -1;
  if (a.size == 8) std::memcpy(&v, bytes, 8);
  return v;
}

// Elements a recognised store writes in this launch: min(grid.x * block, bound); -1 when the
// bound cannot be read or is negative.
int64_t store_elements(const TritonSignature& sig, const StoreExtent& e, const LaunchView& launch) {
  const uint64_t covered = uint64_t{launch.grid[0]} * e.block;
  int64_t bound = static_cast<int64_t>(covered);
  if (e.bound == StoreExtent::Bound::constant) bound = e.bound_value;
  if (e.bound == StoreExtent::Bound::arg) bound = read_scalar(sig.args[e.bound_arg], launch.params[e.bound_arg]);
  if (bound < 0) return -1;
  return static_cast<int64_t>(std::min<uint64_t>(covered, static_cast<uint64_t>(bound)));
}

}  // namespace

Decoded decode_triton(const TritonSignature& sig, const Layout& layout, const LaunchView& launch) {
  if (const std::string_view why = layout_gate(sig, layout, launch); !why.empty()) return Decoded::mismatch(why);
  Decoded d;
  for (uint32_t i = 0; i < sig.args.size(); ++i) {
    const TritonArg& a = sig.args[i];
    if (a.kind != TritonArgKind::pointer || !launch.params[i]) continue;
    uint64_t ptr = 0;
    std::memcpy(&ptr, launch.params[i], 8);
    // ws_ptr is Inductor's scratch workspace: not a tensor, and uninitialised by design.
    if (!a.written || a.dtype == DType::none || a.role == InductorRole::ws_ptr) {
      add_loaded(d, a, ptr);
      continue;
    }
    if (!ptr) continue;
    Write w;
    w.ptr = ptr;
    w.dtype = a.dtype;
    w.elem_size = static_cast<uint32_t>(dtype_size(a.dtype));
    w.arg = i;
    w.extent_from_block = a.extent.block == 0 || a.atomic;
    if (!w.extent_from_block) {
      const int64_t elements = store_elements(sig, a.extent, launch);
      if (elements < 0) return Decoded::mismatch("triton: a negative or unreadable numel");
      if (elements == 0) continue;  // this launch writes nothing through it
      w.elements = static_cast<uint64_t>(elements);
      w.span_bytes = w.elements * w.elem_size;
    }
    d.add_write(w);
  }
  return d;
}

}  // namespace nanscope::decode

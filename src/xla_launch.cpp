// What one XLA kernel launch writes (issue 38, docs/jax.md): the kernel thunks it fits, and the
// floating-point outputs they agree on. See xla_kernels.hpp: launch_writes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "xla_kernels.hpp"

namespace nanscope::xla {

namespace {

// The arguments a thunk writes (`written`) or only reads, or why they are not known: an argument
// of unknown shape is a refusal (a write would go unscanned, a read missing from the origin).
std::optional<std::vector<LaunchWrite>> thunk_args(const KernelThunk& k, std::span<const uint64_t> words,
                                                   bool written, std::string& why) {
  std::vector<LaunchWrite> out;
  const std::vector<KernelArgument>& args = arguments_for(k, words.size());
  for (uint32_t i = 0; i < args.size() && i < words.size(); ++i) {
    const KernelArgument& a = args[i];
    if (written ? !a.written : (a.written || !a.read)) continue;
    if (!a.shape) {
      why = fmt::format("{} {} argument {} of unknown shape ({})", k.instruction, written ? "writes" : "reads", i,
                        a.shape_text);
      return std::nullopt;
    }
    out.push_back({i, words[i], *a.shape, a.size, written ? k.intended_inf : uint8_t{0}});
  }
  return out;
}

// Integers and predicates hold no NaN: moved out of `args` into `no_nan`.
void split_no_nan(std::vector<LaunchWrite>& args, std::vector<LaunchWrite>& no_nan) {
  for (const LaunchWrite& a : args)
    if (a.shape.dtype == DType::none) no_nan.push_back(a);
  std::erase_if(args, [](const LaunchWrite& a) { return a.shape.dtype == DType::none; });
}


// The same arguments, dtypes and element counts: thunks that differ at most in how the elements are
// arranged (one jnp op compiled for f32[512,2048] and for f32[2048,512] runs one kernel, and the
// launch's grid cannot tell them apart). What they write is then known as a flat run of elements.
bool same_extents(const std::vector<LaunchWrite>& a, const std::vector<LaunchWrite>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].arg != b[i].arg || a[i].shape.dtype != b[i].shape.dtype ||
        a[i].shape.elements() != b[i].shape.elements() || a[i].intended_inf != b[i].intended_inf)
      return false;
  return true;
}

// The same arguments with the same shapes, dimension by dimension.
bool same_writes(const std::vector<LaunchWrite>& a, const std::vector<LaunchWrite>& b) {
  if (!same_extents(a, b)) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape.dims != b[i].shape.dims) return false;
  return true;
}

void flatten(std::vector<LaunchWrite>& args) {
  for (LaunchWrite& a : args) a.shape.dims = {static_cast<int64_t>(a.shape.elements())};
}

}  // namespace

LaunchWrites launch_writes(const DumpModule& module, std::string_view function,
                           std::span<const uint64_t> parameter_words) {
  const DumpModule* one[] = {&module};
  return launch_writes(one, function, parameter_words, nullptr);
}

namespace {

struct Fit {
  const DumpModule* module;
  size_t kernel;
};

std::string no_thunk_reason(std::span<const DumpModule* const> modules, std::string_view function, size_t words,
                            const LaunchShape* shape) {
  const std::string where = modules.size() == 1 ? modules[0]->name : fmt::format("{} dump modules", modules.size());
  if (!shape) return fmt::format("no kernel thunk of {} named {} takes these {} parameter words", where, function, words);
  return fmt::format("no kernel thunk of {} named {} takes these {} parameter words at grid [{}] block [{}]", where,
                     function, words, fmt::join(shape->grid, ", "), fmt::join(shape->block, ", "));
}

// The line every fitting thunk names, or null (none named, or two that differ); `op_agreed`:
// they name one op too (identical fusions of two jitted functions name each its own).
const SourceLine* agreed_source(const std::vector<Fit>& fits, bool& op_agreed) {
  const SourceLine* agreed = nullptr;
  op_agreed = true;
  for (const Fit& fit : fits) {
    const SourceLine& s = fit.module->kernels[fit.kernel].source;
    if (!s.line || (agreed && (agreed->line != s.line || agreed->file != s.file))) return nullptr;
    op_agreed = op_agreed && (!agreed || agreed->op == s.op);
    agreed = &s;
  }
  return agreed;
}

// How a shape is written in HLO text: f32[1024,4096] (the element's name and the dimensions).
std::string shape_text(const Shape& s) { return fmt::format("{}[{}]", s.element, fmt::join(s.dims, ",")); }

// Where two fitting thunks part: the first argument they write or read differently, named with
// each thunk's module and instruction (identical names from different modules say nothing).
std::string first_difference(const Fit& a, const Fit& b, const std::vector<LaunchWrite>& a_args,
                             const std::vector<LaunchWrite>& b_args, const char* role) {
  const auto who = [](const Fit& f) { return fmt::format("{}'s {}", f.module->name, f.module->kernels[f.kernel].instruction); };
  if (a_args.size() != b_args.size())
    return fmt::format("{} {} {} arguments, {} {}", who(a), role, a_args.size(), who(b), b_args.size());
  for (size_t i = 0; i < a_args.size(); ++i)
    if (a_args[i].arg != b_args[i].arg || a_args[i].shape.dtype != b_args[i].shape.dtype ||
        a_args[i].shape.elements() != b_args[i].shape.elements() || a_args[i].intended_inf != b_args[i].intended_inf)
      return fmt::format("{} {} {} as parameter {}, {} {} as parameter {}", who(a), role, shape_text(a_args[i].shape),
                         a_args[i].arg, who(b), shape_text(b_args[i].shape), b_args[i].arg);
  return {};
}

// The refusal of a launch whose fitting thunks `fits` (the first) and `b` disagree: on their writes
// if they do, else on their reads.
std::string disagreement(const std::vector<Fit>& fits, const Fit& b, const std::vector<LaunchWrite>& writes,
                         const std::vector<LaunchWrite>& b_writes, const std::vector<LaunchWrite>& reads,
                         const std::vector<LaunchWrite>& b_reads) {
  const std::string part = !same_extents(writes, b_writes) ? first_difference(fits.front(), b, writes, b_writes, "writes")
                                                           : first_difference(fits.front(), b, reads, b_reads, "reads");
  return fmt::format("the launch fits {} kernel thunks that write or read different arguments ({})", fits.size(), part);
}

}  // namespace

LaunchWrites launch_writes(std::span<const DumpModule* const> modules, std::string_view function,
                           std::span<const uint64_t> parameter_words, const LaunchShape* shape) {
  LaunchWrites out;
  std::vector<Fit> fits;
  for (const DumpModule* m : modules)
    for (size_t c : launch_candidates(*m, function, parameter_words, shape)) fits.push_back({m, c});
  if (fits.empty()) {
    out.refused = no_thunk_reason(modules, function, parameter_words.size(), shape);
    out.refusal = Refusal::no_thunk;
    return out;
  }
  std::optional<std::vector<LaunchWrite>> writes, reads;
  auto refuse = [&](Refusal kind) {
    out.writes.clear();
    out.reads.clear();
    out.no_nan_writes.clear();
    out.refusal = kind;
    return out;
  };
  for (const Fit& fit : fits) {
    const KernelThunk& k = fit.module->kernels[fit.kernel];
    out.instructions.push_back(k.instruction);
    std::optional<std::vector<LaunchWrite>> w = thunk_args(k, parameter_words, true, out.refused);
    std::optional<std::vector<LaunchWrite>> r = w ? thunk_args(k, parameter_words, false, out.refused) : std::nullopt;
    if (!w || !r) return refuse(Refusal::unknown_shape);
    if (writes && !(same_writes(*writes, *w) && same_writes(*reads, *r))) {
      if (!same_extents(*writes, *w) || !same_extents(*reads, *r)) {
        out.refused = disagreement(fits, fit, *writes, *w, *reads, *r);
        return refuse(Refusal::thunks_disagree);
      }
      out.flattened = true;
    }
    if (!writes) writes = std::move(w), reads = std::move(r);
  }
  out.writes = std::move(*writes);
  out.reads = std::move(*reads);
  if (out.flattened) flatten(out.writes), flatten(out.reads);
  split_no_nan(out.writes, out.no_nan_writes);
  out.source = agreed_source(fits, out.source_op_agreed);
  return out;
}

namespace {

// HLO opcodes that can make NaN from finite operands.
constexpr std::string_view kNaNOpcodes[] = {"log", "log-plus-one", "sqrt", "rsqrt", "divide", "power", "remainder",
                                            "atan2"};

bool makes_nan(std::string_view opcode) {
  for (std::string_view o : kNaNOpcodes)
    if (o == opcode) return true;
  return false;
}

void collect_nan_ops(const HloSources& sources, const HloInstructions& hlo, std::string_view fusion, int depth,
                     std::vector<NanOp>& out) {
  const auto calls = sources.calls.find(std::string(fusion));
  if (depth > 8 || calls == sources.calls.end()) return;
  const auto ops = sources.computations.find(calls->second);
  if (ops == sources.computations.end()) return;
  for (const std::string& op : ops->second) {
    const auto ins = hlo.by_name.find(op);
    if (ins == hlo.by_name.end()) continue;
    if (ins->second.opcode == "fusion") {
      collect_nan_ops(sources, hlo, op, depth + 1, out);
      continue;
    }
    if (!makes_nan(ins->second.opcode)) continue;
    NanOp n{op, ins->second.opcode, {}, {}};
    if (const auto name = sources.op_name.find(op); name != sources.op_name.end()) n.op_name = name->second;
    if (const auto line = sources.line.find(op); line != sources.line.end()) n.line = line->second;
    out.push_back(std::move(n));
  }
}

}  // namespace

std::vector<NanOp> nan_ops(const HloSources& sources, const HloInstructions& hlo, std::string_view fusion) {
  std::vector<NanOp> out;
  collect_nan_ops(sources, hlo, fusion, 0, out);
  return out;
}

}  // namespace nanscope::xla

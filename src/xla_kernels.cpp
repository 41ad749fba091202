// map_kernels, read_dump_module, match_module, check_launch (xla_kernels.hpp).
#include "xla_kernels.hpp"
#include "xla_text.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace nanscope::xla {

namespace {

struct Slice {
  const Value* value = nullptr;
  uint32_t allocation = 0;
};

// The buffer assignment's name of an operand's value: an element of a tuple output, which newer
// HLO text refers to as "custom-call.1#0" (jaxlib 0.11.2: cuBLASLt's result beside its
// workspace), is the value "custom-call.1{0}"; any other name is its own.
std::string value_name(std::string_view operand) {
  const size_t hash = operand.find('#');
  if (hash == std::string_view::npos) return std::string(operand);
  std::string index(operand.substr(hash + 1));
  std::replace(index.begin(), index.end(), '#', ',');
  return std::string(operand.substr(0, hash)) + "{" + index + "}";
}

// The instruction whose value an async-done's is: its async-start's computation's ROOT (the
// buffer assignment gives the done no value of its own, and none to the start's element {1}
// either; seen with jaxlib 0.11.2's dynamic-slice fusions run as async work in a loop's body).
const std::string* async_result(const Instruction& done, const HloInstructions& hlo) {
  if (done.operands.size() != 1) return nullptr;
  const auto start = hlo.by_name.find(done.operands[0]);
  if (start == hlo.by_name.end() || start->second.opcode != "async-start") return nullptr;
  const auto root = hlo.root_of.find(start->second.calls);
  return root == hlo.root_of.end() ? nullptr : &root->second;
}

// The slice holding `name`'s array value, looking through bitcasts (which XLA gives their
// operand's slice) and async-dones; an empty reason when found.
std::string slice_of(std::string_view name, const HloInstructions& hlo, const BufferAssignment& buffers, Slice& out) {
  for (int hops = 0; hops < 64; ++hops) {
    const std::string value = value_name(name);
    for (const Allocation& a : buffers.allocations)
      for (const Value& v : a.values)
        if (v.instruction == value && (v.index == "@0" || v.index == "@{}")) return out = {&v, a.index}, "";
    if (value != name) return std::string(name) + ": no value " + value + " in the buffer assignment";
    const auto i = hlo.by_name.find(std::string(name));
    if (i == hlo.by_name.end()) return std::string(name) + " is in neither the HLO nor the buffer assignment";
    if (i->second.opcode == "async-done") {
      const std::string* result = async_result(i->second, hlo);
      if (!result) return std::string(name) + " (async-done): its async-start's computation has no ROOT in the HLO";
      name = *result;
      continue;
    }
    if (i->second.opcode != "bitcast" || i->second.operands.size() != 1)
      return std::string(name) + " (" + i->second.opcode + ") has no slice of its own in the buffer assignment";
    name = i->second.operands[0];
  }
  return std::string(name) + ": bitcasts without end";
}

bool same_slice(const KernelArgument& a, const KernelArgument& b) {
  return a.allocation == b.allocation && a.offset == b.offset && a.size == b.size;
}
bool overlapping(const KernelArgument& a, const KernelArgument& b) {
  return a.allocation == b.allocation && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

// Adds an argument unless its slice is an earlier one's (XLA's de-duplication, which keeps the
// first argument's shape); the earlier one then is also read or written as this one is.
void add_argument(std::vector<KernelArgument>& args, KernelArgument arg) {
  for (KernelArgument& earlier : args)
    if (same_slice(earlier, arg)) {
      earlier.read = earlier.read || arg.read;
      earlier.written = earlier.written || arg.written;
      return;
    }
  args.push_back(std::move(arg));
}

// An operand whose slice an output has: updated in place, which the output's entry says.
void mark_in_place(std::vector<KernelArgument>& all) {
  for (KernelArgument& operand : all)
    if (!operand.written)
      for (const KernelArgument& output : all)
        if (output.written && same_slice(operand, output)) operand.read = false;
}

// An operand's shape in the HLO, its instruction's; empty for a tuple element ("custom-call.1#0",
// value_name), whose value in the buffer assignment gives it. False when neither can.
bool hlo_shape(const std::string& operand, const HloInstructions& hlo, std::string& shape) {
  if (const auto o = hlo.by_name.find(operand); o != hlo.by_name.end()) return shape = o->second.shape_text, true;
  shape.clear();
  return value_name(operand) != operand;
}

// A tuple shape's elements, "(f32[64,256]{1,0}, f32[64,256]{1,0})" -> the two arrays; false for
// a nested tuple or a token, whose leaves XLA would flatten in an order not worth guessing.
bool tuple_elements(std::string_view tuple, std::vector<std::string>& out) {
  if (tuple.size() < 2 || tuple.front() != '(' || tuple.back() != ')') return false;
  bool arrays = true;
  text::each_top_level_item(tuple.substr(1, tuple.size() - 2), [&](std::string_view e) {
    arrays = arrays && !e.empty() && e.front() != '(' && parse_shape(e);
    out.emplace_back(e);
  });
  return arrays && !out.empty();
}

// A fusion's outputs as (operand name, shape): itself, or a multi-output fusion's tuple elements
// in order ("fusion#1" is the value "fusion{1}", value_name). False for a nested tuple.
bool fusion_outputs(const Instruction& fusion, std::vector<std::pair<std::string, std::string>>& out) {
  if (!fusion.shape_text.starts_with('(')) return out.emplace_back(fusion.name, fusion.shape_text), true;
  std::vector<std::string> elements;
  if (!tuple_elements(fusion.shape_text, elements)) return false;
  for (size_t e = 0; e < elements.size(); ++e) out.emplace_back(fusion.name + "#" + std::to_string(e), elements[e]);
  return true;
}

// An output slice overlapping another argument's without being it: why, else empty.
std::string aliased(const std::vector<KernelArgument>& args) {
  for (const KernelArgument& a : args)
    for (const KernelArgument& b : args)
      if (&a != &b && a.written && overlapping(a, b))
        return "output slice of " + a.value + " overlaps " + b.value + "'s without being it (aliased)";
  return "";
}

// The arguments of the fusion `fusion` (`all`: before de-duplication); an empty return value means mapped.
// A multi-output fusion's outputs are its tuple's elements, in order, after its operands
// (XLA's KernelArguments: operand slices, then each output leaf's).
std::string fusion_arguments(const Instruction& fusion, const HloInstructions& hlo, const BufferAssignment& buffers,
                             std::vector<KernelArgument>& args, std::vector<KernelArgument>& all) {
  if (fusion.opcode != "fusion") return fusion.name + " is a " + fusion.opcode + ", not a fusion";
  std::vector<std::pair<std::string, std::string>> outputs;
  if (!fusion_outputs(fusion, outputs)) return fusion.name + " has a nested tuple output " + fusion.shape_text;
  // `shape_text` empty: the slice's value's own (a tuple element, which the HLO has no line for).
  const auto argument = [&](const std::string& name, const std::string& given_shape, bool written) -> std::string {
    Slice s;
    if (std::string why = slice_of(name, hlo, buffers, s); !why.empty()) return why;
    const std::string& shape_text = given_shape.empty() ? s.value->shape_text : given_shape;
    all.push_back(KernelArgument{name, s.value->instruction, !written, written, shape_text, parse_shape(shape_text),
                                 s.allocation, s.value->offset, s.value->size});
    add_argument(args, all.back());
    return "";
  };
  for (const std::string& operand : fusion.operands) {
    std::string shape;
    if (!hlo_shape(operand, hlo, shape)) return "operand " + operand + " is not in the HLO";
    if (std::string why = argument(operand, shape, false); !why.empty()) return "operand " + why;
  }
  for (const auto& [name, shape] : outputs)
    if (std::string why = argument(name, shape, true); !why.empty()) return "output " + why;
  if (std::string why = aliased(args); !why.empty()) return why;
  mark_in_place(all);
  return "";
}

}  // namespace

std::vector<KernelThunk> map_kernels(const ThunkSequence& thunks, const HloInstructions& hlo,
                                     const BufferAssignment& buffers) {
  std::vector<KernelThunk> out;
  for (size_t i = 0; i < thunks.thunks.size(); ++i) {
    const Thunk& t = thunks.thunks[i];
    if (!t.kernel()) continue;
    KernelThunk k{i, t.name, t.annotation, kernel_name_for(t.annotation) == t.name, {}, {}};
    const auto fusion = hlo.by_name.find(t.annotation);
    if (t.annotation.empty()) k.unmapped = "no thunk_metadata names its HLO instruction";
    else if (fusion == hlo.by_name.end()) k.unmapped = t.annotation + " is not in the HLO";
    else k.unmapped = fusion_arguments(fusion->second, hlo, buffers, k.arguments, k.undeduplicated);
    if (!k.unmapped.empty()) k.arguments.clear();
    if (!k.unmapped.empty() || k.undeduplicated.size() == k.arguments.size()) k.undeduplicated.clear();
    out.push_back(std::move(k));
  }
  return out;
}

std::set<std::string> DumpModule::kernel_names() const {
  std::set<std::string> names;
  for (const KernelThunk& k : kernels) names.insert(k.kernel);
  return names;
}

DumpModule read_dump_module(std::string name, std::string_view thunk_sequence, std::string_view thunk_metadata,
                            std::string_view hlo_text, std::string_view buffer_assignment) {
  DumpModule m{std::move(name), parse_thunk_sequence(thunk_sequence), {}, {}};
  attach_thunk_metadata(m.thunks, thunk_metadata);
  const HloInstructions hlo = parse_hlo_instructions(hlo_text);
  const BufferAssignment buffers = parse_buffer_assignment(buffer_assignment);
  const auto add = [&](std::string_view file, const std::vector<std::string>& errors) {
    for (const std::string& e : errors) m.errors.push_back(std::string(file) + " " + e);
  };
  add("thunks", m.thunks.errors);
  add("hlo", hlo.errors);
  add("buffers", buffers.errors);
  m.kernels = map_kernels(m.thunks, hlo, buffers);
  const HloSources sources = parse_hlo_sources(hlo_text);
  for (KernelThunk& k : m.kernels) {
    k.intended_inf = intended_inf(sources, hlo, k.instruction);
    const std::vector<NanOp> ops = nan_ops(sources, hlo, k.instruction);
    if (!ops.empty()) {
      k.source = ops.front().line;
      k.source.op = ops.front().op_name;
      continue;
    }
    if (const auto line = sources.line.find(k.instruction); line != sources.line.end()) k.source = line->second;
    if (const auto op = sources.op_name.find(k.instruction); op != sources.op_name.end()) k.source.op = op->second;
  }
  return m;
}

std::optional<SourceLine> kernel_source(const DumpModule& module, std::string_view kernel) {
  std::optional<SourceLine> agreed;
  for (const KernelThunk& k : module.kernels) {
    if (k.kernel != kernel) continue;
    if (!k.source.line) return std::nullopt;
    if (agreed && (agreed->file != k.source.file || agreed->line != k.source.line)) return std::nullopt;
    const bool other_op = agreed && agreed->op != k.source.op;
    if (!agreed) agreed = k.source;
    if (other_op) agreed->op.clear();  // one line, two ops: the line is known, the op is not
  }
  return agreed;
}

std::optional<SourceLine> kernel_source(std::span<const DumpModule* const> modules, std::string_view kernel) {
  std::optional<SourceLine> agreed;
  for (const DumpModule* m : modules) {
    const bool holds = std::any_of(m->kernels.begin(), m->kernels.end(), [&](const KernelThunk& k) { return k.kernel == kernel; });
    if (!holds) continue;
    const std::optional<SourceLine> line = kernel_source(*m, kernel);
    if (!line || (agreed && (agreed->file != line->file || agreed->line != line->line))) return std::nullopt;
    const bool other_op = agreed && agreed->op != line->op;
    if (!agreed) agreed = line;
    if (other_op) agreed->op.clear();
  }
  return agreed;
}

ModuleMatch match_module(std::span<const DumpModule> dumps, const std::set<std::string>& functions) {
  std::vector<std::set<std::string>> kernels_of;
  kernels_of.reserve(dumps.size());
  for (const DumpModule& d : dumps) kernels_of.push_back(d.kernel_names());
  return match_kernel_names(kernels_of, functions);
}

ModuleMatch match_kernel_names(std::span<const std::set<std::string>> kernels_of, const std::set<std::string>& functions) {
  ModuleMatch match;
  for (size_t i = 0; i < kernels_of.size(); ++i) {
    const std::set<std::string>& names = kernels_of[i];
    if (names.empty()) continue;
    if (names == functions) match.candidates.push_back(i);
    else if (std::includes(functions.begin(), functions.end(), names.begin(), names.end())) match.covering.push_back(i);
    else if (!functions.empty() && std::includes(names.begin(), names.end(), functions.begin(), functions.end()))
      match.holding.push_back(i);
  }
  return match;
}

ModulesFor modules_for(std::span<const std::set<std::string>> kernels_of, const std::set<std::string>& functions,
                       std::string_view dir) {
  const ModuleMatch match = match_kernel_names(kernels_of, functions);
  ModulesFor out;
  const std::vector<size_t>& usable = match.usable();
  if (usable.size() > kMaxModulesPerFunction) {
    out.reason = fmt::format("{} dump modules of {} hold its module's kernels, more than the {} a launch looks through",
                             usable.size(), dir, kMaxModulesPerFunction);
    return out;
  }
  out.modules = usable;
  if (!out.modules.empty()) return out;
  // XLA dumps what it compiles: an executable JAX's persistent compilation cache gave back was
  // not compiled in this process, so none of its files are there (docs/jax.md).
  constexpr std::string_view kNotCompiledHere =
      " (XLA dumps only what it compiles: an executable from JAX's persistent compilation cache has no dump)";
  out.none_hold = true;
  out.reason = functions.size() == 1
                   ? fmt::format("no dump module in {} has a kernel named {}{}", dir, *functions.begin(), kNotCompiledHere)
                   : fmt::format("no dump module in {} holds its module's {} kernels{}", dir, functions.size(), kNotCompiledHere);
  return out;
}

const std::vector<KernelArgument>& arguments_for(const KernelThunk& kernel, size_t words) {
  const bool whole = words != kernel.arguments.size() && !kernel.undeduplicated.empty() &&
                     words == kernel.undeduplicated.size();
  return whole ? kernel.undeduplicated : kernel.arguments;
}

LaunchCheck check_launch(const KernelThunk& kernel, std::span<const uint64_t> words) {
  LaunchCheck check;
  if (!kernel.unmapped.empty()) return check.reasons.push_back("unmapped: " + kernel.unmapped), check;
  const auto& args = arguments_for(kernel, words.size());
  if (words.size() != args.size())
    return check.reasons.push_back(std::to_string(words.size()) + " parameter words for " + std::to_string(args.size()) +
                                   " arguments"), check;
  for (size_t i = 0; i < args.size(); ++i) {
    if (words[i] == 0 || words[i] < args[i].offset)
      check.reasons.push_back("argument " + std::to_string(i) + " (" + args[i].value + "): pointer " +
                              std::to_string(words[i]) + " below its offset " + std::to_string(args[i].offset));
    check.base.push_back(words[i] - args[i].offset);
  }
  for (size_t i = 0; check.reasons.empty() && i < args.size(); ++i)
    for (size_t j = i + 1; j < args.size(); ++j)
      if (args[i].allocation == args[j].allocation && check.base[i] != check.base[j])
        check.reasons.push_back("arguments " + std::to_string(i) + " and " + std::to_string(j) + " share allocation " +
                                std::to_string(args[i].allocation) + " but their pointers differ by " +
                                std::to_string(static_cast<int64_t>(words[j] - words[i])) + ", their offsets by " +
                                std::to_string(static_cast<int64_t>(args[j].offset - args[i].offset)));
  if (!check.reasons.empty()) check.base.clear();
  return check;
}

bool fits_shape(const DumpModule& module, const KernelThunk& kernel, const LaunchShape& shape) {
  if (kernel.thunk >= module.thunks.thunks.size()) return false;
  const Thunk& t = module.thunks.thunks[kernel.thunk];
  return t.grid == shape.grid && t.threads == shape.block;
}

std::vector<size_t> launch_candidates(const DumpModule& module, std::string_view function,
                                      std::span<const uint64_t> words, const LaunchShape* shape) {
  std::vector<size_t> out;
  for (size_t i = 0; i < module.kernels.size(); ++i) {
    const KernelThunk& k = module.kernels[i];
    if (k.kernel != function || (shape && !fits_shape(module, k, *shape))) continue;
    if (check_launch(k, words).consistent()) out.push_back(i);
  }
  return out;
}

}  // namespace nanscope::xla

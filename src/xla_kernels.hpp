// What each XLA GPU kernel reads and writes, from XLA's own dumps (issue 38, docs/jax.md): the
// thunk sequence (xla_thunks.hpp) names the kernels in launch order, the optimized HLO gives each
// fusion's operands and shape, the buffer assignment (xla_dump.hpp) the slice (allocation, offset,
// size) of each value. XLA builds a kernel's parameters as its fusion's operand slices (read), then
// its output slices (written), de-duplicated by slice (xla/service/gpu/kernel_arguments.cc), all
// plain pointers; that order is rebuilt here. Anything not determined is a reason, never a guess.
// Pure functions: the engine does not call them yet.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "xla_dump.hpp"
#include "xla_thunks.hpp"

namespace nanscope::xla {

// One instruction of optimized HLO text: "%name = shape opcode(%a, %b), attributes".
struct Instruction {
  std::string name, shape_text, opcode;
  std::vector<std::string> operands;  // without their '%'
  std::string literal;  // a constant's value as written ("-inf", "{...}"), a parameter's number; else empty
  bool root = false;    // its computation's ROOT
  std::string calls;    // the computation its "calls=%..." names (a fusion's, an async-start's); else empty
};
struct HloInstructions {
  std::unordered_map<std::string, Instruction> by_name;  // every computation's (names are unique in a module)
  std::unordered_map<std::string, std::string> root_of;  // computation name -> its ROOT instruction
  std::vector<std::string> errors;
};
HloInstructions parse_hlo_instructions(std::string_view text);

// The CUDA function XLA names after an HLO instruction: '.' and '-' become '_'
// ("gemm_fusion_dot.1" -> "gemm_fusion_dot_1", "wrapped_is-finite" -> "wrapped_is_finite").
std::string kernel_name_for(std::string_view instruction);

struct KernelArgument {
  std::string operand;  // the HLO instruction as the fusion names it (a bitcast, a parameter, ...)
  std::string value;    // the instruction defining the slice, bitcasts looked through
  bool read = false;     // some operand of the fusion is this slice
  bool written = false;  // some output of the fusion is this slice (read and written: updated in place)
  std::string shape_text;  // the shape the fusion sees (the operand's, or the output's)
  std::optional<Shape> shape;
  uint32_t allocation = 0;
  uint64_t offset = 0, size = 0;
};

struct KernelThunk {
  size_t thunk = 0;           // index into the ThunkSequence
  std::string kernel;         // the CUDA function name (the thunk sequence's)
  std::string instruction;    // the HLO fusion (the metadata's profile annotation)
  bool named_after_instruction = false;  // kernel == kernel_name_for(instruction); false: XLA reused another fusion's kernel
  std::vector<KernelArgument> arguments;  // in the kernel's parameter order
  // The same arguments before de-duplication (operands, then outputs, one parameter each), kept
  // only when that is another count: a Triton fusion's kernel takes its fusion's parameters as
  // they are (seen on the H200 with jaxlib 0.11.2: the donated step's in-place update,
  // kind=kCustom, takes 4 words for w, grad, lr and w again). An operand sharing an output's slice
  // is neither read nor written there (the output's entry says it is updated in place).
  std::vector<KernelArgument> undeduplicated;
  std::string unmapped;       // why the arguments are not known; empty when mapped
  // The user's line a finding at this kernel names (read_dump_module): the line of the first op
  // inside the fusion that can make NaN from finite operands (nan_ops), else the fusion's own;
  // line 0 when the HLO carries none; its `op` is that op's op_name (JAX's "jit(step)/log").
  SourceLine source;
  uint8_t intended_inf = 0;  // intended_inf() of its fusion: what its written arguments hold on purpose
};

// Maps every kernel thunk of a sequence (with its metadata attached) to its arguments.
std::vector<KernelThunk> map_kernels(const ThunkSequence& thunks, const HloInstructions& hlo,
                                     const BufferAssignment& buffers);

struct DumpModule {
  std::string name;  // e.g. "module_5968.jit_step"
  ThunkSequence thunks;
  std::vector<KernelThunk> kernels;  // the kernel thunks, in sequence order
  std::vector<std::string> errors;   // every reader's, each prefixed by its file's kind
  std::set<std::string> kernel_names() const;
};
// One module of a dump from its four files' texts (thunk_sequence.txt, or
// thunk_sequence_after_thunk_passes.txt for the command buffers; thunk_metadata.txt; the
// *gpu_after_optimizations.txt HLO and its -buffer-assignment.txt).
DumpModule read_dump_module(std::string name, std::string_view thunk_sequence, std::string_view thunk_metadata,
                            std::string_view hlo, std::string_view buffer_assignment);

// The source line a finding at a launch of `kernel` names: the kernel thunks of that name must
// agree on it (identical fusions sharing a kernel may come from different lines), else none.
std::optional<SourceLine> kernel_source(const DumpModule& module, std::string_view kernel);
// The same over every dump module a CUfunction may be (ModuleSet): all of them must agree.
std::optional<SourceLine> kernel_source(std::span<const DumpModule* const> modules, std::string_view kernel);

// Which dump modules a loaded CUmodule may be, by the names of its functions:
// - `candidates`: those whose kernel thunks' names are exactly its functions (XLA loaded a whole
//   executable's kernels as one CUmodule);
// - `holding`: those holding all its functions among more kernels. jaxlib 0.11.2 on the H200 loads
//   each kernel thunk's kernel (kCustomKernel) as a CUmodule of its own, so a one-function module
//   may be any dump module with a kernel of that name (XLA reuses names such as
//   loop_multiply_fusion in every module): each launch then says which thunks fit it
//   (launch_writes, by its parameter words and its grid);
// - `covering`, for the reason only: those whose kernels the CUmodule holds with more functions
//   beside them (a kernel no thunk launches); they are not matches.
struct ModuleMatch {
  std::vector<size_t> candidates;  // indices into the dump modules
  std::vector<size_t> holding;
  std::vector<size_t> covering;
  bool found() const { return candidates.size() == 1; }
  bool ambiguous() const { return candidates.size() > 1; }
  // The modules a launch of one of its functions is looked up in: the exact ones, else the holding ones.
  const std::vector<size_t>& usable() const { return candidates.empty() ? holding : candidates; }
};
ModuleMatch match_module(std::span<const DumpModule> dumps, const std::set<std::string>& functions);
// The same on each dump module's kernel names (DumpModule::kernel_names), kept by a caller that
// matches many CUmodules against the same dumps.
ModuleMatch match_kernel_names(std::span<const std::set<std::string>> kernels_of, const std::set<std::string>& functions);
// At most this many dump modules are kept for one CUmodule; more is a reason, not a lookup.
inline constexpr size_t kMaxModulesPerFunction = 64;
// The dump modules (indices) a loaded CUmodule's launches are looked up in (ModuleMatch::usable),
// or none with the reason a kernel's not_inspected event gives (`dir` names the dump directory).
struct ModulesFor {
  std::vector<size_t> modules;
  std::string reason;
  // No dump module holds the functions at all (not: too many hold them). Only such a kernel's
  // launch during a compile can be XLA's autotuning (KernelTable::xla_optimizing).
  bool none_hold = false;
};
ModulesFor modules_for(std::span<const std::set<std::string>> kernels_of, const std::set<std::string>& functions,
                       std::string_view dir);

// The arguments a launch of `words` parameter words takes: `arguments`, or `undeduplicated` when
// its count is the launch's (check_launch then also holds the repeated slices' words equal).
const std::vector<KernelArgument>& arguments_for(const KernelThunk& kernel, size_t words);

// A launch's parameter words checked against a kernel thunk's arguments (arguments_for): the
// count, and that two arguments in one allocation lie their offsets' difference apart. reasons is empty when the
// launch is consistent; then base[i] is argument i's allocation base address.
struct LaunchCheck {
  std::vector<std::string> reasons;
  std::vector<uint64_t> base;
  bool consistent() const { return reasons.empty(); }
};
LaunchCheck check_launch(const KernelThunk& kernel, std::span<const uint64_t> parameter_words);

// A launch's grid and block: a kernel thunk's (the thunk sequence's "grid: [..] threads: [..]")
// must be the same for the launch to be that thunk.
struct LaunchShape {
  std::array<uint32_t, 3> grid{}, block{};
};
bool fits_shape(const DumpModule& module, const KernelThunk& kernel, const LaunchShape& shape);

// The kernel thunks of a module that a launch of `function` with these parameters can be: those
// of that name whose arguments are consistent with the words (identical fusions share a kernel,
// so several can be), and, when `shape` is given, whose grid and block are the launch's.
std::vector<size_t> launch_candidates(const DumpModule& module, std::string_view function,
                                      std::span<const uint64_t> parameter_words, const LaunchShape* shape = nullptr);

// What a launch of `function` with these parameter words writes that may hold a NaN: each written
// floating-point argument's pointer (the word itself: XLA passes slice addresses) with its HLO
// shape, over every kernel thunk the launch fits. Identical fusions share a kernel, so several
// thunks may fit (launch_candidates); they must agree on which arguments they write and with what
// shape, or the launch is refused. Integer and predicate outputs hold no NaN and are left out.
// `refused` says why nothing can be scanned (then `writes` is empty); `instructions` names the
// fusions the launch may be (for the finding's name and its source lines).
struct LaunchWrite {
  uint32_t arg = 0;   // parameter index
  uint64_t ptr = 0;   // the parameter word
  Shape shape;        // dtype and elements
  uint64_t bytes = 0; // the slice's size
  uint8_t intended_inf = 0;  // a write's: its thunk's intended_inf
};
// Why a launch is refused, as a kind (the decoder's static reason) beside the text.
enum class Refusal : uint8_t { none, no_thunk, unknown_shape, thunks_disagree };
struct LaunchWrites {
  std::vector<LaunchWrite> writes;
  // The arguments the launch only reads (its operands: the floating-point ones for the NaN
  // origin, all of them so a graph's model knows they are not written), with their shapes; read
  // and written (updated in place) ones are writes only.
  std::vector<LaunchWrite> reads;
  // Integer and predicate outputs: no NaN to scan, but their exact slices (a graph's model).
  std::vector<LaunchWrite> no_nan_writes;
  std::vector<std::string> instructions;
  // The user's line of the thunks the launch fits (their KernelThunk::source), when they agree
  // on it; null otherwise. It lives as long as the dump module does. Its `op` holds for the
  // launch only when `source_op_agreed` (every fitting thunk names that op).
  const SourceLine* source = nullptr;
  bool source_op_agreed = false;
  std::string refused;
  Refusal refusal = Refusal::none;
  // The fitting thunks agree on each argument's dtype and element count but not its dimensions:
  // every shape is then one dimension, its element count (no rows to tell apart).
  bool flattened = false;
};
LaunchWrites launch_writes(const DumpModule& module, std::string_view function,
                           std::span<const uint64_t> parameter_words);
// Over every dump module the launch's CUfunction may be (XlaModules: a one-kernel CUmodule may be
// any module holding a kernel of its name), the fitting thunks of all of them taken together.
LaunchWrites launch_writes(std::span<const DumpModule* const> modules, std::string_view function,
                           std::span<const uint64_t> parameter_words, const LaunchShape* shape);

// The infinities a fusion writes on purpose (kIntend* bits, decode/written.hpp): a constant +-inf
// that reaches its output unchanged, through selects, broadcasts and moves only: `jnp.where(mask,
// scores, -jnp.inf)` fused on its own, as ATen's masked_fill(-inf) is. An infinity that went
// through arithmetic (an exp, a sum, a max-reduce) is not one: 0 then, and for a fusion not known.
uint8_t intended_inf(const HloSources& sources, const HloInstructions& hlo, std::string_view fusion);

// The ops inside a fusion (and the fusions it calls, to a depth of 8) that can make NaN from
// finite operands: log and log-plus-one of a negative, sqrt and rsqrt of one, 0/0, power,
// remainder, atan2 (kNaNOpcodes, src/xla_launch.cpp), each with its op_name and source line:
// what a finding at that fusion names as its user's lines. Empty when it holds none (its NaN came
// in through an operand, or from an op not listed): the finding then names the fusion's own line.
struct NanOp {
  std::string instruction, opcode, op_name;
  SourceLine line;  // line 0: the HLO carries none
};
std::vector<NanOp> nan_ops(const HloSources& sources, const HloInstructions& hlo, std::string_view fusion);

}  // namespace nanscope::xla

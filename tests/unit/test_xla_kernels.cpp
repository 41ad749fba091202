// Tests for src/xla_thunks.cpp, src/xla_instructions.cpp and src/xla_kernels.cpp on the dumps
// jaxlib 0.10.2 with CUDA wrote on an H200 (sm_90a) for tests/gpu/apps/jax_pool.py, jax_donate.py
// and jax_attention.py (tests/unit/fixtures/xla/gpu, see its README), and on hand-made odd lines.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "decode/written.hpp"
#include "xla_fixture.hpp"
#include "xla_kernels.hpp"

namespace nanscope::xla {
namespace {

using xla_test::dump_module;
using xla_test::fixture;
using xla_test::kernel;

DumpModule pool() { return dump_module("jax_pool-sick", "module_5968.jit_step"); }
DumpModule donate() { return dump_module("jax_donate-sick", "module_5967.jit_step"); }
DumpModule attend() { return dump_module("jax_attention-sick", "module_3978.jit_attend", "thunk_sequence_after_thunk_passes"); }

TEST(XlaThunkSequence, TheMlpsFourKernelsInOrderWithTheirLaunchDimensions) {
  const DumpModule m = pool();
  EXPECT_TRUE(m.errors.empty()) << m.errors.front();
  ASSERT_EQ(m.thunks.thunks.size(), 4u);
  const Thunk& first = m.thunks.thunks[0];
  EXPECT_EQ(first.id, 1u);
  EXPECT_EQ(first.kind, "kCustomKernel");
  EXPECT_TRUE(first.kernel());
  EXPECT_EQ(first.name, "gemm_fusion_dot");
  EXPECT_EQ(first.annotation, "gemm_fusion_dot");
  EXPECT_EQ(first.grid, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(first.threads, (std::array<uint32_t, 3>{64, 1, 1}));
  EXPECT_EQ(first.shared_memory, 49152u);
  EXPECT_EQ(first.parent, -1);
  EXPECT_EQ(m.thunks.thunks[2].name, "gemm_fusion_dot_1");
  EXPECT_EQ(m.thunks.thunks[2].annotation, "gemm_fusion_dot.1");  // the metadata names the HLO instruction
  EXPECT_EQ(m.thunks.thunks[3].annotation, "loop_reduce_fusion.1");
}

TEST(XlaThunkSequence, ACommandBufferHoldsTheAttentionsKernels) {
  const DumpModule m = attend();
  EXPECT_TRUE(m.errors.empty()) << m.errors.front();
  ASSERT_EQ(m.thunks.thunks.size(), 8u);
  EXPECT_EQ(m.thunks.thunks[0].kind, "kCommandBuffer");
  EXPECT_FALSE(m.thunks.thunks[0].kernel());
  EXPECT_EQ(m.thunks.thunks[0].annotation, "");  // its metadata has no thunk_id
  for (size_t i = 1; i < 8; ++i) EXPECT_EQ(m.thunks.thunks[i].parent, 0) << i;
  // Thunks 1 and 5 run one kernel: XLA gave the identical fusion wrapped_transpose wrapped_transpose.2's.
  EXPECT_EQ(m.thunks.thunks[1].name, "wrapped_transpose_2");
  EXPECT_EQ(m.thunks.thunks[5].name, "wrapped_transpose_2");
  EXPECT_EQ(m.thunks.thunks[5].annotation, "wrapped_transpose");
  EXPECT_EQ(m.thunks.thunks[7].shared_memory, 1032u);
  // The plain sequence of the same module: the same kernels, not nested.
  const DumpModule flat = dump_module("jax_attention-sick", "module_3978.jit_attend");
  ASSERT_EQ(flat.kernels.size(), 7u);
  EXPECT_EQ(flat.kernel_names(), m.kernel_names());
  EXPECT_EQ(flat.thunks.thunks[0].parent, -1);
}

TEST(XlaThunkSequence, ACopyIsAThunkButNoKernel) {
  const DumpModule m = dump_module("jax_pool-sick", "module_0000.jit_stage");
  EXPECT_TRUE(m.errors.empty()) << m.errors.front();
  ASSERT_FALSE(m.thunks.thunks.empty());
  for (const Thunk& t : m.thunks.thunks) {
    EXPECT_EQ(t.kind, "kCopy");
    EXPECT_EQ(t.name, "kCopy");
    EXPECT_FALSE(t.kernel());
  }
  EXPECT_TRUE(m.kernels.empty());
}

TEST(XlaThunkSequence, OddLinesAreNamedNotGuessed) {
  ThunkSequence s = parse_thunk_sequence(
      "001: kCustomKernel [source | sink] k grid: [1, 1] threads: [1, 1, 1]  shared_memory: 0 bytes\n"
      "002: kCustomKernel [source | sink] k grid: [1, 1, 1] threads: [1, 1, 1]\n"
      "something else\n"
      "003: kCommandBuffer [source | sink] \n"
      "      004: kKernel [source | sink] k2 grid: [2, 1, 1] threads: [32, 1, 1]  shared_memory: 0 bytes\n"
      "    005: kKernel [source | sink] k3 grid: [2, 1, 1] threads: [32, 1, 1]  shared_memory: 0 bytes\n"
      "006: kGemm [source | sink] cublas-gemm.1\n");
  ASSERT_EQ(s.errors.size(), 4u);
  EXPECT_NE(s.errors[0].find("line 1"), std::string::npos);
  EXPECT_NE(s.errors[3].find("line 5"), std::string::npos);  // six spaces: not one level in
  ASSERT_EQ(s.thunks.size(), 3u);
  EXPECT_EQ(s.thunks[1].parent, 0);
  EXPECT_EQ(s.thunks[2].kind, "kGemm");
  EXPECT_EQ(s.thunks[2].name, "cublas-gemm.1");
  attach_thunk_metadata(s, "thunk_metadata {\n  thunk_info {\n    profile_annotation: \"f.1\"\n    thunk_id: 5\n  }\n"
                           "  thunk_kind: \"kCopy\"\n}\nthunk_metadata {\n  surprise: 1\n}\n");
  EXPECT_EQ(s.thunks[1].annotation, "");  // its metadata says kCopy
  ASSERT_EQ(s.errors.size(), 6u);
  EXPECT_NE(s.errors[4].find("surprise"), std::string::npos);
  EXPECT_NE(s.errors[5].find("kCopy"), std::string::npos);
}

TEST(XlaHloInstructions, OperandsShapesAndOpcodes) {
  const HloInstructions h = parse_hlo_instructions(fixture("jax_pool-sick/module_5968.jit_step.sm_9.0a_gpu_after_optimizations.txt"));
  EXPECT_TRUE(h.errors.empty());
  const Instruction& dot = h.by_name.at("gemm_fusion_dot.1");
  EXPECT_EQ(dot.opcode, "fusion");
  EXPECT_EQ(dot.shape_text, "f32[16,256,128]{2,1,0}");
  EXPECT_EQ(dot.operands, (std::vector<std::string>{"bitcast.3.0", "bitcast.2.0"}));
  EXPECT_EQ(h.by_name.at("bitcast.3.0").operands, (std::vector<std::string>{"loop_reduce_fusion"}));
  EXPECT_TRUE(h.by_name.at("constant_6").operands.empty());
  const HloInstructions t = parse_hlo_instructions(
      "  %t = (f32[4]{0}, s32[]) fusion(%a, %b), kind=kLoop\n  ROOT %g = f32[4]{0} get-tuple-element(%t), index=0\n"
      "  %bad = f32[4]{0}\n");
  EXPECT_EQ(t.by_name.at("t").shape_text, "(f32[4]{0}, s32[])");
  EXPECT_EQ(t.by_name.at("g").opcode, "get-tuple-element");
  EXPECT_EQ(t.errors.size(), 1u);
}

TEST(XlaKernelName, DotsAndDashesBecomeUnderscores) {
  EXPECT_EQ(kernel_name_for("gemm_fusion_dot.1"), "gemm_fusion_dot_1");
  EXPECT_EQ(kernel_name_for("wrapped_is-finite"), "wrapped_is_finite");
  const DumpModule m = dump_module("jax_pool-healthy", "module_31768.jit_isfinite");
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].kernel, "wrapped_is_finite");
  EXPECT_TRUE(m.kernels[0].named_after_instruction);
  ASSERT_EQ(m.kernels[0].arguments.size(), 2u);
  EXPECT_EQ(m.kernels[0].arguments[1].shape->element, "pred");  // written, but nothing to scan
  EXPECT_EQ(m.kernels[0].arguments[1].shape->dtype, DType::none);
}

void expect_argument(const KernelArgument& a, std::string_view value, bool written, std::string_view shape,
                     uint32_t allocation, uint64_t offset, uint64_t size) {
  EXPECT_EQ(a.value, value);
  EXPECT_EQ(a.written, written) << value;
  EXPECT_EQ(a.read, !written) << value;
  EXPECT_EQ(a.shape_text, shape) << value;
  EXPECT_EQ(a.allocation, allocation) << value;
  EXPECT_EQ(a.offset, offset) << value;
  EXPECT_EQ(a.size, size) << value;
}

// jit_step of jax_pool (see the buffer assignment): x is allocation 1, w1 allocation 0, w2
// allocation 2, the result allocation 3, the temps allocation 10 (gemm_fusion_dot at 0,
// loop_reduce_fusion at 4194304, gemm_fusion_dot.1 reusing 0).
TEST(XlaKernelMap, ThePoolsKernelsOperandsThenOutputs) {
  const DumpModule m = pool();
  ASSERT_EQ(m.kernels.size(), 4u);
  for (const KernelThunk& k : m.kernels) {
    EXPECT_TRUE(k.unmapped.empty()) << k.kernel << ": " << k.unmapped;
    EXPECT_TRUE(k.named_after_instruction) << k.kernel;
  }
  const KernelThunk& dot = kernel(m, "gemm_fusion_dot");
  EXPECT_EQ(dot.kernel, "gemm_fusion_dot");
  ASSERT_EQ(dot.arguments.size(), 3u);
  expect_argument(dot.arguments[0], "x.1", false, "f32[256,4,128]{2,1,0}", 1, 0, 524288);  // through bitcast.1.0
  EXPECT_EQ(dot.arguments[0].operand, "bitcast.1.0");
  expect_argument(dot.arguments[1], "w1.1", false, "f32[4,128,1024]{2,1,0}", 0, 0, 2097152);
  expect_argument(dot.arguments[2], "gemm_fusion_dot", true, "f32[4,256,1024]{2,1,0}", 10, 0, 4194304);
  EXPECT_EQ(dot.arguments[2].shape->dtype, DType::f32);
  EXPECT_EQ(dot.arguments[2].shape->elements() * 4, dot.arguments[2].size);
  const KernelThunk& dot1 = kernel(m, "gemm_fusion_dot.1");  // the one whose fusion holds the planted log
  EXPECT_EQ(dot1.kernel, "gemm_fusion_dot_1");
  ASSERT_EQ(dot1.arguments.size(), 3u);
  expect_argument(dot1.arguments[0], "loop_reduce_fusion", false, "f32[256,16,64]{2,1,0}", 10, 4194304, 1048576);
  expect_argument(dot1.arguments[1], "w2.1", false, "f32[16,64,128]{2,1,0}", 2, 0, 524288);
  expect_argument(dot1.arguments[2], "gemm_fusion_dot.1", true, "f32[16,256,128]{2,1,0}", 10, 0, 2097152);
  const KernelThunk& last = kernel(m, "loop_reduce_fusion.1");
  ASSERT_EQ(last.arguments.size(), 2u);
  expect_argument(last.arguments[1], "loop_reduce_fusion.1", true, "f32[256,128]{1,0}", 3, 0, 131072);
}

TEST(XlaKernelMap, ADonatedParameterUpdatedInPlaceIsOneArgumentReadAndWritten) {
  const DumpModule m = donate();
  EXPECT_TRUE(m.errors.empty());
  ASSERT_EQ(m.kernels.size(), 4u);
  const KernelThunk& update = kernel(m, "loop_subtract_fusion");  // w - lr * grad, into w's own buffer
  ASSERT_TRUE(update.unmapped.empty()) << update.unmapped;
  ASSERT_EQ(update.arguments.size(), 3u);  // w, grad, lr: the output's slice is w's
  const KernelArgument& w = update.arguments[0];
  EXPECT_EQ(w.value, "w.1");
  EXPECT_TRUE(w.read);
  EXPECT_TRUE(w.written);
  EXPECT_EQ(w.allocation, 1u);
  EXPECT_EQ(w.size, 65536u);
  expect_argument(update.arguments[1], "gemm_fusion_dot.2", false, "f32[4,256,64]{2,1,0}", 10, 0, 262144);
  expect_argument(update.arguments[2], "lr.1", false, "f32[]", 3, 0, 4);
}

// jaxlib 0.11.2 on the H200 (session 23): the update is a Triton fusion (kind=kCustom) whose
// kernel takes its fusion's parameters as they are: w, grad, lr, then w again as the output (4
// words; the de-duplicated map has 3). The repeated slice's words must be equal; w is then
// written (its output entry), not read, as in the de-duplicated map.
TEST(XlaLaunchWrites, ATritonFusionTakesItsInPlaceOutputAsAParameterOfItsOwn) {
  const DumpModule m = dump_module("jax_donate-sick-jaxlib0.11", "module_5967.jit_step");
  EXPECT_TRUE(m.errors.empty());
  const KernelThunk& update = kernel(m, "loop_subtract_fusion");
  ASSERT_TRUE(update.unmapped.empty()) << update.unmapped;
  ASSERT_EQ(update.arguments.size(), 3u);
  ASSERT_EQ(update.undeduplicated.size(), 4u);
  EXPECT_FALSE(update.undeduplicated[0].read);  // w as an operand: its output entry says it
  EXPECT_TRUE(update.undeduplicated[3].written);
  const uint64_t w = 0x7f0000000000, temp = 0x7f0010000000, lr = 0x7f0020000000;
  const LaunchShape shape{{128, 1, 1}, {64, 1, 1}};  // its thunk's, as launched
  const DumpModule* one[] = {&m};
  const LaunchWrites four = launch_writes(one, "loop_subtract_fusion", std::vector<uint64_t>{w, temp, lr, w}, &shape);
  ASSERT_EQ(four.refusal, Refusal::none) << four.refused;
  ASSERT_EQ(four.writes.size(), 1u);
  EXPECT_EQ(four.writes[0].arg, 3u);
  EXPECT_EQ(four.writes[0].ptr, w);
  EXPECT_EQ(four.writes[0].shape.dims, (std::vector<int64_t>{256, 64}));
  ASSERT_EQ(four.reads.size(), 2u);  // grad and lr, not w
  EXPECT_EQ(four.reads[0].ptr, temp);
  EXPECT_EQ(four.reads[1].ptr, lr);
  // Another output pointer than w's is not this thunk: its slice is w's.
  EXPECT_EQ(launch_writes(one, "loop_subtract_fusion", std::vector<uint64_t>{w, temp, lr, w + 256}, &shape).refusal,
            Refusal::no_thunk);
  // Three words (an emitter that de-duplicates) still take the de-duplicated map.
  EXPECT_EQ(arguments_for(update, 3).size(), 3u);
  EXPECT_EQ(arguments_for(update, 5).size(), 3u);  // neither count: the check names the de-duplicated one
}

TEST(XlaKernelMap, TheAttentionsSharedKernelMapsOncePerThunk) {
  const DumpModule m = attend();
  ASSERT_EQ(m.kernels.size(), 7u);
  for (const KernelThunk& k : m.kernels) EXPECT_TRUE(k.unmapped.empty()) << k.kernel << ": " << k.unmapped;
  const KernelThunk& k_t = kernel(m, "wrapped_transpose.2");
  const KernelThunk& v_t = kernel(m, "wrapped_transpose");
  EXPECT_EQ(k_t.kernel, v_t.kernel);
  EXPECT_TRUE(k_t.named_after_instruction);
  EXPECT_FALSE(v_t.named_after_instruction);  // XLA's one exception seen: a kernel reused
  expect_argument(k_t.arguments[1], "wrapped_transpose.2", true, "f32[4,4,32,64]{3,2,1,0}", 11, 262144, 131072);
  expect_argument(v_t.arguments[1], "wrapped_transpose", true, "f32[4,4,32,64]{3,2,1,0}", 0, 0, 131072);
  const KernelThunk& softmax = kernel(m, "triton_softmax.2");  // the masked softmax that divides by 0
  ASSERT_EQ(softmax.arguments.size(), 3u);
  expect_argument(softmax.arguments[1], "lengths.1", false, "s32[4]{0}", 4, 0, 16);
  expect_argument(softmax.arguments[2], "triton_softmax.2", true, "f32[4,4,64,64]{3,2,1,0}", 11, 262144, 262144);
}

// A hand-made module with what is not mapped: a nested tuple output (a flat one is mapped since
// session 28: XlaLoops.AMultiOutputFusionWritesEachElementOfItsTuple), a custom call, a get-tuple-element
// operand, an output overlapping an operand without being its slice, no metadata.
TEST(XlaKernelMap, WhatCannotBeDeterminedIsAReason) {
  const std::string hlo =
      "ENTRY %main (p: f32[8]) -> f32[8] {\n"
      "  %p = f32[8]{0} parameter(0)\n"
      "  %multi = ((f32[8]{0}, f32[8]{0}), f32[8]{0}) fusion(%p), kind=kLoop, calls=%c1\n"
      "  %gte = f32[8]{0} get-tuple-element(%multi), index=0\n"
      "  %reader = f32[8]{0} fusion(%gte), kind=kLoop, calls=%c2\n"
      "  %cc = f32[8]{0} custom-call(%p), custom_call_target=\"x\"\n"
      "  %half = f32[4]{0} fusion(%p), kind=kLoop, calls=%c3\n"
      "}\n";
  const std::string buffers =
      "allocation 0: size 32, parameter 0, shape |f32[8]| at ShapeIndex {}:\n"
      " value: <1 p @0> (size=32,offset=0): f32[8]{0}\n"
      " value: <2 half @0> (size=16,offset=8): f32[4]{0}\n"
      "allocation 1: size 64, preallocated-temp:\n"
      " value: <3 multi @{0}> (size=32,offset=0): f32[8]{0}\n"
      " value: <4 multi @{1}> (size=32,offset=32): f32[8]{0}\n"
      " value: <5 reader @0> (size=32,offset=0): f32[8]{0}\n"
      " value: <6 cc @0> (size=32,offset=32): f32[8]{0}\n";
  const auto line = [](int id, std::string_view name) {
    return "00" + std::to_string(id) + ": kCustomKernel [source | sink] " + std::string(name) +
           " grid: [1, 1, 1] threads: [32, 1, 1]  shared_memory: 0 bytes\n";
  };
  std::string metadata;
  for (auto [id, name] : std::vector<std::pair<int, std::string>>{{1, "multi"}, {2, "reader"}, {3, "cc"}, {4, "half"}})
    metadata += "thunk_metadata {\n thunk_info {\n profile_annotation: \"" + name + "\"\n thunk_id: " +
                std::to_string(id) + "\n }\n thunk_kind: \"kCustomKernel\"\n}\n";
  const DumpModule m = read_dump_module("m", line(1, "multi") + line(2, "reader") + line(3, "cc") + line(4, "half") +
                                                 line(5, "orphan"), metadata, hlo, buffers);
  EXPECT_TRUE(m.errors.empty()) << m.errors.front();
  ASSERT_EQ(m.kernels.size(), 5u);
  EXPECT_NE(m.kernels[0].unmapped.find("nested tuple output"), std::string::npos) << m.kernels[0].unmapped;
  EXPECT_NE(m.kernels[1].unmapped.find("gte (get-tuple-element) has no slice"), std::string::npos) << m.kernels[1].unmapped;
  EXPECT_NE(m.kernels[2].unmapped.find("custom-call, not a fusion"), std::string::npos) << m.kernels[2].unmapped;
  EXPECT_NE(m.kernels[3].unmapped.find("aliased"), std::string::npos) << m.kernels[3].unmapped;
  EXPECT_NE(m.kernels[4].unmapped.find("no thunk_metadata"), std::string::npos) << m.kernels[4].unmapped;
  for (const KernelThunk& k : m.kernels) EXPECT_TRUE(k.arguments.empty());
}

std::vector<DumpModule> captured_modules() {
  std::vector<DumpModule> modules;
  modules.push_back(pool());
  modules.push_back(donate());
  modules.push_back(attend());
  modules.push_back(dump_module("jax_pool-healthy", "module_31768.jit_isfinite"));
  modules.push_back(dump_module("jax_pool-sick", "module_0000.jit_stage"));
  return modules;
}

TEST(XlaModuleMatch, ALoadedModulesFunctionsFindTheirDumpModule) {
  std::vector<DumpModule> dumps = captured_modules();
  const auto match = [&](std::set<std::string> functions) { return match_module(dumps, functions); };
  const ModuleMatch p = match({"gemm_fusion_dot", "loop_reduce_fusion", "gemm_fusion_dot_1", "loop_reduce_fusion_1"});
  ASSERT_TRUE(p.found());
  EXPECT_EQ(dumps[p.candidates[0]].name, "module_5968.jit_step");
  // jax_donate's module is also jit_step; its kernels tell it apart.
  const ModuleMatch d = match({"gemm_fusion_dot_1", "gemm_fusion_dot_2", "loop_subtract_fusion", "loop_subtract_fusion_1"});
  ASSERT_TRUE(d.found());
  EXPECT_EQ(d.candidates[0], 1u);
  EXPECT_TRUE(match({"gemm_fusion_dot", "loop_reduce_fusion"}).candidates.empty());  // a subset is not the module
  const ModuleMatch more = match({"gemm_fusion_dot", "loop_reduce_fusion", "gemm_fusion_dot_1", "loop_reduce_fusion_1", "x"});
  EXPECT_TRUE(more.candidates.empty());  // a function no thunk launches: not this module
  EXPECT_EQ(more.covering, (std::vector<size_t>{0}));
  EXPECT_TRUE(match({}).candidates.empty());  // jit_stage, only copies, matches no module
  EXPECT_TRUE(match({"wrapped_is_finite"}).found());
  dumps.push_back(dump_module("jax_pool-healthy", "module_31768.jit_isfinite"));  // the same program again
  EXPECT_TRUE(match({"wrapped_is_finite"}).ambiguous());
}

// jaxlib 0.11.2 on the H200 loads each kernel thunk's kernel as a CUmodule of its own: a module of
// one function is any dump module holding a kernel of that name (jax_pool's and jax_donate's
// jit_step both have gemm_fusion_dot_1), never an exact match, and each launch then picks.
TEST(XlaModuleMatch, AOneKernelModuleMayBeEveryDumpModuleHoldingIt) {
  const std::vector<DumpModule> dumps = captured_modules();
  const ModuleMatch one = match_module(dumps, {"gemm_fusion_dot_1"});
  EXPECT_TRUE(one.candidates.empty());
  EXPECT_EQ(one.holding, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(one.usable(), one.holding);
  EXPECT_EQ(match_module(dumps, {"triton_softmax_2"}).usable(), (std::vector<size_t>{2}));
  EXPECT_TRUE(match_module(dumps, {"no_such_kernel"}).usable().empty());
  EXPECT_TRUE(match_module(dumps, {}).usable().empty());
  std::vector<std::set<std::string>> names;
  for (const DumpModule& d : dumps) names.push_back(d.kernel_names());
  const ModulesFor usable = modules_for(names, {"gemm_fusion_dot_1"}, "/dumps");
  EXPECT_EQ(usable.modules, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(usable.reason.empty());
  EXPECT_FALSE(usable.none_hold);
  const ModulesFor none = modules_for(names, {"no_such_kernel"}, "/dumps");
  EXPECT_TRUE(none.modules.empty());
  EXPECT_EQ(none.reason,
            "no dump module in /dumps has a kernel named no_such_kernel (XLA dumps only what it compiles: an "
            "executable from JAX's persistent compilation cache has no dump)");
  EXPECT_TRUE(none.none_hold);  // only such a kernel's launch during a compile is taken for autotuning
  EXPECT_TRUE(modules_for(names, {"a", "b"}, "/dumps").reason.starts_with("no dump module in /dumps holds its module's 2 kernels ("));
  std::vector<std::set<std::string>> many(kMaxModulesPerFunction + 1, std::set<std::string>{"loop_add_fusion", "x"});
  const ModulesFor too_many = modules_for(many, {"loop_add_fusion"}, "/dumps");
  EXPECT_TRUE(too_many.modules.empty());
  EXPECT_NE(too_many.reason.find("65 dump modules of /dumps"), std::string::npos) << too_many.reason;
  EXPECT_FALSE(too_many.none_hold);  // held, by too many: a program's kernel, never autotuning
  // A whole module's kernels still match it exactly, and only it.
  const ModuleMatch whole = match_module(dumps, {"gemm_fusion_dot", "loop_reduce_fusion", "gemm_fusion_dot_1", "loop_reduce_fusion_1"});
  EXPECT_EQ(whole.usable(), (std::vector<size_t>{0}));
}

// The launch's grid and block pick the thunk among the modules: jax_pool's gemm_fusion_dot_1 runs
// [256] x [128], jax_donate's [32] x [128]; a shape neither has (an autotuner's candidate config)
// fits none. Their lines differ, so a finding at that function names no line from the dumps.
TEST(XlaLaunchWrites, TheLaunchShapePicksTheThunkAmongModules) {
  const DumpModule pool_step = pool(), donate_step = donate();
  const DumpModule* both[] = {&pool_step, &donate_step};
  const uint64_t temp = 0x7f0000000000, w2 = 0x7f0010000000;
  const std::vector<uint64_t> words{temp + 4194304, w2, temp};
  LaunchShape pool_shape{{256, 1, 1}, {128, 1, 1}};
  const LaunchWrites in_pool = launch_writes(both, "gemm_fusion_dot_1", words, &pool_shape);
  ASSERT_EQ(in_pool.refusal, Refusal::none) << in_pool.refused;
  EXPECT_EQ(in_pool.instructions, (std::vector<std::string>{"gemm_fusion_dot.1"}));
  const LaunchWrites alone = launch_writes(pool_step, "gemm_fusion_dot_1", words);
  ASSERT_EQ(in_pool.writes.size(), alone.writes.size());
  // The launch names its thunk's line (the log's), though the kernel's name alone names none.
  ASSERT_NE(in_pool.source, nullptr);
  EXPECT_EQ(in_pool.source->line, kernel(pool_step, "gemm_fusion_dot.1").source.line);
  EXPECT_EQ(in_pool.writes[0].shape.dims, alone.writes[0].shape.dims);
  LaunchShape other{{128, 1, 1}, {128, 1, 1}};
  const LaunchWrites none = launch_writes(both, "gemm_fusion_dot_1", words, &other);
  EXPECT_EQ(none.refusal, Refusal::no_thunk);
  EXPECT_NE(none.refused.find("2 dump modules"), std::string::npos) << none.refused;
  EXPECT_NE(none.refused.find("grid [128, 1, 1] block [128, 1, 1]"), std::string::npos) << none.refused;
  // Two modules whose same-named thunks take the same words and shape but write different shapes
  // (the same jit function compiled for another batch, say): refused, never one picked.
  DumpModule twin = pool_step;
  twin.name = "module_9999.jit_step";
  for (KernelThunk& k : twin.kernels)
    for (KernelArgument& arg : k.arguments)
      if (k.kernel == "gemm_fusion_dot_1" && arg.written) arg.shape->dims.back() *= 2;
  const DumpModule* clash[] = {&pool_step, &twin};
  const LaunchWrites clashed = launch_writes(clash, "gemm_fusion_dot_1", words, &pool_shape);
  EXPECT_EQ(clashed.refusal, Refusal::thunks_disagree) << clashed.refused;
  EXPECT_TRUE(clashed.writes.empty());
  const DumpModule same = pool_step;
  const DumpModule* agree[] = {&pool_step, &same};  // identical twins agree: scanned, line kept
  const LaunchWrites agreed = launch_writes(agree, "gemm_fusion_dot_1", words, &pool_shape);
  EXPECT_EQ(agreed.refusal, Refusal::none);
  ASSERT_NE(agreed.source, nullptr);
  EXPECT_EQ(agreed.source->line, in_pool.source->line);
  DumpModule moved_line = pool_step;  // the same fusion written on another line: scanned, no line named
  for (KernelThunk& k : moved_line.kernels) k.source.line += 100;
  const DumpModule* lines_differ[] = {&pool_step, &moved_line};
  const LaunchWrites unsure = launch_writes(lines_differ, "gemm_fusion_dot_1", words, &pool_shape);
  EXPECT_EQ(unsure.refusal, Refusal::none);
  EXPECT_EQ(unsure.source, nullptr);
  EXPECT_TRUE(kernel_source(agree, "gemm_fusion_dot_1"));
  const std::optional<SourceLine> own = kernel_source(pool_step, "gemm_fusion_dot_1");
  ASSERT_TRUE(own);
  const DumpModule* just_pool[] = {&pool_step};
  EXPECT_EQ(kernel_source(just_pool, "gemm_fusion_dot_1")->line, own->line);
  ASSERT_NE(kernel_source(donate_step, "gemm_fusion_dot_1")->line, own->line);
  EXPECT_FALSE(kernel_source(both, "gemm_fusion_dot_1"));
  EXPECT_FALSE(kernel_source(both, "no_such_kernel"));
}

// Parameter words as XLA would pass them, from allocation bases chosen here.
TEST(XlaLaunchCheck, PointersMustKeepTheirOffsetsApart) {
  const DumpModule m = pool();
  const KernelThunk& dot1 = kernel(m, "gemm_fusion_dot.1");  // allocation 10 twice: at 4194304 and at 0
  const uint64_t temp = 0x7f0000000000, w2 = 0x7f0010000000;
  const std::vector<uint64_t> words{temp + 4194304, w2, temp};
  const LaunchCheck ok = check_launch(dot1, words);
  EXPECT_TRUE(ok.consistent()) << ok.reasons.front();
  EXPECT_EQ(ok.base, (std::vector<uint64_t>{temp, w2, temp}));
  const LaunchCheck moved = check_launch(dot1, std::vector<uint64_t>{temp + 4194304 + 256, w2, temp});
  ASSERT_EQ(moved.reasons.size(), 1u);
  EXPECT_NE(moved.reasons[0].find("share allocation 10"), std::string::npos) << moved.reasons[0];
  EXPECT_TRUE(moved.base.empty());
  const LaunchCheck short_ = check_launch(dot1, std::vector<uint64_t>{temp, w2});
  EXPECT_NE(short_.reasons.at(0).find("2 parameter words for 3 arguments"), std::string::npos);
  const LaunchCheck low = check_launch(dot1, std::vector<uint64_t>{4096, w2, 0});
  EXPECT_FALSE(low.consistent());
  KernelThunk unmapped = dot1;
  unmapped.unmapped = "tuple output";
  EXPECT_NE(check_launch(unmapped, words).reasons.at(0).find("unmapped: tuple output"), std::string::npos);
  // The launch's words pick the thunk among the module's: only gemm_fusion_dot_1 takes these.
  EXPECT_EQ(launch_candidates(m, "gemm_fusion_dot_1", words), (std::vector<size_t>{2}));
  EXPECT_TRUE(launch_candidates(m, "gemm_fusion_dot_1", moved.base).empty());
}

TEST(XlaLaunchCheck, TheAttentionsSharedKernelStaysTwoCandidates) {
  const DumpModule m = attend();
  // wrapped_transpose_2 reads k (allocation 3) into the temp at 262144, or v (allocation 1) into
  // the output allocation at 0: any two pointers fit both, so the launch alone does not say which
  // fusion ran (the thunk order does); both write f32[4,4,32,64], so what to scan is known.
  const std::vector<uint64_t> words{0x7f0000100000, 0x7f0000240000};
  const std::vector<size_t> both = launch_candidates(m, "wrapped_transpose_2", words);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(m.kernels[both[0]].instruction, "wrapped_transpose.2");
  EXPECT_EQ(m.kernels[both[1]].instruction, "wrapped_transpose");
  EXPECT_EQ(m.kernels[both[0]].arguments[1].shape_text, m.kernels[both[1]].arguments[1].shape_text);
}

// What a launch writes, as the engine will scan it: the output slice's pointer (the word) with the
// fusion's HLO shape, never a neighbour.
TEST(XlaLaunchWrites, TheGemmWritesItsOutputSliceWithItsShape) {
  const DumpModule m = pool();
  const uint64_t temp = 0x7f0000000000, w2 = 0x7f0010000000;
  const std::vector<uint64_t> words{temp + 4194304, w2, temp};
  const LaunchWrites w = launch_writes(m, "gemm_fusion_dot_1", words);
  ASSERT_TRUE(w.refused.empty()) << w.refused;
  EXPECT_EQ(w.instructions, (std::vector<std::string>{"gemm_fusion_dot.1"}));
  const KernelThunk& dot1 = kernel(m, "gemm_fusion_dot.1");
  std::vector<uint32_t> written;
  for (uint32_t i = 0; i < dot1.arguments.size(); ++i)
    if (dot1.arguments[i].written && dot1.arguments[i].shape && dot1.arguments[i].shape->dtype != DType::none)
      written.push_back(i);
  ASSERT_EQ(w.writes.size(), written.size());
  ASSERT_FALSE(w.writes.empty());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(w.writes[i].arg, written[i]);
    EXPECT_EQ(w.writes[i].ptr, words[written[i]]);
    EXPECT_EQ(w.writes[i].shape.elements(), dot1.arguments[written[i]].shape->elements());
    EXPECT_EQ(w.writes[i].shape.elements() * dtype_size(w.writes[i].shape.dtype), dot1.arguments[written[i]].size)
        << "the shape covers the slice exactly";
  }
  // Its operands, for the origin: the read-only float arguments, each at its word.
  ASSERT_FALSE(w.reads.empty());
  for (const LaunchWrite& r : w.reads) {
    EXPECT_TRUE(dot1.arguments[r.arg].read && !dot1.arguments[r.arg].written) << r.arg;
    EXPECT_EQ(r.ptr, words[r.arg]);
    EXPECT_EQ(r.bytes, dot1.arguments[r.arg].size);
  }
  // Words that fit no thunk: refused, with the reason.
  const LaunchWrites moved = launch_writes(m, "gemm_fusion_dot_1", std::vector<uint64_t>{temp + 4194304 + 256, w2, temp});
  EXPECT_TRUE(moved.writes.empty());
  EXPECT_NE(moved.refused.find("no kernel thunk of module_5968.jit_step named gemm_fusion_dot_1"), std::string::npos)
      << moved.refused;
  EXPECT_EQ(moved.refusal, Refusal::no_thunk);
}

// Identical fusions share a kernel: both thunks write f32[4,4,32,64] at argument 1, so the launch
// is scanned without knowing which ran; a predicate output has nothing to scan.
TEST(XlaLaunchWrites, SharedKernelsAgreeAndPredicatesHoldNoNaN) {
  const DumpModule m = attend();
  const std::vector<uint64_t> words{0x7f0000100000, 0x7f0000240000};
  const LaunchWrites w = launch_writes(m, "wrapped_transpose_2", words);
  ASSERT_TRUE(w.refused.empty()) << w.refused;
  EXPECT_EQ(w.instructions.size(), 2u);
  ASSERT_EQ(w.writes.size(), 1u);
  EXPECT_EQ(w.writes[0].arg, 1u);
  EXPECT_EQ(w.writes[0].ptr, 0x7f0000240000u);
  EXPECT_EQ(w.writes[0].shape.dtype, DType::f32);
  EXPECT_EQ(w.writes[0].shape.elements(), 4u * 4 * 32 * 64);
  // Thunks that disagree on how much they write: refused, never one of them guessed (ones that
  // differ only in their dimensions are scanned flat: test_xla_jaxlib011.cpp).
  DumpModule odd = m;
  for (KernelThunk& k : odd.kernels)
    if (k.instruction == "wrapped_transpose") k.arguments[1].shape->dims = {4, 4, 64, 32, 2};
  const LaunchWrites refused = launch_writes(odd, "wrapped_transpose_2", words);
  EXPECT_TRUE(refused.writes.empty());
  EXPECT_NE(refused.refused.find("write or read different arguments"), std::string::npos) << refused.refused;
  EXPECT_EQ(refused.refusal, Refusal::thunks_disagree);

  const DumpModule finite = dump_module("jax_pool-healthy", "module_31768.jit_isfinite");
  const KernelThunk& k = finite.kernels.at(0);
  std::vector<uint64_t> fw;
  for (size_t i = 0; i < k.arguments.size(); ++i) fw.push_back(0x7f0000000000 + (i << 24) + k.arguments[i].offset);
  const LaunchWrites pred = launch_writes(finite, "wrapped_is_finite", fw);
  EXPECT_TRUE(pred.refused.empty()) << pred.refused;
  EXPECT_TRUE(pred.writes.empty()) << "a pred output holds no NaN";
  ASSERT_EQ(pred.no_nan_writes.size(), 1u) << "but its exact slice is known";
  EXPECT_EQ(pred.no_nan_writes[0].shape.element, "pred");
}

// The fusion holding the planted log names the log's own line (jax_pool's step on the H200): the
// user's `jnp.log`, not the GEMM the fusion is named after.
TEST(XlaNanOps, TheFusionHoldingThePlantedLogNamesTheLogsLine) {
  const std::string text = fixture("jax_pool-sick/module_5968.jit_step.sm_9.0a_gpu_after_optimizations.txt");
  const HloSources sources = parse_hlo_sources(text);
  const HloInstructions hlo = parse_hlo_instructions(text);
  std::string holder;
  for (const auto& [fusion, computation] : sources.calls)
    for (const std::string& op : sources.computations.at(computation))
      if (op == "log.0") holder = fusion;
  ASSERT_FALSE(holder.empty());
  const std::vector<NanOp> ops = nan_ops(sources, hlo, holder);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].instruction, "log.0");
  EXPECT_EQ(ops[0].opcode, "log");
  EXPECT_EQ(ops[0].op_name, "jit(step)/log");
  EXPECT_GT(ops[0].line.line, 0u);
  EXPECT_TRUE(ops[0].line.file.ends_with(".py")) << ops[0].line.file;
  EXPECT_EQ(holder, "gemm_fusion_dot.1") << "XLA fused the log into the second GEMM's prologue";
  // The first GEMM and the reductions hold no op that makes NaN from finite values.
  EXPECT_TRUE(nan_ops(sources, hlo, "gemm_fusion_dot").empty());
  EXPECT_TRUE(nan_ops(sources, hlo, "loop_reduce_fusion.1").empty());
  EXPECT_TRUE(nan_ops(sources, hlo, "no_such_fusion").empty());

  // What a finding at each kernel names: the log's line for the GEMM holding it, the fusion's own
  // line for the reduction that only sums what it got.
  const DumpModule m = pool();
  const std::optional<SourceLine> gemm = kernel_source(m, "gemm_fusion_dot_1");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->line, ops[0].line.line);
  EXPECT_EQ(kernel(m, "gemm_fusion_dot.1").source.op, "jit(step)/log");
  const std::optional<SourceLine> reduce = kernel_source(m, "loop_reduce_fusion_1");
  ASSERT_TRUE(reduce);
  EXPECT_EQ(reduce->line, sources.line.at("loop_reduce_fusion.1").line);
  EXPECT_NE(reduce->line, gemm->line);
  EXPECT_FALSE(kernel_source(m, "no_such_kernel"));
}

}  // namespace
}  // namespace nanscope::xla


namespace nanscope::xla {
namespace {

// A mask XLA fused on its own writes its -inf on purpose, as ATen's masked_fill(-inf); the
// attention's softmax (H200 capture) holds the same constant but writes exp(..)/sum: none.
TEST(XlaIntendedInf, AConstantInfinityReachingTheOutputUnchangedIsIntended) {
  const std::string text = R"(HloModule m
%fused_where (p0: f32[4,8], p1: pred[4,8]) -> f32[4,8] {
  %p0 = f32[4,8]{1,0} parameter(0)
  %p1 = pred[4,8]{1,0} parameter(1)
  %c = f32[] constant(-inf)
  %b = f32[4,8]{1,0} broadcast(%c), dimensions={}
  ROOT %s = f32[4,8]{1,0} select(%p1, %p0, %b)
}
%fused_exp (q0: f32[4,8], q1: pred[4,8]) -> f32[4,8] {
  %q0 = f32[4,8]{1,0} parameter(0)
  %q1 = pred[4,8]{1,0} parameter(1)
  %c.1 = f32[] constant(-inf)
  %b.1 = f32[4,8]{1,0} broadcast(%c.1), dimensions={}
  %s.1 = f32[4,8]{1,0} select(%q1, %q0, %b.1)
  ROOT %e = f32[4,8]{1,0} exponential(%s.1)
}
%inner (r0: f32[], r1: pred[4,8], r2: f32[4,8]) -> f32[4,8] {
  %r0 = f32[] parameter(0)
  %r1 = pred[4,8]{1,0} parameter(1)
  %r2 = f32[4,8]{1,0} parameter(2)
  %rb = f32[4,8]{1,0} broadcast(%r0), dimensions={}
  ROOT %rs = f32[4,8]{1,0} select(%r1, %rb, %r2)
}
%fused_nested (t0: pred[4,8], t1: f32[4,8]) -> f32[4,8] {
  %t0 = pred[4,8]{1,0} parameter(0)
  %t1 = f32[4,8]{1,0} parameter(1)
  %inf = f32[] constant(inf)
  ROOT %n = f32[4,8]{1,0} fusion(%inf, %t0, %t1), kind=kLoop, calls=%inner
}
%fused_pred_only (u0: pred[4,8], u1: f32[4,8]) -> f32[4,8] {
  %u0 = pred[4,8]{1,0} parameter(0)
  %u1 = f32[4,8]{1,0} parameter(1)
  ROOT %us = f32[4,8]{1,0} select(%u0, %u1, %u1)
}
ENTRY %main (x: f32[4,8], m: pred[4,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %m = pred[4,8]{1,0} parameter(1)
  %where_fusion = f32[4,8]{1,0} fusion(%x, %m), kind=kLoop, calls=%fused_where
  %exp_fusion = f32[4,8]{1,0} fusion(%x, %m), kind=kLoop, calls=%fused_exp
  %nested_fusion = f32[4,8]{1,0} fusion(%m, %x), kind=kLoop, calls=%fused_nested
  ROOT %pred_fusion = f32[4,8]{1,0} fusion(%m, %x), kind=kLoop, calls=%fused_pred_only
}
)";
  const HloSources sources = parse_hlo_sources(text);
  const HloInstructions hlo = parse_hlo_instructions(text);
  ASSERT_TRUE(hlo.errors.empty()) << hlo.errors.front();
  EXPECT_EQ(intended_inf(sources, hlo, "where_fusion"), decode::kIntendNegInf);
  EXPECT_EQ(intended_inf(sources, hlo, "exp_fusion"), 0) << "through arithmetic: not the constant any more";
  EXPECT_EQ(intended_inf(sources, hlo, "nested_fusion"), decode::kIntendPosInf) << "a nested fusion's parameter";
  EXPECT_EQ(intended_inf(sources, hlo, "pred_fusion"), 0) << "values from outside are their writers'";
  EXPECT_EQ(intended_inf(sources, hlo, "no_such_fusion"), 0);

  const std::string attend_text = fixture(
      "jax_attention-sick/module_3978.jit_attend.sm_9.0a_gpu_after_optimizations.txt");
  EXPECT_EQ(intended_inf(parse_hlo_sources(attend_text), parse_hlo_instructions(attend_text), "triton_softmax.2"), 0)
      << "its -inf mask goes through the softmax's arithmetic";
  // The kernel map keeps it per thunk, and a launch's writes carry it.
  for (const KernelThunk& k : attend().kernels) EXPECT_EQ(k.intended_inf, 0) << k.instruction;
}

}  // namespace
}  // namespace nanscope::xla

// Tests for the dump readers on an XLA while loop (tests/unit/fixtures/xla/gpu/
// jax_scan_rnn-sick-jaxlib0.11, its README): tests/gpu/apps/jax_scan_rnn.py's recurrent network in
// jax.lax.scan, dumped by jaxlib 0.11.2 on the H200 (session 28). Its body's kernels read the
// loop's carried values (the buffer assignment marks them "(phi)"), a dynamic slice run as async
// work (an async-done), and write a multi-output fusion's tuple. Before session 28 each of those
// left the kernel unmapped, so in the body's command buffer only the two GEMMs were scanned and
// the planted 0 / 0 was named at the GEMM after it, origin unknown (state_lost), not at the
// normalisation that made it.
#include <gtest/gtest.h>

#include "xla_dump.hpp"
#include "xla_fixture.hpp"
#include "xla_kernels.hpp"

namespace nanscope::xla {
namespace {

using xla_test::kernel;

constexpr const char* kApp = "jax_scan_rnn-sick-jaxlib0.11";
constexpr const char* kModule = "module_7295.jit_run";

DumpModule scan_rnn(const char* sequence = "thunk_sequence") { return xla_test::dump_module(kApp, kModule, sequence); }

// A one-kernel sequence running the hand-made HLO's fusion "f", mapped with no buffer assignment.
std::vector<KernelThunk> map_fusion_f(const HloInstructions& hlo) {
  ThunkSequence seq = parse_thunk_sequence("001: kKernel [source | sink] f grid: [1, 1, 1] threads: [4, 1, 1]  shared_memory: 0 bytes\n");
  if (seq.thunks.size() != 1) return {};
  seq.thunks[0].annotation = "f";
  return map_kernels(seq, hlo, BufferAssignment{});
}

TEST(XlaLoops, ALoopsValuesMarkedPhiAreRead) {
  const BufferAssignment b = parse_buffer_assignment(
      "allocation 15: size 665376, page 0, preallocated-temp:\n"
      " value: <93 arg_tuple.1{1} (phi) @0> (size=65536,offset=524288): f32[64,256]{1,0}\n"
      " value: <62 triton_softmax.2 @0> (size=65536,offset=589824): f32[64,256]{1,0}\n");
  ASSERT_TRUE(b.errors.empty()) << b.errors.front();
  ASSERT_EQ(b.allocations.size(), 1u);
  ASSERT_EQ(b.allocations[0].values.size(), 2u);
  const Value& carry = b.allocations[0].values[0];
  EXPECT_EQ(carry.instruction, "arg_tuple.1{1}");
  EXPECT_TRUE(carry.phi);
  EXPECT_EQ(carry.index, "@0");
  EXPECT_EQ(carry.offset, 524288u);
  EXPECT_FALSE(b.allocations[0].values[1].phi);
}

TEST(XlaLoops, TheLoopsHeadingsAreNotThunksAndItsThunksAreItsChildren) {
  for (const char* sequence : {"thunk_sequence", "thunk_sequence_after_thunk_passes"}) {
    const DumpModule m = scan_rnn(sequence);
    ASSERT_TRUE(m.errors.empty()) << sequence << ": " << m.errors.front();
    const Thunk* loop = nullptr;
    for (const Thunk& t : m.thunks.thunks)
      if (t.kind == "kWhile") loop = &t;
    ASSERT_NE(loop, nullptr) << sequence;
    const Thunk& softmax = m.thunks.thunks[kernel(m, "triton_softmax.2").thunk];
    ASSERT_GE(softmax.parent, 0) << sequence;
    // The body's command buffer, after the thunk passes, is between the loop and its kernels.
    const Thunk& parent = m.thunks.thunks[static_cast<size_t>(softmax.parent)];
    EXPECT_TRUE(&parent == loop || parent.kind == "kCommandBuffer") << sequence << ": " << parent.kind;
  }
  // A heading is a lower-case word; anything else that is not a thunk is still an error.
  EXPECT_EQ(parse_thunk_sequence("condition:\n  body:\n").errors.size(), 0u);
  EXPECT_EQ(parse_thunk_sequence("Body: 001\n").errors.size(), 1u);
}

TEST(XlaLoops, EveryKernelOfTheLoopIsMapped) {
  const DumpModule m = scan_rnn();
  ASSERT_EQ(m.kernels.size(), 9u);
  for (const KernelThunk& k : m.kernels) EXPECT_TRUE(k.unmapped.empty()) << k.instruction << ": " << k.unmapped;
}

TEST(XlaLoops, TheNormalisationReadsTheCarryAndIsNamedAtItsLine) {
  const DumpModule m = scan_rnn();
  const KernelThunk& k = kernel(m, "triton_softmax.2");
  ASSERT_EQ(k.arguments.size(), 2u);
  const KernelArgument& carry = k.arguments[0];  // h, carried from one step to the next
  EXPECT_EQ(carry.value, "arg_tuple.1{1}");
  EXPECT_TRUE(carry.read);
  EXPECT_FALSE(carry.written);
  EXPECT_EQ(carry.offset, 524288u);
  const KernelArgument& out = k.arguments[1];
  EXPECT_TRUE(out.written);
  EXPECT_EQ(out.offset, 589824u);
  EXPECT_EQ(out.size, 65536u);
  ASSERT_TRUE(out.shape);
  EXPECT_EQ(out.shape->dtype, DType::f32);
  // centred / sqrt(var + eps): the sqrt and the divide are on line 34, the GEMM reading it on 35.
  EXPECT_TRUE(k.source.file.ends_with("jax_scan_rnn.py")) << k.source.file;
  EXPECT_EQ(k.source.line, 34u);
  EXPECT_EQ(k.source.op, "jit(run)/while/body/eval_jaxpr/sqrt");
}

TEST(XlaLoops, AnAsyncDonesValueIsItsComputationsRoot) {
  // x_t @ w_in reads the step's slice of xs, which a dynamic-slice fusion cut as async work:
  // %fusion-done = async-done(%fusion-start), whose computation's ROOT is
  // loop_dynamic_slice_fusion.1 (the buffer assignment's value; the done has none of its own).
  const DumpModule m = scan_rnn();
  const KernelThunk& k = kernel(m, "gemm_fusion_dot_general.3");
  ASSERT_TRUE(k.unmapped.empty()) << k.unmapped;
  ASSERT_EQ(k.arguments.size(), 3u);
  EXPECT_EQ(k.arguments[0].operand, "bitcast.4.0");
  EXPECT_EQ(k.arguments[0].value, "loop_dynamic_slice_fusion.1");
  EXPECT_EQ(k.arguments[0].offset, 655360u);
  EXPECT_EQ(k.arguments[0].shape_text, "f32[64,32]{1,0}");  // as the fusion sees it, through the bitcast
  EXPECT_TRUE(k.arguments[2].written);
  EXPECT_EQ(k.arguments[2].offset, 589824u);
  // An async-done whose start names no computation with a ROOT stays unmapped, with the reason.
  HloInstructions hlo;
  hlo.by_name["done"] = Instruction{"done", "f32[4]{0}", "async-done", {"start"}, {}, false, {}};
  hlo.by_name["start"] = Instruction{"start", "((f32[4]{0}), f32[4]{0}, u32[])", "async-start", {"x"}, {}, false, "gone"};
  hlo.by_name["f"] = Instruction{"f", "f32[4]{0}", "fusion", {"done"}, {}, false, "fused"};
  const std::vector<KernelThunk> mapped = map_fusion_f(hlo);
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_NE(mapped[0].unmapped.find("async-done"), std::string::npos) << mapped[0].unmapped;
}

TEST(XlaLoops, AMultiOutputFusionWritesEachElementOfItsTuple) {
  // tanh(x_t @ w_in + h_norm @ w_rec) and the sum before it: (f32[64,256], f32[64,256]). Element
  // {1} is the slice of its operand gemm_fusion_dot_general.3 (updated in place, one argument);
  // element {0} is the new carry.
  const DumpModule m = scan_rnn();
  const KernelThunk& k = kernel(m, "loop_add_tanh_fusion");
  ASSERT_TRUE(k.unmapped.empty()) << k.unmapped;
  ASSERT_EQ(k.arguments.size(), 3u);
  EXPECT_EQ(k.arguments[0].value, "gemm_fusion_dot_general.3");
  EXPECT_TRUE(k.arguments[0].read);
  EXPECT_TRUE(k.arguments[0].written);
  EXPECT_EQ(k.arguments[1].value, "gemm_fusion_dot");
  EXPECT_FALSE(k.arguments[1].written);
  EXPECT_EQ(k.arguments[2].operand, "loop_add_tanh_fusion#0");
  EXPECT_EQ(k.arguments[2].value, "loop_add_tanh_fusion{0}");
  EXPECT_TRUE(k.arguments[2].written);
  EXPECT_FALSE(k.arguments[2].read);
  EXPECT_EQ(k.arguments[2].offset, 524288u);
  EXPECT_EQ(k.arguments[2].shape_text, "f32[64,256]{1,0}");
  ASSERT_EQ(k.undeduplicated.size(), 4u);  // two operands, two outputs, before de-duplication
  // A nested tuple is not guessed at.
  HloInstructions hlo;
  hlo.by_name["f"] = Instruction{"f", "((f32[4]{0}, f32[4]{0}), f32[4]{0})", "fusion", {}, {}, false, "fused"};
  const std::vector<KernelThunk> mapped = map_fusion_f(hlo);
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_NE(mapped[0].unmapped.find("nested tuple"), std::string::npos) << mapped[0].unmapped;
}

}  // namespace
}  // namespace nanscope::xla

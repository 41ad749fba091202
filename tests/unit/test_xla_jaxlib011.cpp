// Tests for the dump readers on what jaxlib 0.11.2 with CUDA wrote on an H200 (session 24) for
// bench/jax_bench.py's steps (tests/unit/fixtures/xla/gpu/jax_bench_*-jaxlib0.11, its README):
// steps whose matmuls XLA gives to cuBLASLt. Beside a kCublasLtMatmul thunk the thunk sequence
// pads every kind to the widest, and a fusion reads cuBLASLt's result as a tuple element
// ("%cublas-lt-matmul.1#0"), which the buffer assignment calls "cublas-lt-matmul.1{0}".
#include <gtest/gtest.h>

#include "xla_fixture.hpp"
#include "xla_kernels.hpp"

namespace nanscope::xla {
namespace {

using xla_test::kernel;
using Files = xla_test::ModuleFiles;

Files mlp_files() { return xla_test::module_files("jax_bench_mlp-sick-jaxlib0.11", "module_5972.jit_step"); }
DumpModule read(const std::string& name, const Files& f) { return xla_test::read_module(name, f); }
DumpModule mlp() { return read("module_5972.jit_step", mlp_files()); }

TEST(XlaJaxlib011, KindsPaddedToTheWidestKindAreRead) {
  const DumpModule m = mlp();
  ASSERT_TRUE(m.errors.empty()) << m.errors.front();
  ASSERT_EQ(m.thunks.thunks.size(), 4u);
  EXPECT_EQ(m.thunks.thunks[0].kind, "kCublasLtMatmul");
  EXPECT_FALSE(m.thunks.thunks[0].kernel());
  const Thunk& log = m.thunks.thunks[1];  // "002: kCustomKernel   [prev=001 (1) | next=003 (1)] ..."
  EXPECT_EQ(log.kind, "kCustomKernel");
  EXPECT_EQ(log.name, "gemm_fusion_dot_general_2");
  EXPECT_EQ(log.annotation, "gemm_fusion_dot_general.2");  // the metadata's kind agrees once trimmed
  EXPECT_EQ(log.grid, (std::array<uint32_t, 3>{8192, 1, 1}));
  EXPECT_EQ(m.kernel_names(), (std::set<std::string>{"gemm_fusion_dot_general_2", "loop_reduce_fusion"}));
  // A kind that is only spaces is no kind.
  EXPECT_EQ(parse_thunk_sequence("001:  k [source | sink] x\n").errors.size(), 1u);
}

TEST(XlaJaxlib011, AFusionReadsCublasLtsResultAsATupleElement) {
  const DumpModule m = mlp();
  const KernelThunk& log = kernel(m, "gemm_fusion_dot_general.2");
  ASSERT_TRUE(log.unmapped.empty()) << log.unmapped;
  ASSERT_EQ(log.arguments.size(), 3u);
  const KernelArgument& product = log.arguments[0];  // relu(x @ w1), cuBLASLt's epilogue
  EXPECT_EQ(product.operand, "cublas-lt-matmul.1#0");
  EXPECT_EQ(product.value, "cublas-lt-matmul.1{0}");
  EXPECT_TRUE(product.read);
  EXPECT_FALSE(product.written);
  EXPECT_EQ(product.shape_text, "f32[1024,4096]{1,0}");
  EXPECT_EQ(product.allocation, 8u);
  EXPECT_EQ(product.offset, 50331648u);
  EXPECT_EQ(product.size, 16777216u);
  EXPECT_EQ(log.arguments[1].operand, "shift.1");
  const KernelArgument& out = log.arguments[2];
  EXPECT_TRUE(out.written);
  EXPECT_EQ(out.allocation, 8u);
  EXPECT_EQ(out.offset, 33554432u);
  // The planted log's line, from the fusion's log op.
  EXPECT_TRUE(log.source.file.ends_with("jax_bench.py")) << log.source.file;
  EXPECT_EQ(log.source.op, "jit(step)/log");
  // The Triton reduce after the second matmul reads its tuple element too.
  const KernelThunk& reduce = kernel(m, "loop_reduce_fusion");
  ASSERT_TRUE(reduce.unmapped.empty()) << reduce.unmapped;
  EXPECT_EQ(reduce.arguments[0].shape_text, "f32[2,1024,1024]{2,1,0}");
  EXPECT_EQ(reduce.arguments[0].size, 8388608u);
}

TEST(XlaJaxlib011, TheLogFusionsLaunchWritesItsOutputSlice) {
  const DumpModule m = mlp();
  const uint64_t temp = 0x7f0000000000, shift = 0x7f0020000000;
  const LaunchShape shape{{8192, 1, 1}, {128, 1, 1}};
  const DumpModule* one[] = {&m};
  const std::vector<uint64_t> words{temp + 50331648, shift, temp + 33554432};
  const LaunchWrites w = launch_writes(one, "gemm_fusion_dot_general_2", words, &shape);
  ASSERT_EQ(w.refusal, Refusal::none) << w.refused;
  ASSERT_EQ(w.writes.size(), 1u);
  EXPECT_EQ(w.writes[0].ptr, temp + 33554432);
  EXPECT_EQ(w.writes[0].shape.dims, (std::vector<int64_t>{1024, 4096}));
  ASSERT_EQ(w.reads.size(), 2u);
  EXPECT_EQ(w.reads[0].ptr, temp + 50331648);
  ASSERT_NE(w.source, nullptr);
  EXPECT_TRUE(w.source_op_agreed);
  EXPECT_EQ(w.source->op, "jit(step)/log");
  // The same fusion in a module of another jitted function: one line, two ops. The line stays,
  // the op does not hold for the launch.
  DumpModule other = m;
  other.name = "module_5973.jit_other";
  for (KernelThunk& k : other.kernels) k.source.op = "jit(other)/log";
  const DumpModule* two[] = {&m, &other};
  const LaunchWrites both = launch_writes(two, "gemm_fusion_dot_general_2", words, &shape);
  ASSERT_EQ(both.refusal, Refusal::none) << both.refused;
  ASSERT_NE(both.source, nullptr);
  EXPECT_EQ(both.source->line, w.source->line);
  EXPECT_FALSE(both.source_op_agreed);
  const std::optional<SourceLine> named = kernel_source(std::span<const DumpModule* const>(two), "gemm_fusion_dot_general_2");
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->line, w.source->line);
  EXPECT_EQ(named->op, "") << "the kernel's line: both modules', their ops differ";
  EXPECT_EQ(kernel_source(m, "gemm_fusion_dot_general_2")->op, "jit(step)/log");
  // The output slice where cuBLASLt's result lies: not this thunk (their slices overlap).
  const std::vector<uint64_t> swapped{temp + 33554432, shift, temp + 50331648};
  EXPECT_NE(launch_writes(one, "gemm_fusion_dot_general_2", swapped, &shape).refusal, Refusal::none);
}

TEST(XlaJaxlib011, ATupleElementWithNoValueIsAReason) {
  Files f = mlp_files();
  const size_t at = f.hlo.find("fusion(%cublas-lt-matmul.1#0");
  ASSERT_NE(at, std::string::npos);
  f.hlo.replace(at, 28, "fusion(%cublas-lt-matmul.1#5");
  const DumpModule m = read("module_5972.jit_step", f);
  const KernelThunk& log = kernel(m, "gemm_fusion_dot_general.2");
  EXPECT_TRUE(log.arguments.empty());
  EXPECT_NE(log.unmapped.find("cublas-lt-matmul.1#5"), std::string::npos) << log.unmapped;
  // An operand in neither the HLO nor the assignment: named as before.
  Files g = mlp_files();
  const size_t s = g.hlo.find("fusion(%cublas-lt-matmul.1#0, %shift.1)");
  g.hlo.replace(s, 39, "fusion(%cublas-lt-matmul.1#0, %nowhere)");
  EXPECT_EQ(kernel(read("m", g), "gemm_fusion_dot_general.2").unmapped, "operand nowhere is not in the HLO");
}

// The transformer step: four layers, 48 kernel thunks and 16 cuBLASLt ones, all in one command
// buffer after XLA's thunk passes; every kernel thunk is mapped, and all but the attention's
// transposes (whose HLO names no stack frame) have a line.
TEST(XlaJaxlib011, EveryKernelOfTheTransformerStepIsMapped) {
  const DumpModule m = read("module_10614.jit_step", xla_test::module_files("jax_bench_transformer-sick-jaxlib0.11", "module_10614.jit_step",
                                                                            "thunk_sequence_after_thunk_passes"));
  ASSERT_TRUE(m.errors.empty()) << m.errors.front();
  EXPECT_EQ(m.thunks.thunks.front().kind, "kCommandBuffer");
  ASSERT_EQ(m.kernels.size(), 48u);
  size_t lines = 0;
  for (const KernelThunk& k : m.kernels) {
    EXPECT_TRUE(k.unmapped.empty()) << k.instruction << ": " << k.unmapped;
    EXPECT_EQ(m.thunks.thunks[k.thunk].parent, 0) << k.instruction;
    if (k.source.line) ++lines;
    else EXPECT_TRUE(k.instruction.starts_with("wrapped_transpose")) << k.instruction;  // its HLO carries no frame
  }
  EXPECT_EQ(lines, 44u);
  // The planted log: its fusion reads the gelu matmul's cuBLASLt result.
  const KernelThunk& log = kernel(m, "loop_multiply_fusion.3");
  EXPECT_NE(log.arguments[0].value.find("{0}"), std::string::npos) << log.arguments[0].value;
}

// The transformer's init multiplies each weight by 0.02 in a jit_multiply compiled once per shape:
// f32[512,2048] and f32[2048,512] run the same kernel at the same grid. Thunks that agree on every
// argument's dtype and element count are scanned as a flat run of elements; ones whose element
// counts differ stay refused.
TEST(XlaJaxlib011, ThunksDifferingOnlyInDimensionsAreScannedFlat) {
  const DumpModule m = mlp();
  DumpModule transposed = m;
  transposed.name = "module_9999.jit_step";
  for (KernelThunk& k : transposed.kernels)
    for (KernelArgument& a : k.arguments)
      if (k.kernel == "gemm_fusion_dot_general_2" && a.shape && a.shape->dims.size() == 2)
        std::swap(a.shape->dims[0], a.shape->dims[1]);
  const uint64_t temp = 0x7f0000000000, shift = 0x7f0020000000;
  const LaunchShape shape{{8192, 1, 1}, {128, 1, 1}};
  const std::vector<uint64_t> words{temp + 50331648, shift, temp + 33554432};
  const DumpModule* both[] = {&m, &transposed};
  const LaunchWrites flat = launch_writes(both, "gemm_fusion_dot_general_2", words, &shape);
  ASSERT_EQ(flat.refusal, Refusal::none) << flat.refused;
  EXPECT_TRUE(flat.flattened);
  ASSERT_EQ(flat.writes.size(), 1u);
  EXPECT_EQ(flat.writes[0].shape.dims, (std::vector<int64_t>{1024 * 4096}));
  EXPECT_EQ(flat.writes[0].bytes, 16777216u);
  EXPECT_EQ(flat.reads[0].shape.dims, (std::vector<int64_t>{1024 * 4096}));
  const DumpModule* one[] = {&m};
  EXPECT_FALSE(launch_writes(one, "gemm_fusion_dot_general_2", words, &shape).flattened);
  DumpModule wider = m;
  for (KernelThunk& k : wider.kernels)
    for (KernelArgument& a : k.arguments)
      if (k.kernel == "gemm_fusion_dot_general_2" && a.written) a.shape->dims.back() *= 2;
  wider.name = "module_5973.jit_step";
  const DumpModule* differ[] = {&m, &wider};
  const LaunchWrites refused = launch_writes(differ, "gemm_fusion_dot_general_2", words, &shape);
  EXPECT_EQ(refused.refusal, Refusal::thunks_disagree);
  // Which modules, which parameter, both shapes: the two instructions alone have one name.
  EXPECT_EQ(refused.refused,
            "the launch fits 2 kernel thunks that write or read different arguments (module_5972.jit_step's "
            "gemm_fusion_dot_general.2 writes f32[1024,4096] as parameter 2, module_5973.jit_step's "
            "gemm_fusion_dot_general.2 f32[1024,8192] as parameter 2)");
}

}  // namespace
}  // namespace nanscope::xla

// Tests for src/xla_dump.cpp and src/xla_hlo.cpp on dumps jaxlib 0.10.2 wrote for a jitted MLP
// with a planted log of a negative number (tests/unit/fixtures/xla), and on hand-made odd lines.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "xla_dump.hpp"

namespace nanscope::xla {
namespace {

std::string fixture(const char* name) {
  std::ifstream in(std::string(NANSCOPE_XLA_FIXTURES) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(XlaShape, ElementTypesAndDimensions) {
  const auto s = parse_shape("f32[4,8]{1,0}");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->dtype, DType::f32);
  EXPECT_EQ(s->dims, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(s->elements(), 32u);
  EXPECT_EQ(parse_shape("bf16[2,<=16]")->dims, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(parse_shape("f8e4m3fn[3]")->dtype, DType::f8e4m3);
  EXPECT_EQ(parse_shape("f32[]")->elements(), 1u);
  EXPECT_EQ(parse_shape("s32[5]")->dtype, DType::none);  // not scanned, but a shape
  EXPECT_FALSE(parse_shape("(f32[4], s32[])"));           // a tuple
  EXPECT_FALSE(parse_shape("f32[4,x]"));
  EXPECT_FALSE(parse_shape("token[]x"));
}

TEST(XlaBufferAssignment, TheMlpsAllocationsAndTheirRoles) {
  const BufferAssignment b = parse_buffer_assignment(fixture("jit_mlp.cpu_after_optimizations-buffer-assignment.txt"));
  EXPECT_TRUE(b.errors.empty());
  ASSERT_EQ(b.allocations.size(), 8u);
  EXPECT_EQ(b.allocations[0].parameter, 0);
  EXPECT_EQ(b.allocations[0].size, 2048u);
  EXPECT_EQ(b.allocations[2].parameter, 2);
  const Allocation& out = b.allocations[3];
  EXPECT_TRUE(out.output);
  EXPECT_TRUE(out.maybe_live_out);
  EXPECT_FALSE(out.temp());
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_EQ(out.values[0].instruction, "log_reduce_fusion");
  EXPECT_EQ(out.values[0].shape->elements(), 4u);
  EXPECT_TRUE(b.allocations[4].thread_local_);
  const Allocation& temp = b.allocations[7];
  EXPECT_TRUE(temp.preallocated_temp);
  EXPECT_TRUE(temp.temp());
  ASSERT_EQ(temp.values.size(), 3u);
  EXPECT_EQ(temp.values[2].instruction, "ynn_fusion");
  EXPECT_EQ(temp.values[2].offset, 512u);  // f32[4,8] at byte 512 of the temp allocation
  EXPECT_EQ(temp.values[2].size, 128u);
  EXPECT_EQ(b.holding("wrapped_tanh"), &b.allocations[7]);
  EXPECT_EQ(b.holding("nothing"), nullptr);
}

TEST(XlaBufferAssignment, OddLinesAreNamedNotGuessed) {
  const BufferAssignment b = parse_buffer_assignment(
      "BufferAssignment:\n"
      "allocation 0: size 64, parameter 0, shape |(f32[4], f32[4,2])| at ShapeIndex {}:\n"
      " value: <3 p.1 @{1}> (size=32,offset=32): f32[4,2]{1,0}\n"
      "allocation x: size 8:\n"
      " value: <broken>\n"
      "allocation 1: size 4, constant:\n");
  ASSERT_EQ(b.allocations.size(), 2u);
  EXPECT_EQ(b.allocations[0].parameter, 0);  // the commas inside |...| are not fields
  EXPECT_EQ(b.allocations[0].values[0].index, "@{1}");
  EXPECT_TRUE(b.allocations[1].constant);
  EXPECT_EQ(b.errors.size(), 2u);
  EXPECT_NE(b.errors[0].find("line 4"), std::string::npos);
}

TEST(XlaHloSources, EachInstructionsLineFromTheStackFrames) {
  const HloSources h = parse_hlo_sources(fixture("jit_mlp.cpu_after_optimizations.txt"));
  EXPECT_TRUE(h.errors.empty());
  // The fusion holding the planted log: named after the reduction (line 5), and its log op at line 4.
  EXPECT_EQ(h.calls.at("log_reduce_fusion"), "fused_computation.2");
  EXPECT_EQ(h.op_name.at("log_reduce_fusion"), "jit(mlp)/reduce_sum");
  EXPECT_EQ(h.line.at("log_reduce_fusion").line, 5u);
  const auto& ops = h.computations.at("fused_computation.2");
  EXPECT_NE(std::find(ops.begin(), ops.end(), "log.0"), ops.end());
  const SourceLine& log = h.line.at("log.0");
  EXPECT_EQ(log.line, 4u);
  EXPECT_EQ(log.function, "mlp");
  EXPECT_TRUE(log.file.ends_with("jax_mlp.py"));
  EXPECT_EQ(h.op_name.at("log.0"), "jit(mlp)/log");
  EXPECT_EQ(h.line.at("wrapped_tanh").line, 3u);
  EXPECT_EQ(h.computations.at("main.2").size(), 7u);  // the entry computation's instructions
}

TEST(XlaHloSources, TheOlderMetadataCarriesItsOwnLine) {
  const HloSources h = parse_hlo_sources(
      "ENTRY %main (p: f32[4]) -> f32[4] {\n"
      "  %p = f32[4]{0} parameter(0)\n"
      "  ROOT %log.1 = f32[4]{0} log(%p), metadata={op_name=\"jit(f)/log\" source_file=\"/u/app.py\" source_line=12}\n"
      "}\n"
      "FileNames\n"
      "x \"broken\"\n");
  EXPECT_EQ(h.line.at("log.1").file, "/u/app.py");
  EXPECT_EQ(h.line.at("log.1").line, 12u);
  EXPECT_EQ(h.errors.size(), 1u);
}

}  // namespace
}  // namespace nanscope::xla

// Tests for src/xla_dump_dir.cpp (which files make a module, reading the complete ones) and
// src/decode/xla.cpp (one launch's writes and reads), on the dumps jaxlib 0.10.2 with CUDA wrote
// on an H200 (tests/unit/fixtures/xla/gpu).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "decode/xla.hpp"
#include "xla_dump_dir.hpp"

namespace nanscope::xla {
namespace {

const std::string kGpu = std::string(NANSCOPE_XLA_FIXTURES) + "/gpu/";

TEST(XlaDumpFiles, FourFilesMakeAModuleAndTheThunkPassesPlanWins) {
  const std::vector<std::string> names{
      "module_0007.jit_f.thunk_sequence_after_thunk_passes.txt",
      "module_0007.jit_f.thunk_sequence.txt",
      "module_0007.jit_f.thunk_metadata.txt",
      "module_0007.jit_f.sm_9.0a_gpu_after_optimizations.txt",
      "module_0007.jit_f.sm_9.0a_gpu_after_optimizations-buffer-assignment.txt",
      "module_0007.jit_f.sm_9.0a_gpu_after_optimizations-memory-usage-report.txt",
      "module_0007.jit_f.before_optimizations.txt",
      "module_0008.jit_g.thunk_sequence.txt",  // still being written: no HLO yet
      "module_0008.jit_g.thunk_metadata.txt",
      "autotune_results.pbtxt",
  };
  const std::vector<DumpFiles> g = group_dump_files(names);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].module, "module_0007.jit_f");
  EXPECT_TRUE(g[0].complete());
  EXPECT_EQ(g[0].thunk_sequence, "module_0007.jit_f.thunk_sequence_after_thunk_passes.txt");
  EXPECT_EQ(g[0].hlo, "module_0007.jit_f.sm_9.0a_gpu_after_optimizations.txt");
  EXPECT_EQ(g[0].buffer_assignment, "module_0007.jit_f.sm_9.0a_gpu_after_optimizations-buffer-assignment.txt");
  EXPECT_EQ(g[1].module, "module_0008.jit_g");
  EXPECT_FALSE(g[1].complete());
}

TEST(XlaDumpDir, ReadsTheCompleteModulesOnce) {
  const DumpDirRead all = read_dump_dir(kGpu + "jax_pool-sick", {}, 1 << 24);
  EXPECT_TRUE(all.errors.empty());
  ASSERT_EQ(all.modules.size(), 2u);
  EXPECT_EQ(all.modules[0].name, "module_0000.jit_stage");
  EXPECT_EQ(all.modules[1].name, "module_5968.jit_step");
  EXPECT_EQ(all.modules[1].kernels.size(), 4u);
  EXPECT_TRUE(all.compiling_began);
  EXPECT_EQ(all.optimizing, "");  // both finished
  const DumpDirRead later = read_dump_dir(kGpu + "jax_pool-sick", {"module_5968.jit_step", "module_0000.jit_stage"}, 1 << 24);
  EXPECT_TRUE(later.modules.empty());
  EXPECT_TRUE(later.compiling_began);
}

// The launcher makes the directory for any program: empty, it says nothing of XLA (a PyTorch
// program's untyped kernels keep their reasons and are not looked up again).
TEST(XlaDumpDir, AnEmptyDirectoryIsNoCompile) {
  char tmpl[] = "/tmp/nanscope-xla-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const DumpDirRead empty = read_dump_dir(tmpl, {}, 1 << 24);
  EXPECT_TRUE(empty.errors.empty());
  EXPECT_FALSE(empty.compiling_began);
  rmdir(tmpl);
  EXPECT_FALSE(read_dump_dir(kGpu + "no-such-dump", {}, 1 << 24).compiling_began);
}

TEST(XlaDumpDir, WhatCannotBeReadIsNamed) {
  // Not made yet: XLA makes it at its first dump; nothing to read, nothing wrong.
  const DumpDirRead none = read_dump_dir(kGpu + "no-such-dump", {}, 1 << 24);
  EXPECT_TRUE(none.errors.empty());
  EXPECT_TRUE(none.modules.empty());
  // A path that is no directory is named.
  const std::string file = kGpu + "jax_pool-sick/module_5968.jit_step.thunk_metadata.txt";
  const DumpDirRead not_dir = read_dump_dir(file, {}, 1 << 24);
  ASSERT_EQ(not_dir.errors.size(), 1u);
  EXPECT_NE(not_dir.errors[0].find("thunk_metadata.txt"), std::string::npos) << not_dir.errors[0];
  const DumpDirRead big = read_dump_dir(kGpu + "jax_pool-sick", {}, 64);
  EXPECT_TRUE(big.modules.empty());
  ASSERT_EQ(big.errors.size(), 2u);
  EXPECT_NE(big.errors[0].find("over the 64 read for one dump file"), std::string::npos) << big.errors[0];
}

// One launch of jax_pool's GEMM as the engine decodes it: the output slice with its HLO shape,
// its operands as reads; a layout that is not all pointers, or words that fit no thunk, are
// mismatches with their reason.
TEST(XlaDecode, TheGemmLaunchWritesItsSliceAndReadsItsOperands) {
  const DumpDirRead dir = read_dump_dir(kGpu + "jax_pool-sick", {}, 1 << 24);
  ASSERT_EQ(dir.modules.size(), 2u);
  const DumpModule& m = dir.modules[1];
  const std::vector<std::shared_ptr<const DumpModule>> both = {std::make_shared<const DumpModule>(dir.modules[0]),
                                                               std::make_shared<const DumpModule>(m)};
  const uint64_t temp = 0x7f0000000000, w2 = 0x7f0010000000;
  uint64_t words[3] = {temp + 4194304, w2, temp};
  const char* params[3] = {reinterpret_cast<const char*>(&words[0]), reinterpret_cast<const char*>(&words[1]),
                           reinterpret_cast<const char*>(&words[2])};
  decode::Layout layout{{0, 8}, {8, 8}, {16, 8}};
  decode::LaunchView view;
  view.params = params;
  view.count = 3;
  view.grid[0] = 256;  // the thunk sequence's "grid: [256, 1, 1] threads: [128, 1, 1]"
  view.block[0] = 128;
  const decode::Decoded d = decode::decode_xla(both, "gemm_fusion_dot_1", layout, view);
  ASSERT_EQ(d.status, decode::Status::decoded) << d.reason;
  ASSERT_NE(d.source, nullptr);  // the launch's own line: the planted log's, from the HLO metadata
  EXPECT_GT(d.source->line, 0u);
  const LaunchWrites expect = launch_writes(m, "gemm_fusion_dot_1", std::vector<uint64_t>(words, words + 3));
  ASSERT_EQ(d.write_count, expect.writes.size());
  ASSERT_GE(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].ptr, temp);
  EXPECT_EQ(d.writes[0].dtype, DType::f32);
  EXPECT_EQ(d.writes[0].elements, expect.writes[0].shape.elements());
  EXPECT_EQ(d.writes[0].span_bytes, expect.writes[0].bytes) << "exactly the slice, never the pool";
  EXPECT_FALSE(d.writes[0].extent_from_block);
  EXPECT_EQ(d.read_count, expect.reads.size());
  EXPECT_EQ(d.reads[0], words[expect.reads[0].arg]);

  layout[1].second = 4;
  EXPECT_EQ(decode::decode_xla(both, "gemm_fusion_dot_1", layout, view).reason, "xla: a parameter is not an 8-byte pointer");
  layout[1].second = 8;
  view.block[0] = 64;  // another launch shape: not that thunk (an autotuner's candidate, say)
  EXPECT_EQ(decode::decode_xla(both, "gemm_fusion_dot_1", layout, view).status, decode::Status::layout_mismatch);
  view.block[0] = 128;
  words[0] += 256;
  const decode::Decoded moved = decode::decode_xla(both, "gemm_fusion_dot_1", layout, view);
  EXPECT_EQ(moved.status, decode::Status::layout_mismatch);
  EXPECT_EQ(moved.reason, "xla: no kernel thunk of its dump modules takes these parameter words, grid and block");
  // The refusal in full, for the kernel's one not_inspected line: where it looked and what it had.
  EXPECT_EQ(decode::xla_refusal(both, "gemm_fusion_dot_1", layout, view),
            "no kernel thunk of 2 dump modules named gemm_fusion_dot_1 takes these 3 parameter words at grid "
            "[256, 1, 1] block [128, 1, 1]");
  layout[1].second = 4;
  EXPECT_EQ(decode::xla_refusal(both, "gemm_fusion_dot_1", layout, view),
            "xla: a parameter is not an 8-byte pointer (parameter 1 is 4 bytes; the 3 parameters' sizes: 8, 4, 8)");
  EXPECT_EQ(decode::decode_xla({}, "gemm_fusion_dot_1", layout, view).status, decode::Status::layout_mismatch);
}

// XLA autotunes between a module's before_optimizations file and its after_optimizations one.
TEST(XlaCompileWindow, TheModuleBeingOptimizedIsTheNewestUnfinishedOne) {
  EXPECT_EQ(module_being_optimized({}), "");
  EXPECT_EQ(module_being_optimized({"module_0010.jit_f.before_optimizations.txt", "module_0010.jit_f.config.pbtxt"}),
            "module_0010.jit_f");
  EXPECT_EQ(module_being_optimized({"module_0010.jit_f.before_optimizations.txt",
                                    "module_0010.jit_f.sm_9.0a_gpu_after_optimizations.txt"}),
            "");
  // The CPU backend's pipeline ends as well (jaxlib 0.10.2 on this machine's CPU wrote these names).
  EXPECT_EQ(module_being_optimized({"module_0004.jit__lambda.before_optimizations.txt",
                                    "module_0004.jit__lambda.cpu_after_optimizations.txt"}),
            "");
  // A compile that never finished (it failed) is closed by a newer module that finished.
  const std::vector<std::string> failed{"module_0010.jit_f.before_optimizations.txt",
                                        "module_0012.jit_g.before_optimizations.txt",
                                        "module_0012.jit_g.sm_9.0a_gpu_after_optimizations.txt"};
  EXPECT_EQ(module_being_optimized(failed), "");
  // Two compiles at once: the newest. Other names and unnumbered ones are no module.
  EXPECT_EQ(module_being_optimized({"module_0010.jit_f.before_optimizations.txt", "module_0011.jit_g.before_optimizations.txt",
                                    "autotune_results.pbtxt", "module_x.before_optimizations.txt", "module_0099"}),
            "module_0011.jit_g");
}

// The transformer step's run under nanscope as it happened: each dump file at its modification
// time, and the first launch of each kernel whose CUmodule no dump module held. Every such launch
// made before jit_step's kernels ran (its thunk_sequence written) was made while XLA optimized a
// module: the autotuner's candidates. The 8 after it are jit_step's own kernels, which the
// session's tree could not match (the padded kinds), and are outside every window.
TEST(XlaCompileWindow, TheTransformerRunsAutotuningLaunchesFallInsideItsWindows) {
  std::ifstream in(kGpu + "jax_bench_transformer-sick-jaxlib0.11/timeline.txt");
  ASSERT_TRUE(in);
  std::vector<std::string> files;
  std::map<std::string, int> autotuning, outside;
  uint64_t step_ready = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    uint64_t ns = 0;
    std::string what, name;
    row >> ns >> what >> name;
    if (what == "file") {
      files.push_back(name);
      if (name == "module_10614.jit_step.thunk_sequence.txt") step_ready = ns;
      continue;
    }
    const std::string module = module_being_optimized(files);
    ++(module.empty() ? outside : autotuning)[module.empty() ? (ns > step_ready && step_ready ? "after" : "before") : module];
  }
  EXPECT_EQ(autotuning, (std::map<std::string, int>{{"module_10614.jit_step", 14}, {"module_127061.jit__reduce_all", 1}}));
  EXPECT_EQ(outside, (std::map<std::string, int>{{"after", 8}}));
}

}  // namespace
}  // namespace nanscope::xla

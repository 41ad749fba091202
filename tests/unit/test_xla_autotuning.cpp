// XLA's autotuning through libraries, per thread (src/xla_autotuning.hpp), on the sequence a JAX
// step's first call makes: XLA optimizes the module (its autotuner fills buffers and runs cuBLASLt
// candidates), then the step runs its own GEMMs on the same thread.
#include "xla_autotuning.hpp"

#include <gtest/gtest.h>

namespace nanscope::xla {
namespace {

TEST(XlaAutotuningThread, CandidatesWhileTheModuleIsOptimizedThenTheProgramsCalls) {
  AutotuningThread t;
  EXPECT_FALSE(t.may_be_autotuning());
  EXPECT_FALSE(t.call_is_autotuning("module_5972.jit_step"));  // no autotuner kernel yet: the program's
  t.autotuner_launched("module_5972.jit_step");                // RepeatBufferKernelImpl fills a buffer
  EXPECT_TRUE(t.may_be_autotuning());
  EXPECT_TRUE(t.call_is_autotuning("module_5972.jit_step"));   // a cuBLASLt candidate
  EXPECT_TRUE(t.call_is_autotuning("module_5972.jit_step"));
  EXPECT_FALSE(t.call_is_autotuning(""));  // optimized: the step's own GEMM
  EXPECT_FALSE(t.may_be_autotuning());     // and no lookup for the calls after it
  EXPECT_FALSE(t.call_is_autotuning("module_5972.jit_step"));
}

TEST(XlaAutotuningThread, AnotherModulesOptimizationIsNotThisOnes) {
  AutotuningThread t;
  t.autotuner_launched("module_0001.jit_a");
  // Module a was optimized, module b is now, and this thread launched no autotuner kernel for it:
  // its call is the program's (an executable of a running on this thread meanwhile).
  EXPECT_FALSE(t.call_is_autotuning("module_0002.jit_b"));
  t.autotuner_launched("module_0002.jit_b");
  EXPECT_TRUE(t.call_is_autotuning("module_0002.jit_b"));
}

TEST(XlaAutotuningThread, AnAutotunerKernelOutsideAnyOptimizationMarksNothing) {
  AutotuningThread t;
  t.autotuner_launched("");  // a redzone check with no module being optimized (no dumps read yet)
  EXPECT_FALSE(t.may_be_autotuning());
  EXPECT_FALSE(t.call_is_autotuning(""));
}

}  // namespace
}  // namespace nanscope::xla

// Tests for hooks/python_frames.cpp's key_for: a line known without a frame walk (an XLA
// kernel's, from its HLO metadata) is a key like a walked one, and resolve() gives it back.
#include <gtest/gtest.h>

#include "python_frames.hpp"

namespace nanscope {
namespace {

TEST(PythonFramesKeyFor, AKnownLineResolvesAsItWasGiven) {
  PythonFrames frames(true);
  const uint64_t log_line = frames.key_for({"/app/jax_mlp.py", 4, "step"});
  const uint64_t dot_line = frames.key_for({"/app/jax_mlp.py", 5, "step"});
  ASSERT_NE(log_line, 0u);
  EXPECT_NE(log_line, dot_line);
  EXPECT_EQ(log_line >> 32, dot_line >> 32) << "one site per file and function";
  const std::optional<PythonLine> got = frames.resolve(log_line);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->file, "/app/jax_mlp.py");
  EXPECT_EQ(got->line, 4u);
  EXPECT_EQ(got->function, "step");
  EXPECT_NE(frames.key_for({"/app/other.py", 4, "step"}) >> 32, log_line >> 32);
  EXPECT_FALSE(frames.resolve(0));
}

}  // namespace
}  // namespace nanscope

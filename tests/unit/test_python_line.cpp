// Tests for src/python_line.cpp: which frames are library plumbing, and the UTF-8 text of the
// character kinds CPython's compact strings store.
#include <gtest/gtest.h>

#include <cstdint>

#include "python_line.hpp"

namespace nanscope {
namespace {

TEST(PythonLine, LibraryFramesAreSkippedWhereverTheyAreInstalled) {
  for (const char* f : {"/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
                        "/home/u/src/pytorch/torch/_dynamo/eval_frame.py",  // an editable install
                        "/usr/lib/python3/dist-packages/triton/runtime/jit.py",
                        "/opt/venv/lib/python3.12/site-packages/functorch/_src/vmap.py",
                        "/opt/venv/lib/python3.12/site-packages/nanscope/__init__.py",
                        "/work/nanscope/python/nanscope/__init__.py", "<frozen importlib._bootstrap>",
                        "<frozen runpy>", "/usr/lib/python3.11/runpy.py", "/usr/lib/python3.11/importlib/__init__.py",
                        "C:\\Python312\\Lib\\site-packages\\torch\\nn\\functional.py",
                        "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/linear.py"})
    EXPECT_TRUE(skipped_frame(f)) << f;
}

TEST(PythonLine, TheUsersFramesAreKept) {
  for (const char* f : {"/opt/venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py",
                        "/opt/venv/lib/python3.12/site-packages/transformers/pytorch_utils.py",
                        "/home/u/nanscope/tests/gpu/apps/cuda_ext_params.py",  // a checkout named nanscope
                        "/home/u/torchvision_app/train.py", "/home/u/my_torch/model.py", "torch_model.py",
                        "<string>", "<stdin>", "/usr/lib/python3.11/threading.py",
                        "/tmp/torchinductor_u/ab/cabc123.py",  // generated, but a last resort (below)
                        // A virtualenv under a directory named torch (the H200's /opt/torch/.venv).
                        "/opt/torch/.venv/lib/python3.12/site-packages/transformers/pytorch_utils.py"})
    EXPECT_FALSE(skipped_frame(f)) << f;
}

// Under torch.compile the innermost frames are Triton's launcher ("<string>") and Inductor's output
// code: passed over for the model's frame, which Dynamo runs with the model's file and lines.
TEST(PythonLine, GeneratedCodeIsPassedOver) {
  for (const char* f : {"<string>", "<eval_with_key>.3", "/tmp/torchinductor_root/ab/cabc123.py",
                        "/tmp/torchinductor_u/triton/0/x/triton_poi_fused_0.py"})
    EXPECT_TRUE(generated_frame(f)) << f;
  for (const char* f : {"<stdin>", "/home/u/model.py", "/home/u/my_torchinductor_notes/x.py", "torchinductor_x.py",
                        "/opt/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py"})
    EXPECT_FALSE(generated_frame(f)) << f;
}

TEST(PythonLine, CompactStringKindsBecomeUtf8) {
  std::string out = "x";
  const unsigned char latin1[] = {'m', 0xe8, 'l'};
  ASSERT_TRUE(append_utf8(latin1, 3, 1, out));
  EXPECT_EQ(out, "xm\xc3\xa8l");
  const uint16_t ucs2[] = {0x6a21, 0x578b};  // 模型
  out.clear();
  ASSERT_TRUE(append_utf8(ucs2, 2, 2, out));
  EXPECT_EQ(out, "\xe6\xa8\xa1\xe5\x9e\x8b");
  const uint32_t ucs4[] = {0x1f600, 'a'};
  out.clear();
  ASSERT_TRUE(append_utf8(ucs4, 2, 4, out));
  EXPECT_EQ(out, "\xf0\x9f\x98\x80" "a");
  const uint16_t lone[] = {0xd800};
  out.clear();
  ASSERT_TRUE(append_utf8(lone, 1, 2, out));
  EXPECT_EQ(out, "?");  // no invalid UTF-8 in the log
  const uint32_t bad[] = {0x110000};
  out = "keep";
  EXPECT_FALSE(append_utf8(bad, 1, 4, out));
  EXPECT_FALSE(append_utf8(latin1, 1, 3, out));
  EXPECT_EQ(out, "keep");
}

}  // namespace
}  // namespace nanscope

// Tests for src/python_line.cpp: which frames are library plumbing, and the UTF-8 text of the
// character kinds CPython's compact strings store.
#include <gtest/gtest.h>

#include <cstdint>

#include "generated_lines.hpp"
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

// The stack trace FX keeps for a node Dynamo traced in a Hugging Face Llama (outermost first),
// as Inductor's linemap holds it: the innermost frame is the RMSNorm's own line.
constexpr const char* kLlamaNormTrace =
    "  File \"/opt/torch/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py\", line 389, in forward\n"
    "    hidden_states = decoder_layer(\n"
    "  File \"/opt/torch/.venv/lib/python3.12/site-packages/transformers/modeling_layers.py\", line 94, in __call__\n"
    "    return super().__call__(*args, **kwargs)\n"
    "  File \"/opt/torch/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py\", line 290, in forward\n"
    "    hidden_states = self.input_layernorm(hidden_states)\n"
    "  File \"/opt/torch/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py\", line 64, in forward\n"
    "    variance = hidden_states.pow(2).mean(-1, keepdim=True)\n";

TEST(PythonLine, TheInnermostUserFrameOfATraceback) {
  const auto frame = innermost_user_frame(kLlamaNormTrace);
  ASSERT_TRUE(frame);
  EXPECT_TRUE(frame->file.ends_with("transformers/models/llama/modeling_llama.py"));
  EXPECT_EQ(frame->line, 64u);
  EXPECT_EQ(frame->function, "forward");
}

// nn.Linear's forward is inlined by Dynamo, so its frame ends the trace: the line that called the
// module is the user's.
TEST(PythonLine, LibraryFramesInATracebackArePassedOver) {
  const auto frame = innermost_user_frame(
      "  File \"/home/u/model.py\", line 12, in forward\r\n"
      "    q = self.q_proj(x)\r\n"
      "  File \"/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py\", line 125, in forward\n"
      "    return F.linear(input, self.weight, self.bias)\n"
      "  File \"<eval_with_key>.4\", line 7, in forward\n");
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->file, "/home/u/model.py");
  EXPECT_EQ(frame->line, 12u);
}

TEST(PythonLine, ATracebackWithoutAUserFrameNamesNone) {
  EXPECT_FALSE(innermost_user_frame(""));
  EXPECT_FALSE(innermost_user_frame("  File \"/x/site-packages/torch/a.py\", line 3, in f\n"));
  for (const char* bad : {"File \"/a.py\", line 0, in f", "File \"/a.py\", line x, in f", "File \"/a.py\" line 3, in f",
                          "File \"/a.py\", line 99999999999, in f", "File \"/a.py\", line 3 in f", "    File"})
    EXPECT_FALSE(innermost_user_frame(bad)) << bad;
  // A quote in the path: the file runs to the last `", line `.
  const auto quoted = innermost_user_frame("File \"/a \"b\".py\", line 3, in f");
  ASSERT_TRUE(quoted);
  EXPECT_EQ(quoted->file, "/a \"b\".py");
}

constexpr const char* kOutputCode = "/tmp/torchinductor_root/ab/cabc123.py";

// As PyCodeCache.stack_frames_for_code: the last entry at or before the line covers it; an entry
// without a trace covers Inductor's own lines.
TEST(GeneratedLines, ALineIsCoveredByTheLastEntryAtOrBeforeIt) {
  GeneratedLines map;
  const PythonLine norm{"/m/modeling_llama.py", 64, "forward"}, attn{"/m/modeling_llama.py", 208, "eager_attention_forward"};
  ASSERT_TRUE(map.add(kOutputCode, 40, norm));
  ASSERT_TRUE(map.add(kOutputCode, 55, std::nullopt));
  ASSERT_TRUE(map.add(kOutputCode, 48, attn));  // out of order
  EXPECT_FALSE(map.find(kOutputCode, 39));
  const auto at40 = map.find(kOutputCode, 40);
  ASSERT_TRUE(at40);
  EXPECT_EQ(at40->line, 64u);
  EXPECT_EQ(at40->generated_file, kOutputCode);
  EXPECT_EQ(at40->generated_line, 40u);
  EXPECT_EQ(map.find(kOutputCode, 47)->line, 64u);
  EXPECT_EQ(map.find(kOutputCode, 48)->function, "eager_attention_forward");
  EXPECT_EQ(map.find(kOutputCode, 54)->line, 208u);
  EXPECT_FALSE(map.find(kOutputCode, 55));
  EXPECT_FALSE(map.maps(kOutputCode, 900));
  EXPECT_TRUE(map.maps(kOutputCode, 50));
  EXPECT_FALSE(map.find("/tmp/torchinductor_root/cd/cother.py", 50));
  EXPECT_EQ(map.entries(), 3u);
  EXPECT_TRUE(map.has_file(kOutputCode));
  EXPECT_FALSE(map.has_file("/tmp/torchinductor_root/cd/cother.py"));
}

TEST(GeneratedLines, AnEntryForAKnownLineReplacesIt) {
  GeneratedLines map;
  ASSERT_TRUE(map.add(kOutputCode, 10, PythonLine{"/m/a.py", 1, "f"}));
  ASSERT_TRUE(map.add(kOutputCode, 10, PythonLine{"/m/a.py", 2, "f"}));
  EXPECT_EQ(map.entries(), 1u);
  EXPECT_EQ(map.find(kOutputCode, 10)->line, 2u);
  EXPECT_FALSE(map.add("", 10, std::nullopt));
  EXPECT_FALSE(map.add(kOutputCode, 0, std::nullopt));
}

TEST(GeneratedLines, TheCapsStoreNothingMore) {
  GeneratedLines map;
  for (size_t i = 0; i < GeneratedLines::kMaxFiles; ++i) ASSERT_TRUE(map.add("/g/" + std::to_string(i) + ".py", 1, std::nullopt));
  EXPECT_FALSE(map.add("/g/one-more.py", 1, std::nullopt));
  EXPECT_EQ(map.files(), GeneratedLines::kMaxFiles);
  for (uint32_t line = 2; map.entries() < GeneratedLines::kMaxEntries; ++line) ASSERT_TRUE(map.add("/g/0.py", line, std::nullopt));
  EXPECT_FALSE(map.add("/g/0.py", 1u << 30, std::nullopt));
  EXPECT_TRUE(map.add("/g/0.py", 1, PythonLine{"/m/a.py", 3, "f"}));  // replacing stores nothing new
  EXPECT_EQ(map.entries(), GeneratedLines::kMaxEntries);
}

}  // namespace
}  // namespace nanscope

// Where a kernel was launched from in a Python program: the innermost frame outside torch,
// triton, nanscope and Python's import and run machinery (hooks/python_frames.* reads the
// frames). The pure parts: which frames are skipped, and the text of a Python string's
// characters, so CPU tests reach them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nanscope {

struct PythonLine {
  std::string file;
  uint32_t line = 0;
  std::string function;  // the qualified name (Class.method) where Python has one
  // Set when `file:line` was found through a map of generated code (src/generated_lines.hpp):
  // the generated frame the launch really came from, e.g. Inductor's output code.
  std::string generated_file;
  uint32_t generated_line = 0;
  // The framework's op the line's kernel computes, where the framework says it: XLA's op_name
  // from the HLO metadata (JAX's "jit(step)/log"). Empty for a frame read from Python.
  std::string op;
};

// Whether a frame whose code comes from `file` is library plumbing, not where the user's program
// launched the kernel: anything inside a torch, triton or functorch package directory (so
// torch._dynamo too), nanscope's Python helper where it is installed, and importlib and runpy
// (`python -m`, frozen or not).
bool skipped_frame(std::string_view file);

// Whether a frame's code was generated, so its lines are no user's: source exec'd from a string
// (Inductor's and Triton's launchers say "<string>"), FX's generated forward ("<eval_with_key>.3"),
// and the output code Inductor writes into its cache (/tmp/torchinductor_<user>/ab/c...py). The
// walk passes over them to the next user frame (under torch.compile, Dynamo's frame of the
// model's own function), and falls back to the innermost one only when no user frame is left
// (`python -c` code is "<string>" too).
bool generated_frame(std::string_view file);

// The innermost frame of a Python traceback's text that is neither library nor generated code,
// or nullopt. The text is the standard one, outermost frame first: `File "<file>", line <n>, in
// <function>` then the source line, per frame (traceback.format_stack, and the stack_trace FX
// keeps for each node Dynamo traced). Only the file, the line and the function are read.
std::optional<PythonLine> innermost_user_frame(std::string_view traceback);

// Appends the UTF-8 text of `length` characters stored `kind` bytes each (1: Latin-1, 2: UCS-2,
// 4: UCS-4, as CPython's compact strings keep them). False, with `out` unchanged, on a kind
// that is none of these or a code point past U+10FFFF.
bool append_utf8(const void* data, uint64_t length, uint32_t kind, std::string& out);

}  // namespace nanscope

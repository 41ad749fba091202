// A stand-in for the injected library's Python-line path (hooks/python_frames.cpp), loaded into
// a Python process by test_python_frames.py and bench/python_line_bench.py through ctypes: the
// same code, found by dlsym(RTLD_DEFAULT) the same way, called with the GIL released (ctypes.CDLL)
// or held (ctypes.PyDLL), as a CUDA launch callback would be.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "python_frames.hpp"

namespace {
nanscope::PythonFrames& frames() {
  static nanscope::PythonFrames f(true);
  return f;
}
}  // namespace

extern "C" {

// "file\nline\nfunction\ngenerated file\ngenerated line" of the caller's Python line into
// `out`; 1 when there is one.
__attribute__((visibility("default"))) int nanscope_probe_line(char* out, int size) {
  const auto line = frames().resolve(frames().capture());
  if (!line || size <= 0) return 0;
  std::snprintf(out, static_cast<size_t>(size), "%s\n%u\n%s\n%s\n%u", line->file.c_str(), line->line,
                line->function.c_str(), line->generated_file.c_str(), line->generated_line);
  return 1;
}

// nanscope_python_line_origin's work (PythonFrames::note_generated_line); 1 when it was kept.
__attribute__((visibility("default"))) int nanscope_probe_generated_line(const char* file, unsigned line,
                                                                       const char* traceback) {
  return frames().note_generated_line(file ? file : "", line, traceback) ? 1 : 0;
}

// Why there is no line ("" while it works).
__attribute__((visibility("default"))) int nanscope_probe_problem(char* out, int size) {
  const std::string p = frames().problem();
  std::snprintf(out, static_cast<size_t>(size), "%s", p.c_str());
  return frames().gave_up() ? 1 : 0;
}

// Mean nanoseconds of one capture (the walk and its cache lookups) over `n` captures.
__attribute__((visibility("default"))) double nanscope_probe_capture_ns(int n) {
  uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink += frames().capture();
  const auto t1 = std::chrono::steady_clock::now();
  if (sink == 1) std::puts("");  // keeps the loop
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / (n > 0 ? n : 1);
}

}  // extern "C"

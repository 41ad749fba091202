// XLA's autotuning through libraries (issue 38, docs/jax.md#autotuning). XLA times cuBLAS and cuDNN
// candidates while it optimizes a module: their kernels are the library's, so the rule for kernels
// no dump module holds (KernelTable::xla_optimizing) cannot tell them from the program's. The
// evidence is the thread: XLA's autotuner fills its candidates' buffers and checks their redzones
// with kernels of its own (builtin_exclusion: "XLA autotuner kernel"), on the thread that then runs
// the candidates. A library call is the autotuner's when a module is being optimized and its
// thread launched an autotuner kernel during that same module's optimization; once the module is
// optimized, the thread's calls are the program's again. Pure; the engine keeps one per thread.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace nanscope::xla {

class AutotuningThread {
 public:
  // The thread launched one of XLA's autotuner kernels while XLA optimized `optimizing` ("": none).
  void autotuner_launched(std::string_view optimizing) { module_ = key(optimizing); }
  // Whether a library call the thread makes now, while XLA optimizes `optimizing`, is autotuning.
  bool call_is_autotuning(std::string_view optimizing) {
    if (module_ && key(optimizing) == module_) return true;
    module_ = 0;  // that optimization is over
    return false;
  }
  // False: no call of this thread can be autotuning, and the module need not be looked up.
  bool may_be_autotuning() const { return module_ != 0; }

 private:
  static uint64_t key(std::string_view module) { return module.empty() ? 0 : std::hash<std::string_view>{}(module) | 1; }
  uint64_t module_ = 0;  // the module's name hashed; 0: none
};

}  // namespace nanscope::xla

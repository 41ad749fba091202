#pragma once
// Opens CUPTI at initialisation (src/cupti_search.hpp says where it looks) and binds the three
// entry points nanscope calls. libnanscope.so does not link libcupti: a wheel install finds the
// nvidia-cuda-cupti wheel that PyTorch depends on, a CMake build the toolkit's, and a machine
// with neither gets one message naming every place tried while the program runs on unchanged.
#include <cupti.h>

#include <string>

#include "cupti_search.hpp"

namespace nanscope {

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

struct CuptiLibrary {
  CuptiApi api;
  std::string path;    // the file that was loaded, resolved
  std::string source;  // how it was found (a CuptiCandidate's source, or "already loaded")
  std::string origin;  // cupti_origin(path): wheel, toolkit or system
  std::string error;   // when none could be used: every place tried and why it failed
  bool ok() const { return api.subscribe && api.enable_callback && api.result_string; }
};

// NANSCOPE_CUPTI, NANSCOPE_CUPTI_PYTHON, CUDA_HOME/CUDA_PATH and the directory of this libnanscope.so.
CuptiSearchInputs cupti_search_inputs_from_environment();

// A CUPTI the program already loaded comes first: one process has one CUPTI, which torch's
// profiler and nanscope share (a second copy from another path would be a second library).
CuptiLibrary load_cupti(const CuptiSearchInputs& in);

}  // namespace nanscope

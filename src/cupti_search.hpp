#pragma once
// Where nanscope finds CUPTI (libcupti.so.13) at run time, and how it names the one it loaded.
// The places, in order, are a table (cupti_search.cpp) a CPU test reads; hooks/cupti_loader.cpp
// dlopens them. CUPTI is opened at initialisation rather than linked, so a machine without it
// gets one clear message and an unmodified program, not a failed injection.
#include <string>
#include <vector>

namespace nanscope {

inline constexpr const char* kCuptiSoname = "libcupti.so.13";

// What the search starts from: the environment and where libnanscope.so itself lies.
struct CuptiSearchInputs {
  std::string explicit_path;  // NANSCOPE_CUPTI: the user's choice, tried first
  std::string python_found;   // NANSCOPE_CUPTI_PYTHON: found over the program's sys.path by
                              // nanscope's sitecustomize, as torch finds its CUDA libraries
  std::string own_dir;        // the directory holding libnanscope.so
  std::string cuda_home;      // CUDA_HOME (or CUDA_PATH): a toolkit outside /usr/local/cuda
};

struct CuptiCandidate {
  std::string path;    // a file, or the bare soname for the dynamic loader's own search
  std::string source;  // why it is tried, as the log says it
};

// The directories of an nvidia-cuda-cupti wheel, relative to a site-packages directory, as
// torch's RPATH ($ORIGIN/../../nvidia/cu13/lib) and its sys.path preload name them: CUDA 13
// wheels use nvidia/cu13/lib, the older layout nvidia/cuda_cupti/lib.
const std::vector<std::string>& nvidia_wheel_lib_dirs();

// Every place to try, in order: the user's path, the wheel torch uses, then the bare soname
// (LD_LIBRARY_PATH, libnanscope's RUNPATH with the build's toolkit, ld.so.cache: what a linked
// libcupti found before), then the toolkit's directories by name, for a wheel whose RUNPATH
// auditwheel rewrote.
std::vector<CuptiCandidate> cupti_candidates(const CuptiSearchInputs& in);

// What kind of CUPTI a loaded path is: "nvidia-cuda-cupti wheel", "CUDA toolkit" or "system".
std::string cupti_origin(const std::string& loaded_path);

}  // namespace nanscope

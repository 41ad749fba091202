#include "cupti_search.hpp"

#include <utility>

namespace nanscope {

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

const std::vector<std::string>& nvidia_wheel_lib_dirs() {
  static const std::vector<std::string> dirs = {"nvidia/cu13/lib", "nvidia/cuda_cupti/lib"};
  return dirs;
}

std::vector<CuptiCandidate> cupti_candidates(const CuptiSearchInputs& in) {
  std::vector<CuptiCandidate> out;
  if (!in.explicit_path.empty()) out.push_back({in.explicit_path, "NANSCOPE_CUPTI"});
  if (!in.python_found.empty())
    out.push_back({in.python_found, "the nvidia-cuda-cupti wheel on the program's sys.path"});
  // A wheel install: <site-packages>/nanscope/lib/libnanscope.so beside <site-packages>/nvidia.
  if (!in.own_dir.empty())
    for (const auto& dir : nvidia_wheel_lib_dirs())
      out.push_back({in.own_dir + "/../../" + dir + "/" + kCuptiSoname, "the nvidia-cuda-cupti wheel beside nanscope"});
  out.push_back({kCuptiSoname, "the library search path (LD_LIBRARY_PATH, RUNPATH, ld.so.cache)"});
  std::vector<std::pair<std::string, std::string>> toolkits;
  if (!in.cuda_home.empty()) toolkits.emplace_back(in.cuda_home, "the CUDA toolkit in CUDA_HOME");
  toolkits.emplace_back("/usr/local/cuda", "the CUDA toolkit in /usr/local/cuda");
  for (const auto& [root, source] : toolkits)
    for (const char* sub : {"/extras/CUPTI/lib64/", "/lib64/"}) out.push_back({root + sub + kCuptiSoname, source});
  return out;
}

std::string cupti_origin(const std::string& loaded_path) {
  for (const auto& dir : nvidia_wheel_lib_dirs())
    if (contains(loaded_path, "/" + dir + "/")) return "nvidia-cuda-cupti wheel";
  if (contains(loaded_path, "/extras/CUPTI/") || contains(loaded_path, "/cuda/") || contains(loaded_path, "/cuda-"))
    return "CUDA toolkit";
  return "system";
}

}  // namespace nanscope

#include "cupti_loader.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <vector>

namespace nanscope {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string own_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_cupti), &info) == 0 || !info.dli_fname) return {};
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The file behind a handle, resolved (a wheel candidate is opened as .../nanscope/lib/../../).
std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name) return "?";
  char resolved[PATH_MAX];
  return realpath(map->l_name, resolved) ? std::string(resolved) : std::string(map->l_name);
}

template <typename Fn>
bool bind_one(void* handle, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

bool bind(void* handle, CuptiApi& api) {
  return bind_one(handle, "cuptiSubscribe", api.subscribe) &&
         bind_one(handle, "cuptiEnableCallback", api.enable_callback) &&
         bind_one(handle, "cuptiGetResultString", api.result_string);
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

CuptiSearchInputs cupti_search_inputs_from_environment() {
  std::string cuda_home = env_or_empty("CUDA_HOME");
  if (cuda_home.empty()) cuda_home = env_or_empty("CUDA_PATH");
  return {env_or_empty("NANSCOPE_CUPTI"), env_or_empty("NANSCOPE_CUPTI_PYTHON"), own_dir(), cuda_home};
}

CuptiLibrary load_cupti(const CuptiSearchInputs& in) {
  CuptiLibrary lib;
  std::vector<std::string> tried;
  // The handle is kept open for the life of the process: the callbacks live in it.
  auto use = [&](void* handle, const std::string& where, const std::string& source) {
    CuptiApi api;
    if (!bind(handle, api)) {
      tried.push_back(where + " (" + source + "): not CUPTI (no cuptiSubscribe/cuptiEnableCallback)");
      dlclose(handle);
      return false;
    }
    lib.api = api;
    lib.path = loaded_path(handle);
    lib.source = source;
    lib.origin = cupti_origin(lib.path);
    return true;
  };
  if (void* h = dlopen(kCuptiSoname, RTLD_NOW | RTLD_NOLOAD); h && use(h, kCuptiSoname, "already loaded by the program"))
    return lib;
  for (const CuptiCandidate& c : cupti_candidates(in)) {
    const bool is_file = c.path.find('/') != std::string::npos;
    if (is_file && access(c.path.c_str(), F_OK) != 0) {
      tried.push_back(c.path + " (" + c.source + "): no such file");
      continue;
    }
    void* h = dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      tried.push_back(c.path + " (" + c.source + "): " + (why ? why : "dlopen failed"));
      continue;
    }
    if (use(h, c.path, c.source)) return lib;
  }
  lib.error = std::string("cannot load CUPTI (") + kCuptiSoname + "): tried " + join(tried) +
              ". Install the CUDA toolkit or `pip install nvidia-cuda-cupti`, or set NANSCOPE_CUPTI to the library";
  return lib;
}

}  // namespace nanscope

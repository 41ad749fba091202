#include "triton_modules.hpp"

#include <utility>

namespace nanscope {

namespace {

// cuModuleLoadData and cuModuleLoadDataEx both start with (CUmodule* module, const void* image).
template <class Params>
std::pair<CUmodule*, const void*> loaded_image(const void* params) {
  auto* p = static_cast<const Params*>(params);
  return {p->module, p->image};
}

}  // namespace

void TritonModules::on_load(CUpti_CallbackId cbid, const void* params) {
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoad) {
    auto* p = static_cast<const cuModuleLoad_params*>(params);
    if (p->module && p->fname)
      registry_.on_module_loaded(reinterpret_cast<uint64_t>(*p->module), decode::ttir_for_module_path(p->fname));
    return;
  }
  std::pair<CUmodule*, const void*> loaded{nullptr, nullptr};
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData) loaded = loaded_image<cuModuleLoadData_params>(params);
  else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx) loaded = loaded_image<cuModuleLoadDataEx_params>(params);
  if (!loaded.first || !loaded.second) return;
  registry_.on_module_loaded(reinterpret_cast<uint64_t>(*loaded.first), decode::ttir_for_image(loaded.second, 0, index_));
}

void TritonModules::on_unload(CUmodule module) { registry_.on_module_unloaded(reinterpret_cast<uint64_t>(module)); }

std::shared_ptr<const decode::TritonSignature> TritonModules::lookup(void* function, const std::string& name,
                                                                     std::string& reason) const {
  // Runtime launches hand us CUkernel handles, for which cuFuncGetModule fails: never Triton.
  CUmodule module = nullptr;
  if (cuFuncGetModule(&module, static_cast<CUfunction>(function)) != CUDA_SUCCESS || !module) {
    reason = "not a module function";
    return nullptr;
  }
  const decode::TritonRegistry::Found found = registry_.lookup(reinterpret_cast<uint64_t>(module), name);
  if (!found.signature) reason = std::string(found.reason);
  return found.signature;
}

}  // namespace nanscope

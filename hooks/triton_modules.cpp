#include "triton_modules.hpp"

namespace nanscope {

void TritonModules::on_load(CUpti_CallbackId cbid, const void* params) {
  CUmodule* module = nullptr;
  decode::TtirText ttir;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad: {
      auto* p = static_cast<const cuModuleLoad_params*>(params);
      if (!p->module || !p->fname) return;
      module = p->module;
      ttir = decode::ttir_for_module_path(p->fname);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData: {
      auto* p = static_cast<const cuModuleLoadData_params*>(params);
      if (!p->module || !p->image) return;
      module = p->module;
      ttir = decode::ttir_for_image(p->image, 0, index_);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx: {
      auto* p = static_cast<const cuModuleLoadDataEx_params*>(params);
      if (!p->module || !p->image) return;
      module = p->module;
      ttir = decode::ttir_for_image(p->image, 0, index_);
      break;
    }
    default:
      return;
  }
  registry_.on_module_loaded(reinterpret_cast<uint64_t>(*module), ttir);
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

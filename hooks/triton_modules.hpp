// Triton kernels: what each loaded module's TTIR says its kernel writes. Inductor's static
// launcher loads a cached cubin by path (cuModuleLoad), Triton's own launcher by image
// (cuModuleLoadData): either way the TTIR beside the cubin in Triton's cache names the
// kernel's arguments and the stores tell which pointers it writes (src/decode/triton*).
// Installing a Triton launch hook would change how Inductor launches, so none is installed.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <memory>
#include <string>

#include "decode/triton_cache.hpp"

namespace nanscope {

class TritonModules {
 public:
  // Exit site of a successful cuModuleLoad / cuModuleLoadData / cuModuleLoadDataEx.
  void on_load(CUpti_CallbackId cbid, const void* params);
  // Enter site of cuModuleUnload.
  void on_unload(CUmodule module);
  // The signature of a Triton kernel about to be decoded (its handle is a CUfunction of a
  // module loaded while nanscope watched). Null with `reason` set when there is none.
  std::shared_ptr<const decode::TritonSignature> lookup(void* function, const std::string& name,
                                                        std::string& reason) const;

 private:
  decode::TritonCacheIndex index_;
  decode::TritonRegistry registry_;
};

}  // namespace nanscope

// Launch decoding shared by the launch hook and the graph instrumentation: what a launch
// callback's parameter struct says, and where each kernel parameter's bytes are. Pure
// functions over the driver's structs, unit-tested without a GPU.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace nanscope {

// What a launch callback tells us, whatever the launch API.
struct LaunchArgs {
  void* function = nullptr;  // CUfunction or CUkernel
  CUstream stream = nullptr;
  void** kernel_params = nullptr;
  void** extra = nullptr;
};

// Decodes the parameter struct of a hooked launch cbid. Returns false for other cbids.
bool decode_launch(CUpti_CallbackId cbid, const void* params, LaunchArgs& out);

// The bytes of kernel parameter i, in either launch form (kernelParams or the `extra` buffer);
// `layout` holds (offset, size) per parameter. Null when unknown.
const char* param_bytes(const LaunchArgs& a, const std::vector<std::pair<uint32_t, uint32_t>>& layout, uint32_t i);

}  // namespace nanscope

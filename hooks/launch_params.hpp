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
  uint32_t grid[3] = {1, 1, 1};  // kernel-family decoders read extents from the launch shape
  uint32_t block[3] = {1, 1, 1};
};

// A graph kernel node's launch, as a launch callback would have given it (shape included: the
// kernel-family decoders read extents from the grid).
template <class NodeParams>
LaunchArgs node_launch_args(void* function, const NodeParams& p) {
  LaunchArgs a{function, nullptr, p.kernelParams, p.extra};
  a.grid[0] = p.gridDimX, a.grid[1] = p.gridDimY, a.grid[2] = p.gridDimZ;
  a.block[0] = p.blockDimX, a.block[1] = p.blockDimY, a.block[2] = p.blockDimZ;
  return a;
}

// Reads the parameter struct of a hooked launch cbid. Returns false for other cbids.
bool read_launch_args(CUpti_CallbackId cbid, const void* params, LaunchArgs& out);

// What nanscope does with a driver callback. One table (kDriverHooks in launch_params.cpp)
// lists every hooked driver cbid but the copies and sets (kCopyForms): it drives enabling them
// (driver_hook_cbids), dispatching them (driver_hook) and reading launches (read_launch_args).
enum class DriverHook : uint8_t {
  none,              // not hooked (or a copy or set: decode_copy)
  launch,            // cuLaunchKernel*, cuLaunchCooperativeKernel*, cuLaunchKernelEx*: exit site
  instantiate,       // cuGraphInstantiate*: instrument at the enter site, keep the exec at exit
  exec_update,       // cuGraphExecUpdate*: enter site
  end_capture,       // cuStreamEndCapture*: enter site
  node_params,       // cuGraphKernelNodeSetParams*: exit site
  exec_node_params,  // cuGraphExecKernelNodeSetParams*: exit site
  memset_node_params,       // cuGraphMemsetNodeSetParams: exit site
  exec_memset_node_params,  // cuGraphExecMemsetNodeSetParams: exit site
  graph_launch,      // cuGraphLaunch*: exit site
  alloc,             // cuMemAlloc*, cuMemMap: exit site
  free,              // cuMemFree*, cuMemUnmap: exit site
  module_load,       // cuModuleLoad, cuModuleLoadData(Ex): exit site (Triton's TTIR beside its cubin)
  module_unload,     // cuModuleUnload: enter site
  tensor_map,        // cuTensorMapEncodeTiled: exit site (what a TMA descriptor describes)
  add_node,          // cuGraphAddNode*: exit site (a conditional node's bodies, which no later call gives)
};

struct DriverHookForm {
  CUpti_CallbackId cbid;
  DriverHook hook;
  bool per_thread;  // a _ptsz/_ptds form: a null stream is the per-thread default stream
  bool v1_params;   // the first of a _v2 pair (its params struct predates the _v2 one)
  void (*decode)(const void* params, LaunchArgs& out);  // launches: read its params struct
};

DriverHook driver_hook(CUpti_CallbackId cbid);  // O(1): the dispatch runs it on every callback
const DriverHookForm* driver_hook_form(CUpti_CallbackId cbid);  // null when not hooked
// Every cbid of the table, to enable (copies and sets: copy_cbids()).
const std::vector<CUpti_CallbackId>& driver_hook_cbids();
// The stream a hooked call named: a per-thread form's null stream is CU_STREAM_PER_THREAD.
CUstream hooked_stream(CUpti_CallbackId cbid, CUstream named);

// A conditional node (a while loop, an if or a switch in a CUDA graph) that a successful
// cuGraphAddNode or cuGraphAddNode_v2 made, with its body graphs: the driver (CUDA 13.0) writes
// them into the caller's parameters (phGraph_out) then, and no call returns them later. `node` is
// null for any other node, call or malformed parameters; at most kMaxBodies bodies are kept.
struct AddedConditional {
  static constexpr unsigned kMaxBodies = 64;
  CUgraphNode node = nullptr;
  std::vector<CUgraph> bodies;
};
AddedConditional added_conditional(CUpti_CallbackId cbid, const void* params);

// A copy or set into device memory (NaN origin: it changes a tracked buffer's state).
struct CopyArgs {
  enum class Kind { host_to_device, device_to_device, unified, set } kind = Kind::set;
  const char* api = "";        // the driver call's name, without _v2/_ptds/_ptsz
  uint64_t dst = 0, src = 0;   // src: device address for device_to_device / unified
  uint64_t bytes = 0;
  CUstream stream = nullptr;   // the legacy stream for synchronous calls
  uint32_t set_bytes = 0;      // element size of a memset (1, 2, 4)
  uint32_t set_value = 0;
};

// Decodes the hooked copy and memset cbids. Returns false for other cbids.
bool decode_copy(CUpti_CallbackId cbid, const void* params, CopyArgs& out);
// The copy and memset cbids decode_copy understands (to enable them).
const std::vector<CUpti_CallbackId>& copy_cbids();

// The bytes of kernel parameter i, in either launch form (kernelParams or the `extra` buffer);
// `layout` holds (offset, size) per parameter. Null when unknown.
const char* param_bytes(const LaunchArgs& a, const std::vector<std::pair<uint32_t, uint32_t>>& layout, uint32_t i);

}  // namespace nanscope

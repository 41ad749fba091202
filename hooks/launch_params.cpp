#include "launch_params.hpp"

#include <iterator>

namespace nanscope {

namespace {

using H = DriverHook;
constexpr bool kPtsz = true, kV1 = true;

template <class P>
void set_shape(const P& p, LaunchArgs& out) {
  out.grid[0] = p.gridDimX, out.grid[1] = p.gridDimY, out.grid[2] = p.gridDimZ;
  out.block[0] = p.blockDimX, out.block[1] = p.blockDimY, out.block[2] = p.blockDimZ;
}
void launch_kernel(const void* params, LaunchArgs& out) {
  auto* p = static_cast<const cuLaunchKernel_params*>(params);
  out = {p->f, p->hStream, p->kernelParams, p->extra};
  set_shape(*p, out);
}
void launch_cooperative(const void* params, LaunchArgs& out) {
  auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
  out = {p->f, p->hStream, p->kernelParams, nullptr};
  set_shape(*p, out);
}
void launch_ex(const void* params, LaunchArgs& out) {
  auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
  out = {p->f, p->config ? p->config->hStream : nullptr, p->kernelParams, p->extra};
  if (p->config) set_shape(*p->config, out);
}

constexpr DriverHookForm kDriverHooks[] = {
    // Launches first: the most frequent callbacks.
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, H::launch, false, false, launch_kernel},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, H::launch, kPtsz, false, launch_kernel},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, H::launch, false, false, launch_ex},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, H::launch, kPtsz, false, launch_ex},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, H::launch, false, false, launch_cooperative},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, H::launch, kPtsz, false, launch_cooperative},
    // Every instantiate variant starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
    {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, H::instantiate, false, kV1, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2, H::instantiate, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, H::instantiate, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams, H::instantiate, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz, H::instantiate, kPtsz, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate, H::exec_update, false, kV1, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2, H::exec_update, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, H::end_capture, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, H::end_capture, kPtsz, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams, H::node_params, false, kV1, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2, H::node_params, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams, H::exec_node_params, false, kV1, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2, H::exec_node_params, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphMemsetNodeSetParams, H::memset_node_params, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams, H::exec_memset_node_params, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, H::graph_launch, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, H::graph_launch, kPtsz, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, H::alloc, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, H::alloc, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, H::alloc, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, H::alloc, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, H::alloc, kPtsz, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, H::alloc, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, H::alloc, kPtsz, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemMap, H::alloc, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, H::free, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, H::free, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, H::free, kPtsz, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, H::free, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuModuleLoad, H::module_load, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, H::module_load, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx, H::module_load, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, H::module_unload, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled, H::tensor_map, false, false, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, H::add_node, false, kV1, nullptr},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, H::add_node, false, false, nullptr},
};

// Row index + 1 per cbid (0: not hooked), so a callback finds its row without a search.
const std::vector<uint8_t>& hook_index() {
  static const std::vector<uint8_t> index = [] {
    std::vector<uint8_t> v(CUPTI_DRIVER_TRACE_CBID_SIZE, 0);
    for (std::size_t i = 0; i < std::size(kDriverHooks); ++i) v[kDriverHooks[i].cbid] = static_cast<uint8_t>(i + 1);
    return v;
  }();
  return index;
}
static_assert(std::size(kDriverHooks) < 255, "hook_index holds row numbers in a byte");

}  // namespace

const DriverHookForm* driver_hook_form(CUpti_CallbackId cbid) {
  const std::vector<uint8_t>& index = hook_index();
  if (cbid >= index.size() || index[cbid] == 0) return nullptr;
  return &kDriverHooks[index[cbid] - 1];
}

DriverHook driver_hook(CUpti_CallbackId cbid) {
  const DriverHookForm* f = driver_hook_form(cbid);
  return f ? f->hook : DriverHook::none;
}

const std::vector<CUpti_CallbackId>& driver_hook_cbids() {
  static const std::vector<CUpti_CallbackId> ids = [] {
    std::vector<CUpti_CallbackId> v;
    for (const DriverHookForm& f : kDriverHooks) v.push_back(f.cbid);
    return v;
  }();
  return ids;
}

CUstream hooked_stream(CUpti_CallbackId cbid, CUstream named) {
  // The _ptsz forms mean the per-thread default stream when given 0; our scan must follow
  // the app's kernel on that same stream, not on the legacy one.
  if (named) return named;
  const DriverHookForm* f = driver_hook_form(cbid);
  return f && f->per_thread ? CU_STREAM_PER_THREAD : named;
}

AddedConditional added_conditional(CUpti_CallbackId cbid, const void* params) {
  AddedConditional out;
  if (!params) return out;
  CUgraphNode* node = nullptr;
  const CUgraphNodeParams* p = nullptr;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode) {
    const auto* a = static_cast<const cuGraphAddNode_params*>(params);
    node = a->phGraphNode, p = a->nodeParams;
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2) {
    const auto* a = static_cast<const cuGraphAddNode_v2_params*>(params);
    node = a->phGraphNode, p = a->nodeParams;
  }
  if (!node || !*node || !p || p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) return out;
  const CUDA_CONDITIONAL_NODE_PARAMS& c = p->conditional;
  if (!c.phGraph_out || c.size == 0 || c.size > AddedConditional::kMaxBodies) return out;
  out.node = *node;
  out.bodies.assign(c.phGraph_out, c.phGraph_out + c.size);
  return out;
}

bool read_launch_args(CUpti_CallbackId cbid, const void* params, LaunchArgs& out) {
  const DriverHookForm* f = driver_hook_form(cbid);
  if (!f || !f->decode) return false;
  f->decode(params, out);
  out.stream = hooked_stream(cbid, out.stream);
  return true;
}

const char* param_bytes(const LaunchArgs& a, const std::vector<std::pair<uint32_t, uint32_t>>& layout, uint32_t i) {
  if (i >= layout.size()) return nullptr;
  if (a.kernel_params) return static_cast<const char*>(a.kernel_params[i]);
  if (!a.extra) return nullptr;
  const char* buffer = nullptr;
  size_t size = 0;
  for (void** p = a.extra; *p != CU_LAUNCH_PARAM_END; p += 2) {
    if (p[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const char*>(p[1]);
    else if (p[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<const size_t*>(p[1]);
  }
  if (!buffer || layout[i].first + layout[i].second > size) return nullptr;
  return buffer + layout[i].first;
}

namespace {

template <typename P>
void copy_fields(const void* params, CopyArgs& out, CopyArgs::Kind kind, const char* api) {
  auto* p = static_cast<const P*>(params);
  out.kind = kind;
  out.api = api;
  out.bytes = p->ByteCount;
  if constexpr (requires { p->dstDevice; }) out.dst = p->dstDevice;
  else out.dst = p->dst;
  if constexpr (requires { p->srcDevice; }) out.src = p->srcDevice;
  else if constexpr (requires { p->src; }) out.src = p->src;
  if constexpr (requires { p->hStream; }) out.stream = p->hStream;
}

template <typename P>
void set_fields(const void* params, CopyArgs& out, uint32_t element_bytes, const char* api) {
  auto* p = static_cast<const P*>(params);
  out.kind = CopyArgs::Kind::set;
  out.api = api;
  out.dst = p->dstDevice;
  out.set_bytes = element_bytes;
  out.bytes = p->N * element_bytes;
  if constexpr (requires { p->uc; }) out.set_value = p->uc;
  else if constexpr (requires { p->us; }) out.set_value = p->us;
  else out.set_value = p->ui;
  if constexpr (requires { p->hStream; }) out.stream = p->hStream;
}

using K = CopyArgs::Kind;

// Each hooked copy or memset: the call on the legacy stream, its per-thread twin (a null stream
// there means the per-thread default stream), and how to read its parameters. One table serves
// the decoding and the list of callbacks to enable.
struct CopyForm {
  CUpti_CallbackId plain, per_thread;
  void (*decode)(const void* params, CopyArgs& out);
};

const CopyForm kCopyForms[] = {
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
     [](const void* p, CopyArgs& o) { copy_fields<cuMemcpyHtoD_v2_params>(p, o, K::host_to_device, "cuMemcpyHtoD"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
     [](const void* p, CopyArgs& o) {
       copy_fields<cuMemcpyHtoDAsync_v2_params>(p, o, K::host_to_device, "cuMemcpyHtoDAsync");
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
     [](const void* p, CopyArgs& o) { copy_fields<cuMemcpyDtoD_v2_params>(p, o, K::device_to_device, "cuMemcpyDtoD"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
     [](const void* p, CopyArgs& o) {
       copy_fields<cuMemcpyDtoDAsync_v2_params>(p, o, K::device_to_device, "cuMemcpyDtoDAsync");
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
     [](const void* p, CopyArgs& o) { copy_fields<cuMemcpy_params>(p, o, K::unified, "cuMemcpy"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
     [](const void* p, CopyArgs& o) { copy_fields<cuMemcpyAsync_params>(p, o, K::unified, "cuMemcpyAsync"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
     [](const void* p, CopyArgs& o) { set_fields<cuMemsetD8_v2_params>(p, o, 1, "cuMemsetD8"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
     [](const void* p, CopyArgs& o) { set_fields<cuMemsetD16_v2_params>(p, o, 2, "cuMemsetD16"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
     [](const void* p, CopyArgs& o) { set_fields<cuMemsetD32_v2_params>(p, o, 4, "cuMemsetD32"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
     [](const void* p, CopyArgs& o) { set_fields<cuMemsetD8Async_params>(p, o, 1, "cuMemsetD8Async"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
     [](const void* p, CopyArgs& o) { set_fields<cuMemsetD16Async_params>(p, o, 2, "cuMemsetD16Async"); }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
     [](const void* p, CopyArgs& o) { set_fields<cuMemsetD32Async_params>(p, o, 4, "cuMemsetD32Async"); }},
};

}  // namespace

bool decode_copy(CUpti_CallbackId cbid, const void* params, CopyArgs& out) {
  out = CopyArgs{};
  for (const CopyForm& f : kCopyForms) {
    if (cbid != f.plain && cbid != f.per_thread) continue;
    f.decode(params, out);
    if (!out.stream && cbid == f.per_thread) out.stream = CU_STREAM_PER_THREAD;
    return true;
  }
  return false;
}

const std::vector<CUpti_CallbackId>& copy_cbids() {
  static const std::vector<CUpti_CallbackId> ids = [] {
    std::vector<CUpti_CallbackId> v;
    for (const CopyForm& f : kCopyForms) v.insert(v.end(), {f.plain, f.per_thread});
    return v;
  }();
  return ids;
}

}  // namespace nanscope

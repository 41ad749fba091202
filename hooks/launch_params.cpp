#include "launch_params.hpp"

namespace nanscope {

bool decode_launch(CUpti_CallbackId cbid, const void* params, LaunchArgs& out) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto* p = static_cast<const cuLaunchKernel_params*>(params);
      out = {p->f, p->hStream, p->kernelParams, p->extra};
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
      out = {p->f, p->hStream, p->kernelParams, nullptr};
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
      out = {p->f, p->config ? p->config->hStream : nullptr, p->kernelParams, p->extra};
      break;
    }
    default: return false;
  }
  // The _ptsz forms mean the per-thread default stream when given 0; our scan must follow
  // the app's kernel on that same stream, not on the legacy one.
  const bool ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
  if (ptsz && out.stream == nullptr) out.stream = CU_STREAM_PER_THREAD;
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

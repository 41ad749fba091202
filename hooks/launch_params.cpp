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

}  // namespace nanscope

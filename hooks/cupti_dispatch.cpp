// The one CUPTI callback: dispatch on domain, then cbid, then site, into small handlers.
#include <fmt/format.h>

#include "engine.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

void on_driver_api(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite != CUPTI_API_EXIT) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      e.on_launch(cb, cbid);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      e.on_mem_free(cbid, cb.functionParams);
      return;
    default:
      if (cb.functionReturnValue && *static_cast<const CUresult*>(cb.functionReturnValue) == CUDA_SUCCESS)
        e.on_mem_alloc(cbid, cb.functionParams);
      return;
  }
}

void on_resource(Engine& e, CUpti_CallbackId cbid, const CUpti_ResourceData& rd) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      e.on_context_destroy(rd.context);
      return;
    default:
      return;
  }
}

}  // namespace

void CUPTIAPI cupti_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data) {
  if (ToolScope::active()) return;  // our own launches and allocations
  auto* e = static_cast<Engine*>(userdata);
  // Nothing may escape into CUPTI or the app: a failure is reported once and the app runs on.
  try {
    switch (domain) {
      case CUPTI_CB_DOMAIN_DRIVER_API:
        on_driver_api(*e, cbid, *static_cast<const CUpti_CallbackData*>(data));
        break;
      case CUPTI_CB_DOMAIN_RESOURCE:
        on_resource(*e, cbid, *static_cast<const CUpti_ResourceData*>(data));
        break;
      default:
        break;
    }
  } catch (const std::exception& ex) {
    e->warn_once(e->warned_callback_, "callback", fmt::format("internal error in a CUPTI callback: {}", ex.what()));
  } catch (...) {
    e->warn_once(e->warned_callback_, "callback", "internal error in a CUPTI callback");
  }
}

}  // namespace nanscope

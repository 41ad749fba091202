// The one CUPTI callback: dispatch on domain, then cbid, then site, into small handlers.
#include <fmt/format.h>

#include "engine.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

bool succeeded(const CUpti_CallbackData& cb) {
  return !cb.functionReturnValue || *static_cast<const CUresult*>(cb.functionReturnValue) == CUDA_SUCCESS;
}

// Enter site: graphs must be instrumented before the driver copies them into an exec.
void on_driver_enter(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
      // Every variant starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
      e.graphs().on_graph_instantiate(static_cast<const cuGraphInstantiateWithFlags_params*>(cb.functionParams)->hGraph);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2: {
      auto* p = static_cast<const cuGraphExecUpdate_v2_params*>(cb.functionParams);
      e.graphs().on_graph_exec_update(p->hGraphExec);
      e.graphs().on_graph_instantiate(p->hGraph);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz: {
      CUstream s = static_cast<const cuStreamEndCapture_params*>(cb.functionParams)->hStream;
      if (!s && cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz) s = CU_STREAM_PER_THREAD;
      e.graphs().on_end_capture(s);
      return;
    }
    default:
      return;
  }
}

void on_graph_exit(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      auto* p = static_cast<const cuGraphInstantiateWithFlags_params*>(cb.functionParams);
      if (p->phGraphExec) e.graphs().on_graph_instantiated(*p->phGraphExec, p->hGraph);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2: {
      auto* p = static_cast<const cuGraphKernelNodeSetParams_v2_params*>(cb.functionParams);
      e.graphs().on_kernel_node_params(nullptr, p->hNode, p->nodeParams,
                                       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2: {
      auto* p = static_cast<const cuGraphExecKernelNodeSetParams_v2_params*>(cb.functionParams);
      e.graphs().on_kernel_node_params(p->hGraphExec, p->hNode, p->nodeParams,
                                       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      auto* p = static_cast<const cuGraphLaunch_params*>(cb.functionParams);
      CUstream s = p->hStream;
      if (!s && cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) s = CU_STREAM_PER_THREAD;
      e.graphs().on_graph_launch(p->hGraph, s);
      return;
    }
    default:
      return;
  }
}

void on_driver_api(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite == CUPTI_API_ENTER) {
    on_driver_enter(e, cbid, cb);
    return;
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      e.launches().on_launch(cb, cbid);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      if (succeeded(cb)) on_graph_exit(e, cbid, cb);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2:
      return;  // handled at the enter site
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      e.allocations().on_free(cbid, cb.functionParams);
      return;
    default: {
      CopyArgs copy;
      if (decode_copy(cbid, cb.functionParams, copy)) {
        if (succeeded(cb)) e.launches().on_copy(copy, cb);
        return;
      }
      if (succeeded(cb)) e.allocations().on_alloc(cbid, cb.functionParams);
      return;
    }
  }
}

void on_resource(Engine& e, CUpti_CallbackId cbid, const CUpti_ResourceData& rd) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      e.on_context_destroy(rd.context);
      return;
    case CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING:
    case CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING:
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING: {
      // The graph data sits behind resourceDescriptor, although the header calls it reserved.
      auto* g = static_cast<const CUpti_GraphData*>(rd.resourceDescriptor);
      if (!g) return;
      if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING) e.graphs().on_graph_node_destroy(g->node);
      else if (cbid == CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING) e.graphs().on_graph_destroy(g->graph);
      else e.graphs().on_graph_exec_destroy(g->graphExec);
      return;
    }
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
    e->on_callback_error(fmt::format("internal error in a CUPTI callback: {}", ex.what()));
  } catch (...) {
    e->on_callback_error("internal error in a CUPTI callback");
  }
}

}  // namespace nanscope

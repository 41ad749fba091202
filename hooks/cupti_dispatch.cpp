// The one CUPTI callback: dispatch on domain, then cbid, then site, into small handlers.
#include <fmt/format.h>

#include "engine.hpp"
#include "stream_points.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

bool succeeded(const CUpti_CallbackData& cb) {
  return !cb.functionReturnValue || *static_cast<const CUresult*>(cb.functionReturnValue) == CUDA_SUCCESS;
}

// Enter site of a copy, set or stream-point call (hooks/stream_points.hpp): the held eager scans
// that must run before it go now (NANSCOPE_EAGER_BATCH).
void on_stream_call_enter(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (!e.scans().batching()) return;
  CopyArgs copy;
  if (decode_copy(cbid, cb.functionParams, copy)) {
    e.flush_points().on_copy_enter(copy);
    return;
  }
  StreamCall call;
  if (!decode_stream_call(cbid, cb.functionParams, call)) return;
  if (call.point == eager::Point::context_point) e.scans().flush_held(cb.context, false);
  else e.flush_points().on_stream_call(call.stream, call.point, call.source);
}

// Enter site: graphs must be instrumented before the driver copies them into an exec.
void on_driver_enter(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  switch (driver_hook(cbid)) {
    case DriverHook::instantiate:
      // Every variant starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
      e.graphs().on_graph_instantiate(static_cast<const cuGraphInstantiateWithFlags_params*>(cb.functionParams)->hGraph);
      return;
    case DriverHook::exec_update: {
      auto* p = static_cast<const cuGraphExecUpdate_v2_params*>(cb.functionParams);
      e.graphs().on_graph_exec_update(p->hGraphExec);
      e.graphs().on_graph_instantiate(p->hGraph);
      return;
    }
    case DriverHook::end_capture:
      e.graphs().on_end_capture(
          hooked_stream(cbid, static_cast<const cuStreamEndCapture_params*>(cb.functionParams)->hStream));
      return;
    case DriverHook::module_unload:
      e.on_module_unload(static_cast<const cuModuleUnload_params*>(cb.functionParams)->hmod);
      return;
    case DriverHook::launch:  // its record, for the exit site; held eager scans it may overwrite go first
      if (LaunchRecord* launch = LaunchRecord::at_enter(cb, cbid)) e.flush_points().on_launch_enter(cb, *launch);
      return;
    case DriverHook::graph_launch: {
      auto* p = static_cast<const cuGraphLaunch_params*>(cb.functionParams);
      e.flush_points().on_stream_call(hooked_stream(cbid, p->hStream), eager::Point::stream_point);
      e.graphs().on_graph_launch_enter(p->hGraph);  // the sentinel tier: this replay's scan nodes
      return;
    }
    case DriverHook::free:
      e.flush_points().on_free_enter(cbid, cb.functionParams);
      return;
    case DriverHook::none:
      on_stream_call_enter(e, cbid, cb);
      return;
    default:
      return;
  }
}

void on_graph_exit(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const DriverHookForm* form = driver_hook_form(cbid);
  switch (form->hook) {
    case DriverHook::instantiate: {
      auto* p = static_cast<const cuGraphInstantiateWithFlags_params*>(cb.functionParams);
      if (p->phGraphExec) e.graphs().on_graph_instantiated(*p->phGraphExec, p->hGraph);
      return;
    }
    case DriverHook::node_params: {
      auto* p = static_cast<const cuGraphKernelNodeSetParams_v2_params*>(cb.functionParams);
      e.graphs().on_kernel_node_params(nullptr, p->hNode, p->nodeParams, form->v1_params);
      return;
    }
    case DriverHook::exec_node_params: {
      auto* p = static_cast<const cuGraphExecKernelNodeSetParams_v2_params*>(cb.functionParams);
      e.graphs().on_kernel_node_params(p->hGraphExec, p->hNode, p->nodeParams, form->v1_params);
      return;
    }
    case DriverHook::memset_node_params: {
      auto* p = static_cast<const cuGraphMemsetNodeSetParams_params*>(cb.functionParams);
      e.graphs().on_memset_node_params(nullptr, p->hNode, p->nodeParams);
      return;
    }
    case DriverHook::exec_memset_node_params: {
      auto* p = static_cast<const cuGraphExecMemsetNodeSetParams_params*>(cb.functionParams);
      e.graphs().on_memset_node_params(p->hGraphExec, p->hNode, p->memsetParams);
      return;
    }
    case DriverHook::graph_launch: {
      auto* p = static_cast<const cuGraphLaunch_params*>(cb.functionParams);
      e.graphs().on_graph_launch(p->hGraph, hooked_stream(cbid, p->hStream));
      return;
    }
    default:
      return;
  }
}

// The map cuTensorMapEncodeTiled filled, with what it was given. A rank or pointer out of its
// bounds is not recorded: the map stays unknown, and a launch passing it is not inspected.
void on_tensor_map_encoded(TensorMapRegistry& maps, const void* params) {
  auto* p = static_cast<const cuTensorMapEncodeTiled_params*>(params);
  if (!p->tensorMap || !p->globalDim || p->tensorRank == 0 || p->tensorRank > 5 || (p->tensorRank > 1 && !p->globalStrides))
    return;
  TensorMapFacts f;
  f.global_address = reinterpret_cast<uint64_t>(p->globalAddress);
  f.data_type = static_cast<uint32_t>(p->tensorDataType);
  f.rank = p->tensorRank;
  for (uint32_t d = 0; d < f.rank; ++d) f.dims[d] = p->globalDim[d];
  for (uint32_t d = 0; d + 1 < f.rank; ++d) f.strides[d] = p->globalStrides[d];
  maps.on_encoded(std::span<const uint8_t, kTensorMapBytes>(reinterpret_cast<const uint8_t*>(p->tensorMap), kTensorMapBytes), f);
}

void on_driver_api(Engine& e, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite == CUPTI_API_ENTER) {
    on_driver_enter(e, cbid, cb);
    return;
  }
  switch (driver_hook(cbid)) {
    case DriverHook::launch:
      if (LaunchRecord* launch = LaunchRecord::at_exit(cb, cbid)) e.launches().on_launch(cb, *launch);
      return;
    case DriverHook::instantiate:
      // Every variant starts with (CUgraphExec* phGraphExec, CUgraph hGraph). The exec holds the
      // programmatic edges now; the app's graph gets its plain edges back, failed call or not.
      e.graphs().on_graph_copied(static_cast<const cuGraphInstantiateWithFlags_params*>(cb.functionParams)->hGraph);
      if (succeeded(cb)) on_graph_exit(e, cbid, cb);
      return;
    case DriverHook::exec_update:
      e.graphs().on_graph_copied(static_cast<const cuGraphExecUpdate_v2_params*>(cb.functionParams)->hGraph);
      return;
    case DriverHook::node_params:
    case DriverHook::exec_node_params:
    case DriverHook::memset_node_params:
    case DriverHook::exec_memset_node_params:
    case DriverHook::graph_launch:
      if (succeeded(cb)) on_graph_exit(e, cbid, cb);
      return;
    case DriverHook::end_capture:
    case DriverHook::module_unload:
      return;  // handled at the enter site
    case DriverHook::free:
      e.allocations().on_free(cbid, cb.functionParams);
      return;
    case DriverHook::alloc:
      if (succeeded(cb)) e.allocations().on_alloc(cbid, cb.functionParams);
      return;
    case DriverHook::module_load:
      if (succeeded(cb)) {
        e.modules().on_load(cbid, cb.functionParams);
        e.library_scans().on_module_loaded();  // a library with GEMM imports may have arrived
        e.graphs().on_module_loaded();         // ...or with graph launches (the sentinel tier)
      }
      return;
    case DriverHook::tensor_map:
      if (succeeded(cb)) on_tensor_map_encoded(e.allocations().tensor_maps(), cb.functionParams);
      return;
    case DriverHook::add_node:
      if (succeeded(cb)) e.graphs().on_node_added(cbid, cb.functionParams);
      return;
    case DriverHook::none: {
      CopyArgs copy;
      if (decode_copy(cbid, cb.functionParams, copy) && succeeded(cb)) e.launches().on_copy(copy, cb);
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

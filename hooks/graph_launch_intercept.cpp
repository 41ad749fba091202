#include "graph_launch_intercept.hpp"

#include "got_library.hpp"

namespace nanscope::graph_launch {

namespace {

// cudaGraphExec_t and cudaStream_t are the driver's handles; cudaError_t is an int.
using RtResult = int;

#define NS_GRAPH_LAUNCH_HOOKS(X) X(cudaGraphLaunch) X(cudaGraphLaunch_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)
enum Id : int { NS_GRAPH_LAUNCH_HOOKS(NS_GOT_ID) kHookCount };

struct Traits {
  static constexpr std::size_t kCount = kHookCount;
  using Sink = LaunchSink;
  static const got::Hook* table();
  // The runtime's own entry calls the driver through its function table, not an import; the
  // driver and nanscope are never patched.
  static got::Options options(bool force) {
    return got::options_skipping(force, {"libcudart.so", "libcuda.so", "libnanscope"});
  }
  static void after_walk() {}
};
using Lib = got::Library<Traits>;

CUgraphExec chosen(CUgraphExec exec) {
  const LaunchSink* sink = Lib::observer();
  if (!sink || !sink->choose) return exec;
  try {
    return sink->choose(sink->ctx, exec);
  } catch (...) {  // never into the application: its own exec
    return exec;
  }
}

RtResult w_cudaGraphLaunch(CUgraphExec exec, CUstream stream) {
  return Lib::original<decltype(&w_cudaGraphLaunch)>(k_cudaGraphLaunch)(chosen(exec), stream);
}
RtResult w_cudaGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  return Lib::original<decltype(&w_cudaGraphLaunch_ptsz)>(k_cudaGraphLaunch_ptsz)(chosen(exec), stream);
}
CUresult w_cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return Lib::original<decltype(&w_cuGraphLaunch)>(k_cuGraphLaunch)(chosen(exec), stream);
}
CUresult w_cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  return Lib::original<decltype(&w_cuGraphLaunch_ptsz)>(k_cuGraphLaunch_ptsz)(chosen(exec), stream);
}

const got::Hook kHooks[] = {NS_GRAPH_LAUNCH_HOOKS(NS_GOT_HOOK)};
const got::Hook* Traits::table() { return kHooks; }

}  // namespace

void set_launch_sink(const LaunchSink* sink) { Lib::observe(sink); }
const got::Hook* hooks(std::size_t* count) { return Lib::hooks(count); }
got::Report patch_all(bool force) { return Lib::patch_all(force); }
bool set_original(const char* name, void* fn) { return Lib::set_original(name, fn); }
void* wrapper(const char* name) { return Lib::wrapper(name); }

}  // namespace nanscope::graph_launch

// Graph launches, intercepted where the application calls them (cudaGraphLaunch from libcudart's
// importers, cuGraphLaunch from the driver's), so the sentinel tier can launch another exec in
// the application's place: the sentinel twin of a graph (docs/sentinel.md). CUPTI's callbacks see
// a launch but cannot change it (their parameters are const), and changing the application's
// exec between launches needs the node handles of the graph it was made from, which PyTorch
// destroys right after instantiating (S20-5: cuGraphNodeSetEnabled then fails with
// CUDA_ERROR_INVALID_VALUE). Same mechanism as the library interposers (got_library.hpp).
#pragma once
#include <cuda.h>

#include <cstddef>

#include "got_patch.hpp"

namespace nanscope::graph_launch {

// choose(): on the launching thread, before the launch: the exec to launch in place of `exec`
// (itself when nothing changes). Must be thread-safe and never throw into the application.
struct LaunchSink {
  CUgraphExec (*choose)(void* ctx, CUgraphExec exec) = nullptr;
  void* ctx = nullptr;
};
// Never freed once set: a wrapper on another thread may still hold the previous one.
void set_launch_sink(const LaunchSink* sink);

const got::Hook* hooks(std::size_t* count);
// Patches every loaded importer of the four launch entry points, never libcudart, libcuda or
// nanscope. Cheap when nothing new was loaded.
got::Report patch_all(bool force = false);

// For tests: set an original directly (no GOT), get a wrapper by name.
bool set_original(const char* name, void* fn);
void* wrapper(const char* name);

}  // namespace nanscope::graph_launch

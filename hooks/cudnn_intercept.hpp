// Interception of cuDNN's backend API (cudnnBackend*): the descriptor calls that build a graph
// are recorded in one CudnnGraphs store (src/cudnn_graph.hpp); cudnnBackendExecute marks the
// calling thread as inside the call (hooks/library_call.hpp: the kernels it launches are its),
// calls the original and, on success, reports what the executed graph writes and reads to the
// registered sink. The wrappers never change arguments, results or status codes, never load a
// library, and only record when the original succeeded. Patched like the GEMM functions
// (hooks/got_patch.hpp); see docs/library-calls.md.
#pragma once
#include <cstdint>

#include "cudnn_graph.hpp"
#include "got_patch.hpp"
#include "library_call.hpp"

namespace nanscope::cudnn {

// One successful cudnnBackendExecute, as the sink sees it.
struct CudnnCall {
  const char* api = "cudnnBackendExecute";
  uint64_t call_id = 0;           // LibraryCall::call_id seen by the launch callback
  uint64_t stream = 0;            // the handle's stream (cudnnGetStream), 0: the legacy default stream
  uint32_t kernels_launched = 0;  // kernels the launch callback counted inside the call
  Execution execution;            // what the graph writes and reads, or why it cannot be mapped
};

// Called on the calling thread after the original returned success and the thread's marker was
// cleared; concurrently from several threads. fn == nullptr unregisters.
using CudnnSink = void (*)(void* ctx, const CudnnCall& call);
void set_cudnn_sink(CudnnSink fn, void* ctx);

// The descriptor store every wrapper reports to (never destroyed).
CudnnGraphs& graphs();

const got::Hook* hooks(std::size_t* count);
// Patches every loaded importer of the cudnnBackend* functions (libcudnn's own libraries are
// skipped) and finds cudnnGetStream beside the originals. Cheap when nothing new was loaded.
got::Report patch_all(bool force = false);

// For tests: set an original directly (no GOT), the cudnnGetStream the wrappers use, and get a
// wrapper to call. nullptr for an unknown name.
bool set_original(const char* name, void* fn);
void set_get_stream(void* cudnn_get_stream);
void* wrapper(const char* name);
// What dlsym hands a program looking `name` up (got::Library::adopt): the wrapper, or nullptr.
void* adopt(const char* name, void* fn);

}  // namespace nanscope::cudnn

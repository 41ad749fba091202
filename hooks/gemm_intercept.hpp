// Interception of the cuBLAS / cuBLASLt GEMM entry points: each wrapper marks the calling
// thread as inside the call (so the launch callback can give the kernels it launches to the
// call), calls the original, and on success reports D's pointer, type, layout and stream to
// the registered sink. The wrappers never change arguments, results or status codes, never
// load a library, and just call through when no sink is set. See docs/library-calls.md.
#pragma once
#include <cstdint>

#include "gemm_extent.hpp"
#include "got_patch.hpp"
#include "library_call.hpp"

namespace nanscope::gemm {

// The open call of a thread (and the kernels it launched) is hooks/library_call.hpp's marker,
// shared with the other intercepted libraries.

// The sink gets one GemmCall per successful intercepted call, on the calling thread, after
// the original returned and the thread's marker was cleared. fn == nullptr unregisters.
// Calls from several threads reach the sink concurrently: it must be thread-safe. It may
// launch (its launches are not counted as the call's: the marker is already cleared).
using GemmSink = void (*)(void* ctx, const GemmCall& call);
void set_gemm_sink(GemmSink fn, void* ctx);

// The hooks table (names, wrappers, originals) handed to got::patch_all.
const got::Hook* hooks(std::size_t* count);

// Patches every loaded importer of the GEMM functions (got::patch_all with the hooks above)
// and, once libcublas / libcublasLt are loaded, finds cublasGetStream_v2 and
// cublasLtMatrixLayoutGetAttribute in them (never loading them). Cheap when nothing new was
// loaded; call at init and whenever a new library may have arrived.
got::Report patch_all(bool force = false);

// For tests and the benchmark: set a hook's original directly (no GOT), the helper
// functions the wrappers use, and get a wrapper to call. nullptr for an unknown name.
bool set_original(const char* name, void* fn);
void set_helpers(void* cublas_get_stream, void* lt_layout_get_attribute);
void* wrapper(const char* name);
// What dlsym hands a program looking `name` up (got::Library::adopt): the wrapper, or nullptr.
void* adopt(const char* name, void* fn);

}  // namespace nanscope::gemm

// Library functions a program looks up at run time. jaxlib's XLA (xla_cuda_plugin.so) reaches
// cuBLAS, cuBLASLt, cuDNN and NCCL through lazily resolved trampolines: the first call of
// cublasLtMatmul asks dlsym(handle, "cublasLtMatmul") and keeps the pointer. No GOT slot names the
// function, so got::patch_all never sees the call (docs/library-calls.md, "Limits"). Here the
// `dlsym` import slots themselves are patched: a lookup through an explicit handle that finds a
// function one of the library interceptors hooks (gemm, cudnn, nccl) gets that interceptor's
// wrapper instead (got::Library::adopt), with the function as the wrapper's original; every
// other lookup gets exactly what dlsym found.
//
// RTLD_DEFAULT and RTLD_NEXT lookups depend on who calls dlsym (glibc reads its return address):
// the patched slot enters a stub that jumps straight to glibc's dlsym for those two handles, so
// the caller glibc sees is the program's own object. x86-64 Linux (glibc) only, as got_patch is.
#pragma once
#include <cstddef>
#include <span>

#include "got_patch.hpp"

namespace nanscope::dlsym_hook {

// One library interceptor's got::Library::adopt.
using Adopt = void* (*)(const char* name, void* fn);

// What a lookup of `name` that found `fn` returns: the first adopter's wrapper, or `fn` itself
// (also for names no intercepted library has: only "cublas*", "cudnn*" and "nccl*" are asked).
void* adopted(std::span<const Adopt> adopters, const char* name, void* fn);

// The hook table ("dlsym") handed to got::patch_all.
const got::Hook* hooks(std::size_t* count);

// Patches the dlsym slots of every loaded object except libnanscope, the intercepted libraries
// (libcudnn's shim looks its sub-libraries' functions up: one call, one report) and NVIDIA's
// driver and runtime libraries (libcuda, libcudart, libcupti, libnvidia-*, libnvrtc, libnvJitLink).
// Cheap when nothing new was loaded; call it where the library interceptors' patch_all is called.
got::Report patch_all(bool force = false);

}  // namespace nanscope::dlsym_hook

// The CUDA driver functions libnanscope calls, resolved from libcuda.so.1 when first called
// instead of through a DT_NEEDED entry. LD_PRELOAD puts the library into every process, most
// of which never touch CUDA, and on a machine without the driver a hard dependency made each
// of them fail to start (exit 127). Here a process without libcuda.so.1 loads the library
// fine; a call made anyway returns CUDA_ERROR_NOT_INITIALIZED and changes nothing.
//
// Each definition below takes the name cuda.h gives the function (cuMemAlloc is cuMemAlloc_v2),
// so the link-level symbol is the one the callers reference; the version script keeps them
// local, so they never interpose on the application's own calls into the driver. The list is
// the functions hooks/ and src/ call: a new call to one that is missing fails the link
// (-z defs), and its line is added here (the prototype copied from cuda.h).
#include <cuda.h>
#include <dlfcn.h>

#define NANSCOPE_DRIVER_STR2(x) #x
#define NANSCOPE_DRIVER_STR(x) NANSCOPE_DRIVER_STR2(x)

// X(name, (parameters), (arguments)), generated from cuda.h (CUDA 13).
#define NANSCOPE_DRIVER_FUNCTIONS(X) \
  X(cuCtxGetCurrent, (CUcontext *pctx), (pctx)) \
  X(cuCtxGetDevice, (CUdevice *device), (device)) \
  X(cuCtxPopCurrent, (CUcontext *pctx), (pctx)) \
  X(cuCtxPushCurrent, (CUcontext ctx), (ctx)) \
  X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev), (pi, attrib, dev)) \
  X(cuFuncGetModule, (CUmodule *hmod, CUfunction hfunc), (hmod, hfunc)) \
  X(cuFuncGetName, (const char **name, CUfunction hfunc), (name, hfunc)) \
  X(cuFuncGetParamInfo, (CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize), (func, paramIndex, paramOffset, paramSize)) \
  X(cuEventCreate, (CUevent *phEvent, unsigned int Flags), (phEvent, Flags)) \
  X(cuEventDestroy, (CUevent hEvent), (hEvent)) \
  X(cuEventQuery, (CUevent hEvent), (hEvent)) \
  X(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream)) \
  X(cuGetErrorName, (CUresult error, const char **pStr), (error, pStr)) \
  X(cuGraphAddDependencies, (CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies), (hGraph, from, to, edgeData, numDependencies)) \
  X(cuGraphAddKernelNode, (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams), (phGraphNode, hGraph, dependencies, numDependencies, nodeParams)) \
  X(cuGraphChildGraphNodeGetGraph, (CUgraphNode hNode, CUgraph *phGraph), (hNode, phGraph)) \
  X(cuGraphClone, (CUgraph *phGraphClone, CUgraph originalGraph), (phGraphClone, originalGraph)) \
  X(cuGraphDestroy, (CUgraph hGraph), (hGraph)) \
  X(cuGraphDestroyNode, (CUgraphNode hNode), (hNode)) \
  X(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec)) \
  X(cuGraphExecKernelNodeSetParams, (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams), (hGraphExec, hNode, nodeParams)) \
  X(cuGraphGetEdges, (CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData, size_t *numEdges), (hGraph, from, to, edgeData, numEdges)) \
  X(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes), (hGraph, nodes, numNodes)) \
  X(cuGraphInstantiate, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags), (phGraphExec, hGraph, flags)) \
  X(cuGraphKernelNodeGetParams, (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams), (hNode, nodeParams)) \
  X(cuGraphKernelNodeSetParams, (CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams), (hNode, nodeParams)) \
  X(cuGraphMemcpyNodeGetParams, (CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams), (hNode, nodeParams)) \
  X(cuGraphMemsetNodeGetParams, (CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams), (hNode, nodeParams)) \
  X(cuGraphNodeFindInClone, (CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph), (phNode, hOriginalNode, hClonedGraph)) \
  X(cuGraphNodeGetDependencies, (CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData, size_t *numDependencies), (hNode, dependencies, edgeData, numDependencies)) \
  X(cuGraphNodeGetDependentNodes, (CUgraphNode hNode, CUgraphNode *dependentNodes, CUgraphEdgeData *edgeData, size_t *numDependentNodes), (hNode, dependentNodes, edgeData, numDependentNodes)) \
  X(cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType *type), (hNode, type)) \
  X(cuGraphNodeSetEnabled, (CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled), (hGraphExec, hNode, isEnabled)) \
  X(cuGraphRemoveDependencies, (CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies), (hGraph, from, to, edgeData, numDependencies)) \
  X(cuKernelGetName, (const char **name, CUkernel hfunc), (name, hfunc)) \
  X(cuKernelGetParamInfo, (CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize), (kernel, paramIndex, paramOffset, paramSize)) \
  X(cuLaunchKernel, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra)) \
  X(cuMemAlloc, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize)) \
  X(cuMemFree, (CUdeviceptr dptr), (dptr)) \
  X(cuMemFreeHost, (void *p), (p)) \
  X(cuMemGetAddressRange, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr), (pbase, psize, dptr)) \
  X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags)) \
  X(cuMemHostGetDevicePointer, (CUdeviceptr *pdptr, void *p, unsigned int Flags), (pdptr, p, Flags)) \
  X(cuMemcpyDtoHAsync, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstHost, srcDevice, ByteCount, hStream)) \
  X(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream)) \
  X(cuModuleEnumerateFunctions, (CUfunction *functions, unsigned int numFunctions, CUmodule mod), (functions, numFunctions, mod)) \
  X(cuModuleGetFunction, (CUfunction *hfunc, CUmodule hmod, const char *name), (hfunc, hmod, name)) \
  X(cuModuleGetFunctionCount, (unsigned int *count, CUmodule mod), (count, mod)) \
  X(cuModuleLoadData, (CUmodule *module, const void *image), (module, image)) \
  X(cuModuleUnload, (CUmodule hmod), (hmod)) \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize), (numBlocks, func, blockSize, dynamicSMemSize)) \
  X(cuStreamCreate, (CUstream *phStream, unsigned int Flags), (phStream, Flags)) \
  X(cuStreamDestroy, (CUstream hStream), (hStream)) \
  X(cuStreamGetCaptureInfo, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out), (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out)) \
  X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus), (hStream, captureStatus)) \
  X(cuStreamSynchronize, (CUstream hStream), (hStream)) \
  X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *mode), (mode))

namespace {

// The driver, loaded once: the application's own copy when it has one (dlopen of a loaded
// library returns it), else the system's; null when there is none.
void* driver() {
  static void* const handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return handle;
}

void* driver_symbol(const char* name) {
  void* h = driver();
  return h ? dlsym(h, name) : nullptr;
}

// Without a driver nothing was initialised; with one that lacks the function (an older
// driver), it is not there.
CUresult unavailable() { return driver() ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_INITIALIZED; }

}  // namespace

#define NANSCOPE_DRIVER_FORWARD(name, params, args)                                             \
  extern "C" CUresult CUDAAPI name params {                                                     \
    using Fn = CUresult(CUDAAPI*) params;                                                       \
    static const Fn fn = reinterpret_cast<Fn>(driver_symbol(NANSCOPE_DRIVER_STR(name)));        \
    return fn ? fn args : unavailable();                                                        \
  }

NANSCOPE_DRIVER_FUNCTIONS(NANSCOPE_DRIVER_FORWARD)

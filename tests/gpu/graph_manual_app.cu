// Graphs built by hand (runtime graph API): a 3-kernel chain, a kernel node whose parameters
// are changed on the exec to point at another output (its scan merged with the next kernel's,
// so the merged node must follow), a child graph, and two kernel nodes joined by a programmatic
// (PDL) edge, as XLA's command buffers join the kernels it marks xla.pdl_launch. In each, NaN appears
// only in replay 3 of 10. Prints the buffers so run_gpu_test.py can check attribution.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "gpu_check.cuh"

__global__ void maybe_nan(float* out, const int* flag, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (*flag && i % 4 == 0) ? nanf("") : 1.0f;
}

__global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

namespace {
constexpr int kN = 1 << 14;

cudaKernelNodeParams kernel_params(void* fn, void** args) {
  cudaKernelNodeParams p{};
  p.func = fn;
  p.gridDim = dim3(kN / 256);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  return p;
}

// A graph of maybe_nan writing `out`, then scale reading it into `next`: over a full edge, or
// (`pdl`) a programmatic one. `first` is the maybe_nan node. Returns 1 on a CUDA error.
int nan_then_scale(float* out, float* next, int* flag, int n, bool pdl, cudaGraph_t& g, cudaGraphNode_t& first) {
  CHECK(cudaGraphCreate(&g, 0));
  void* a0[] = {&out, &flag, &n};
  void* a1[] = {&next, &out, &n};
  cudaKernelNodeParams p0 = kernel_params((void*)maybe_nan, a0), p1 = kernel_params((void*)scale, a1);
  cudaGraphNode_t second;
  CHECK(cudaGraphAddKernelNode(&first, g, nullptr, 0, &p0));
  CHECK(cudaGraphAddKernelNode(&second, g, pdl ? nullptr : &first, pdl ? 0 : 1, &p1));
  if (!pdl) return 0;
  cudaGraphEdgeData edge{};
  edge.from_port = cudaGraphKernelNodePortProgrammatic;
  edge.type = cudaGraphDependencyTypeProgrammatic;
  CHECK(cudaGraphAddDependencies(g, &first, &second, &edge, 1));
  return 0;
}

int replay(cudaGraphExec_t exec, cudaStream_t s, int* flag, const char* what) {
  for (int r = 0; r < 10; ++r) {
    const int v = r == 3;
    CHECK(cudaMemcpyAsync(flag, &v, sizeof v, cudaMemcpyHostToDevice, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
  }
  std::printf("graph_manual_app: %s replays=10\n", what);
  return 0;
}
}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  float *a, *b, *c, *other;
  int* flag;
  CHECK(cudaMalloc(&a, kN * 4));
  CHECK(cudaMalloc(&b, kN * 4));
  CHECK(cudaMalloc(&c, kN * 4));
  CHECK(cudaMalloc(&other, kN * 4));
  CHECK(cudaMalloc(&flag, 4));
  CHECK(cudaMemset(flag, 0, 4));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int n = kN;

  // 1. A chain of three kernel nodes: maybe_nan -> scale -> scale.
  {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    void* a0[] = {&a, &flag, &n};
    void* a1[] = {&b, &a, &n};
    void* a2[] = {&c, &b, &n};
    cudaKernelNodeParams p0 = kernel_params((void*)maybe_nan, a0), p1 = kernel_params((void*)scale, a1),
                         p2 = kernel_params((void*)scale, a2);
    cudaGraphNode_t n0, n1, n2;
    CHECK(cudaGraphAddKernelNode(&n0, g, nullptr, 0, &p0));
    CHECK(cudaGraphAddKernelNode(&n1, g, &n0, 1, &p1));
    CHECK(cudaGraphAddKernelNode(&n2, g, &n1, 1, &p2));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    std::printf("graph_manual_app: chain a=%p b=%p c=%p\n", (void*)a, (void*)b, (void*)c);
    if (replay(exec, s, flag, "chain")) return 1;
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  }
  // 2. The exec's first node is pointed at another output before replay 3. The second node
  // reads the old output (finite, as the chain left it) into b.
  {
    cudaGraph_t g;
    cudaGraphNode_t n0;
    if (nan_then_scale(a, b, flag, n, false, g, n0)) return 1;
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    void* a2[] = {&other, &flag, &n};
    cudaKernelNodeParams p2 = kernel_params((void*)maybe_nan, a2);
    CHECK(cudaGraphExecKernelNodeSetParams(exec, n0, &p2));
    std::printf("graph_manual_app: update old=%p new=%p\n", (void*)a, (void*)other);
    if (replay(exec, s, flag, "update")) return 1;
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  }
  // 3. A child graph holding the kernel.
  {
    cudaGraph_t child, parent;
    CHECK(cudaGraphCreate(&child, 0));
    CHECK(cudaGraphCreate(&parent, 0));
    void* a0[] = {&c, &flag, &n};
    cudaKernelNodeParams p0 = kernel_params((void*)maybe_nan, a0);
    cudaGraphNode_t k0, cn;
    CHECK(cudaGraphAddKernelNode(&k0, child, nullptr, 0, &p0));
    CHECK(cudaGraphAddChildGraphNode(&cn, parent, nullptr, 0, child));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, parent, 0));
    std::printf("graph_manual_app: child c=%p\n", (void*)c);
    if (replay(exec, s, flag, "child")) return 1;
    CHECK(cudaGraphExecDestroy(exec));
  }
  // 4. maybe_nan -> scale over a programmatic edge: asking a node's dependents without their edge
  // data is then a lossy query, and removing the edge needs its data.
  {
    cudaGraph_t g;
    cudaGraphNode_t n0;
    if (nan_then_scale(a, b, flag, n, true, g, n0)) return 1;
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    std::printf("graph_manual_app: pdl a=%p b=%p\n", (void*)a, (void*)b);
    if (replay(exec, s, flag, "pdl")) return 1;
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}

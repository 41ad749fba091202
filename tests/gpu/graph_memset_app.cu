// A buffer zeroed by a memset node inside a CUDA graph, then read by a kernel node that divides by
// its norm (as XLA's command buffers zero a while loop's carried state and normalise it): the
// reader gets no initial scan in a graph, so only the memset's own scan tells that x was clean and
// the division made the NaN. With --sick the epsilon is 0 (0 / 0 in every element). Two replays,
// then the exec's memset and kernel nodes move to a second pair of buffers (as XLA updates a
// command buffer when its allocations move; x2 holds NaN before its memset) and two more replays.
// The last line says where y and y2 are and what they hold.
// Usage: graph_memset_app [--sick]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "gpu_check.cuh"

__global__ void normalise(const float* x, float* y, int n, float eps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / sqrtf(x[i] * x[i] + eps);
}

__global__ void poison(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = nanf("");
}

namespace {
constexpr int kN = 1 << 14, kReplays = 2;

cudaMemsetParams zero_of(float* x) {
  cudaMemsetParams p{};
  p.dst = x, p.value = 0, p.elementSize = sizeof(float), p.width = kN, p.height = 1;
  return p;
}

cudaKernelNodeParams normalise_of(void** args) {
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(normalise);
  p.gridDim = dim3(kN / 256), p.blockDim = dim3(256), p.kernelParams = args;
  return p;
}

int count_nan(const float* d, double& finite_sum) {
  static float host[kN];
  CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
  int nan = 0;
  for (float v : host) std::isnan(v) ? ++nan : (finite_sum += v, 0);
  return nan;
}
}  // namespace

int main(int argc, char** argv) {
  const bool sick = argc > 1 && std::strcmp(argv[1], "--sick") == 0;
  float *x, *y, *x2, *y2;
  for (float** p : {&x, &y, &x2, &y2}) CHECK(cudaMalloc(p, kN * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  poison<<<kN / 256, 256, 0, s>>>(x2, kN);  // stale NaN the update's memset must clear

  int n = kN;
  float eps = sick ? 0.0f : 1e-6f;
  void* args[] = {&x, &y, &n, &eps};
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t zero_node, norm_node;
  const cudaMemsetParams zero = zero_of(x);
  const cudaKernelNodeParams norm = normalise_of(args);
  CHECK(cudaGraphAddMemsetNode(&zero_node, graph, nullptr, 0, &zero));
  CHECK(cudaGraphAddKernelNode(&norm_node, graph, &zero_node, 1, &norm));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < kReplays; ++r) CHECK(cudaGraphLaunch(exec, s));

  void* args2[] = {&x2, &y2, &n, &eps};
  const cudaMemsetParams zero2 = zero_of(x2);
  const cudaKernelNodeParams norm2 = normalise_of(args2);
  CHECK(cudaGraphExecMemsetNodeSetParams(exec, zero_node, &zero2));
  CHECK(cudaGraphExecKernelNodeSetParams(exec, norm_node, &norm2));
  for (int r = 0; r < kReplays; ++r) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));

  double sum = 0;
  const int nan = count_nan(y, sum), nan2 = count_nan(y2, sum);
  std::printf("graph_memset_app: y=%p y2=%p nan=%d nan2=%d finite_sum=%.6f\n", static_cast<void*>(y),
              static_cast<void*>(y2), nan, nan2, sum);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}

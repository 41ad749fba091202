// A while loop inside a CUDA graph (a conditional node, as XLA's command buffers and PyTorch's
// torch.cond under CUDA graphs make them): each iteration's body runs `halve_plus` on x in place,
// then `next_iteration` counts and sets the loop's condition on the device. With --sick, iteration
// 5 of every replay writes NaN into every 4th element (sqrt of a negative); the later iterations
// carry it. Three replays of 8 iterations. The last line says where x is and what it holds.
// Usage: graph_conditional_app [--sick]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "gpu_check.cuh"

__global__ void halve_plus(float* x, int n, const int* iter, int nan_at) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i] * 0.5f + 1.0f;
  if (*iter == nan_at && i % 4 == 0) v = sqrtf(-v);
  x[i] = v;
}

__global__ void next_iteration(int* iter, cudaGraphConditionalHandle loop, int iterations) {
  const int k = ++*iter;
  cudaGraphSetConditional(loop, k < iterations ? 1u : 0u);
}

namespace {
constexpr int kN = 1 << 14, kIterations = 8, kNanAt = 5, kReplays = 3;

cudaGraphNodeParams kernel_node(void* fn, void** args, unsigned grid) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = fn;
  p.kernel.gridDim = dim3(grid);
  p.kernel.blockDim = dim3(grid == 1 ? 1 : 256);
  p.kernel.kernelParams = args;
  return p;
}
}  // namespace

int main(int argc, char** argv) {
  const bool sick = argc > 1 && std::strcmp(argv[1], "--sick") == 0;
  float* x = nullptr;
  int* iter = nullptr;
  CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CHECK(cudaMalloc(&iter, sizeof(int)));
  CHECK(cudaMemset(x, 0, kN * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));

  // memset(iter = 0) -> while (condition) { halve_plus; next_iteration }
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle loop;
  CHECK(cudaGraphConditionalHandleCreate(&loop, graph, 1, cudaGraphCondAssignDefault));
  cudaMemsetParams reset{};
  reset.dst = iter, reset.value = 0, reset.elementSize = sizeof(int), reset.width = 1, reset.height = 1;
  cudaGraphNode_t reset_node, while_node;
  CHECK(cudaGraphAddMemsetNode(&reset_node, graph, nullptr, 0, &reset));
  cudaGraphNodeParams cond{};
  cond.type = cudaGraphNodeTypeConditional;
  cond.conditional.handle = loop;
  cond.conditional.type = cudaGraphCondTypeWhile;
  cond.conditional.size = 1;
  CHECK(cudaGraphAddNode(&while_node, graph, &reset_node, nullptr, 1, &cond));
  cudaGraph_t body = cond.conditional.phGraph_out[0];

  int n = kN, nan_at = sick ? kNanAt : -1, iterations = kIterations;
  void* step_args[] = {&x, &n, &iter, &nan_at};
  void* next_args[] = {&iter, &loop, &iterations};
  cudaGraphNodeParams step = kernel_node((void*)halve_plus, step_args, kN / 256);
  cudaGraphNodeParams next = kernel_node((void*)next_iteration, next_args, 1);
  cudaGraphNode_t step_node, next_node;
  CHECK(cudaGraphAddNode(&step_node, body, nullptr, nullptr, 0, &step));
  CHECK(cudaGraphAddNode(&next_node, body, &step_node, nullptr, 1, &next));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < kReplays; ++r) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));

  static float host[kN];
  int done = 0;
  CHECK(cudaMemcpy(host, x, sizeof host, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&done, iter, sizeof done, cudaMemcpyDeviceToHost));
  int nan = 0;
  double sum = 0;
  for (float v : host) std::isnan(v) ? ++nan : (sum += v, 0);
  std::printf("graph_conditional_app: x=%p iterations=%d nan=%d finite_sum=%.6f\n", static_cast<void*>(x), done,
              nan, sum);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}

// A captured graph that forks onto a second stream and joins again:
//   left (stream s, writes a)   right (stream s2, writes b)   ->   combine (s, c = a + b)
// Replayed 10 times; left makes NaN in replay 3 only, right in replay 6 only. nanscope merges the
// three scans (two of them on parallel branches) into one node, which must still say which kernel,
// node and replay each NaN came from, and that combine only passed it on. Prints the graph's node
// count after instantiation and a checksum of c over all replays.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_check.cuh"

constexpr int kN = 1 << 14;

__global__ void left(float* a, const int* flag, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = (*flag == 1 && i % 8 == 0) ? nanf("") : 1.0f;
}

__global__ void right(float* b, const int* flag, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = (*flag == 2 && i % 16 == 0) ? nanf("") : 2.0f;
}

__global__ void combine(float* c, const float* a, const float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "graph_fork_app: no CUDA device\n");
    return 77;
  }
  float *a, *b, *c;
  int* flag;
  CHECK(cudaMalloc(&a, kN * sizeof(float)));
  CHECK(cudaMalloc(&b, kN * sizeof(float)));
  CHECK(cudaMalloc(&c, kN * sizeof(float)));
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMemset(flag, 0, sizeof(int)));
  cudaStream_t s, s2;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  left<<<kN / 256, 256, 0, s>>>(a, flag, kN);
  CHECK(cudaEventRecord(fork, s));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  right<<<kN / 256, 256, 0, s2>>>(b, flag, kN);
  CHECK(cudaEventRecord(join, s2));
  CHECK(cudaStreamWaitEvent(s, join, 0));
  combine<<<kN / 256, 256, 0, s>>>(c, a, b, kN);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));

  uint64_t checksum = 1469598103934665603ull;
  std::vector<float> host(kN);
  for (int r = 0; r < 10; ++r) {
    const int v = r == 3 ? 1 : r == 6 ? 2 : 0;
    CHECK(cudaMemcpyAsync(flag, &v, sizeof v, cudaMemcpyHostToDevice, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(host.data(), c, kN * sizeof(float), cudaMemcpyDeviceToHost));
    for (float x : host) {
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      checksum = (checksum ^ bits) * 1099511628211ull;
    }
  }
  std::printf("graph_fork_app: nodes=%zu replays=10 checksum=%016llx\n", nodes, (unsigned long long)checksum);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}

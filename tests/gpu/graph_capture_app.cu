// A captured graph replayed 10 times, with NaN produced only in replay 3. Runs the capture
// once per capture mode (global, thread-local, relaxed). Used by tests/gpu/run_gpu_test.py.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "gpu_check.cuh"

__global__ void maybe_nan(float* out, const int* flag, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (*flag && i % 2 == 0) ? nanf("") : 1.0f;
}

__global__ void scale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "graph_capture_app: no CUDA device\n");
    return 0;
  }
  const int n = 1 << 16;
  const cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                         cudaStreamCaptureModeRelaxed};
  const char* names[] = {"global", "thread_local", "relaxed"};
  for (int m = 0; m < 3; ++m) {
    float *out = nullptr, *y = nullptr;
    int* flag = nullptr;
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&flag, sizeof(int)));
    CHECK(cudaMemset(flag, 0, sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, modes[m]));
    maybe_nan<<<n / 256, 256, 0, s>>>(out, flag, n);
    scale<<<n / 256, 256, 0, s>>>(y, out, n);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    for (int r = 0; r < 10; ++r) {
      const int value = r == 3;
      CHECK(cudaMemcpyAsync(flag, &value, sizeof(int), cudaMemcpyHostToDevice, s));
      CHECK(cudaGraphLaunch(exec, s));
      CHECK(cudaStreamSynchronize(s));
    }
    std::printf("graph_capture_app: mode=%s nodes=%zu replays=10\n", names[m], nodes);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(out));
    CHECK(cudaFree(y));
    CHECK(cudaFree(flag));
  }
  return 0;
}

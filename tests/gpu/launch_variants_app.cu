// Launch forms nanscope hooks that the other GPU apps do not use: the driver's `extra`
// parameter buffer, cooperative launches, per-thread default-stream launches (this file is also
// built with --default-stream per-thread as launch_variants_ptsz_app), and a burst of findings
// that overflows a small device->host channel.
// Usage: launch_variants_app extra|cooperative|ptsz|overflow
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_check.cuh"

// Finite values everywhere except a NaN at `bad`, computed at run time (0/0).
__global__ void make_nan(float* out, int n, int bad) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float zero = static_cast<float>(i == bad) * 0.0f;
    out[i] = i == bad ? zero / zero : 1.0f + i;
  }
}

namespace {

constexpr int kN = 1024;

// The host copy of `d` holds a NaN at `bad` and only there.
bool nan_only_at(const float* d, int bad) {
  std::vector<float> h(kN);
  if (cudaMemcpy(h.data(), d, kN * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (int i = 0; i < kN; ++i)
    if (std::isnan(h[i]) != (i == bad)) return false;
  return true;
}

int run(const char* mode) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, kN * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  int bad = -1;
  if (!std::strcmp(mode, "extra")) {
    bad = 5;
    cudaFunction_t f = nullptr;
    CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(make_nan)));
    struct {
      float* out;
      int n, bad;
    } args{d, kN, bad};
    size_t size = sizeof(args);
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    if (cuLaunchKernel(reinterpret_cast<CUfunction>(f), 4, 1, 1, 128, 1, 1, 0, s, nullptr, extra) != CUDA_SUCCESS) {
      std::fprintf(stderr, "launch_variants: cuLaunchKernel with extra failed\n");
      return 1;
    }
  } else if (!std::strcmp(mode, "cooperative")) {
    bad = 6;
    int n = kN;
    void* args[] = {&d, &n, &bad};
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(make_nan), dim3(4), dim3(128), args, 0, s));
  } else if (!std::strcmp(mode, "ptsz")) {
    bad = 7;
    make_nan<<<4, 128>>>(d, kN, bad);  // the default stream: per-thread in the ptsz build
    CHECK(cudaGetLastError());
  } else if (!std::strcmp(mode, "overflow")) {
    constexpr int kBuffers = 300;
    std::vector<float*> bufs(kBuffers);
    for (auto& b : bufs) CHECK(cudaMalloc(&b, kN * sizeof(float)));
    for (int i = 0; i < kBuffers; ++i) make_nan<<<4, 128, 0, s>>>(bufs[i], kN, i % kN);
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < kBuffers; ++i)
      if (!nan_only_at(bufs[i], i % kN)) {
        std::fprintf(stderr, "launch_variants: buffer %d is wrong\n", i);
        return 1;
      }
    std::printf("launch_variants: overflow launches=%d\n", kBuffers);
    for (auto& b : bufs) CHECK(cudaFree(b));
  } else {
    std::fprintf(stderr, "usage: launch_variants_app extra|cooperative|ptsz|overflow\n");
    return 2;
  }
  CHECK(cudaDeviceSynchronize());
  if (bad >= 0 && !nan_only_at(d, bad)) {
    std::fprintf(stderr, "launch_variants: %s: the NaN is not where it belongs\n", mode);
    return 1;
  }
  std::printf("launch_variants: %s ok\n", mode);
  CHECK(cudaFree(d));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "launch_variants: no CUDA device\n");
    return 77;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: launch_variants_app extra|cooperative|ptsz|overflow\n");
    return 2;
  }
  return run(argv[1]);
}

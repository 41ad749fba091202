// The host cost of one more launch, with no tool attached: the floor under nanscope's cost per
// scanned launch (its scan is a second launch on the app's stream, right after the kernel).
// Runtime and driver launches, the scan kernel's 360-byte parameter against an 8-byte one, an app
// launch followed by the scan launch, the capture-state query the hook makes, and the scan handed
// to a helper thread (the app waits for it before its next launch). docs/bench-history.md, runs S6-2/S6-3.
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "host_timing.hpp"
#include "scan_abi.h"

extern const unsigned char nanscope_kernels_fatbin[];

__global__ void two_outputs(float* a, float* b, int n) {
  if (n < 0 && threadIdx.x == 0) a[0] = b[0] = 0.f;
}
__global__ void empty8(long long x) {
  if (x == -1) printf("x");
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "launch_floor: no CUDA device\n");
    return 0;
  }
  float *a = nullptr, *b = nullptr;
  void* accum = nullptr;
  cudaMalloc(&a, 4096);
  cudaMalloc(&b, 4096);
  cudaMalloc(&accum, sizeof(nanscope_scan_accum));
  cudaMemset(accum, 0, sizeof(nanscope_scan_accum));
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  CUmodule mod = nullptr;
  CUfunction scan = nullptr;
  cudaFunction_t two = nullptr, empty = nullptr;
  if (cuModuleLoadData(&mod, nanscope_kernels_fatbin) != CUDA_SUCCESS ||
      cuModuleGetFunction(&scan, mod, "nanscope_scan") != CUDA_SUCCESS ||
      cudaGetFuncBySymbol(&two, reinterpret_cast<const void*>(two_outputs)) != cudaSuccess ||
      cudaGetFuncBySymbol(&empty, reinterpret_cast<const void*>(empty8)) != cudaSuccess) {
    std::fprintf(stderr, "launch_floor: could not load the kernels\n");
    return 1;
  }
  nanscope_scan_task_head task{};  // no buffers: the scan kernel only bumps its accumulator
  task.accum = static_cast<nanscope_scan_accum*>(accum);
  int n = 1024;
  long long x = 1;
  void* two_args[] = {&a, &b, &n};
  void* scan_args[] = {&task};
  void* empty_args[] = {&x};
  CUstream s = nullptr;
  auto launch_scan = [&] { cuLaunchKernel(scan, 1, 1, 1, 256, 1, 1, 0, s, scan_args, nullptr); };

  std::atomic<uint64_t> posted{0}, done{0};
  std::atomic<bool> stop{false};
  std::thread helper([&] {
    cuCtxSetCurrent(ctx);
    for (uint64_t seen = 0; !stop.load(std::memory_order_relaxed);) {
      if (posted.load(std::memory_order_acquire) == seen) continue;
      launch_scan();
      done.store(++seen, std::memory_order_release);
    }
  });
  for (int rep = 0; rep < 3; ++rep) {
    const double runtime = median_us_per_call([&] { two_outputs<<<1, 32>>>(a, b, n); });
    const double driver = median_us_per_call([&] { cuLaunchKernel((CUfunction)two, 1, 1, 1, 32, 1, 1, 0, s, two_args, nullptr); });
    const double scan360 = median_us_per_call(launch_scan);
    const double empty_8 = median_us_per_call([&] { cuLaunchKernel((CUfunction)empty, 1, 1, 1, 256, 1, 1, 0, s, empty_args, nullptr); });
    const double pair = median_us_per_call([&] {
      two_outputs<<<1, 32>>>(a, b, n);
      launch_scan();
    });
    CUstreamCaptureStatus status;
    cuuint64_t id;
    const CUgraphNode* deps;
    size_t ndeps;
    const double capture = median_us_per_call([&] { cuStreamGetCaptureInfo(s, &status, &id, nullptr, &deps, nullptr, &ndeps); });
    const double handoff = median_us_per_call([&] {
      const uint64_t p = posted.load(std::memory_order_relaxed);
      while (done.load(std::memory_order_acquire) != p) {
      }
      two_outputs<<<1, 32>>>(a, b, n);
      posted.store(p + 1, std::memory_order_release);
    });
    while (done.load() != posted.load()) {
    }
    std::printf("launch_floor runtime_us=%.3f driver_us=%.3f scan_360B_us=%.3f empty_8B_us=%.3f app_then_scan_us=%.3f "
                "capture_info_us=%.3f helper_thread_us=%.3f\n",
                runtime, driver, scan360, empty_8, pair, capture, handoff);
  }
  stop = true;
  helper.join();
  return 0;
}

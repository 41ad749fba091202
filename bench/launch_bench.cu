// Host cost of a kernel launch, run once plainly and once under nanscope (the run script
// does both and prints the difference). Times only the launch calls, in batches of 200
// between synchronisations, and reports the median batch. `extra_launch_us` is what one more
// launch (a kernel with nothing to scan) adds to each launch of `two_outputs`: in the plain run,
// the floor of any tool that launches a scan after the kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void nothing_to_scan(int x) {
  if (x == -12345) printf("never\n");
}

__global__ void two_outputs(float* a, float* b, int n) {
  if (n < 0 && threadIdx.x == 0) a[0] = b[0] = 0.f;
}

template <typename F>
double median_us_per_launch(F&& launch) {
  constexpr int kBatch = 200, kBatches = 60;
  for (int i = 0; i < 1000; ++i) launch();
  cudaDeviceSynchronize();
  std::vector<double> per;
  for (int b = 0; b < kBatches; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) launch();
    auto t1 = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "launch_bench: no CUDA device\n");
    return 0;
  }
  float *a = nullptr, *b = nullptr;
  cudaMalloc(&a, 4096);
  cudaMalloc(&b, 4096);
  cudaMemset(a, 0, 4096);
  cudaMemset(b, 0, 4096);
  const char* mode = std::getenv("CUDA_INJECTION64_PATH") ? "nanscope" : "plain";
  const double none = median_us_per_launch([] { nothing_to_scan<<<1, 32>>>(1); });
  const double two = median_us_per_launch([&] { two_outputs<<<1, 32>>>(a, b, 1024); });
  const double pair = median_us_per_launch([&] {
    two_outputs<<<1, 32>>>(a, b, 1024);
    nothing_to_scan<<<1, 32>>>(1);
  });
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("launch_bench %s nothing_to_scan_us=%.3f two_outputs_us=%.3f extra_launch_us=%.3f\n", mode, none, two,
              pair - two);
  return 0;
}

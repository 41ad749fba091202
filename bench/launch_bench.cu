// Host cost of a kernel launch, run once plainly and once under nanscope (the run script
// does both and prints the difference). Times only the launch calls, in batches of 200
// between synchronisations, and reports the median batch. `extra_launch_us` is what one more
// launch (a kernel with nothing to scan) adds to each launch of `two_outputs`: in the plain run,
// the floor of any tool that launches a scan after the kernel. `distinct_outputs_us` is the
// same kernel writing a new pair of buffers each launch (8 pairs in turn, as a chain of layers
// does), whose scans NANSCOPE_EAGER_BATCH holds and launches four kernels' at a time.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "host_timing.hpp"

__global__ void nothing_to_scan(int x) {
  if (x == -12345) printf("never\n");
}

__global__ void two_outputs(float* a, float* b, int n) {
  if (n < 0 && threadIdx.x == 0) a[0] = b[0] = 0.f;
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
  float* pairs[16];
  for (float*& p : pairs) {
    cudaMalloc(&p, 4096);
    cudaMemset(p, 0, 4096);
  }
  const char* mode = std::getenv("CUDA_INJECTION64_PATH") ? "nanscope" : "plain";
  const double none = median_us_per_call([] { nothing_to_scan<<<1, 32>>>(1); });
  const double two = median_us_per_call([&] { two_outputs<<<1, 32>>>(a, b, 1024); });
  const double pair = median_us_per_call([&] {
    two_outputs<<<1, 32>>>(a, b, 1024);
    nothing_to_scan<<<1, 32>>>(1);
  });
  int turn = 0;
  const double distinct = median_us_per_call([&] {
    two_outputs<<<1, 32>>>(pairs[2 * turn], pairs[2 * turn + 1], 1024);
    turn = (turn + 1) % 8;
  });
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("launch_bench %s nothing_to_scan_us=%.3f two_outputs_us=%.3f extra_launch_us=%.3f distinct_outputs_us=%.3f\n",
              mode, none, two, pair - two, distinct);
  return 0;
}

// Error checks and event timing for the CUDA benchmarks in bench/ (scan_bench_common.hpp,
// graph_topology.cu): a failed call prints where and exits, since a benchmark that goes on
// after an error measures nothing.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define CU(x)                                                          \
  do {                                                                 \
    CUresult r_ = (x);                                                 \
    if (r_ != CUDA_SUCCESS) {                                          \
      std::fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)r_); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

namespace {

// Median time of `launch` on `s`; `prepare` runs before each launch, outside the timed span (it
// restores what a fixing scan zeroed).
template <typename P, typename F>
float median_prepared_ms(P&& prepare, F&& launch, int reps, cudaStream_t s) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) prepare(), launch();
  CK(cudaStreamSynchronize(s));
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    prepare();
    CK(cudaEventRecord(a, s));
    launch();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename F>
float median_ms(F&& launch, int reps, cudaStream_t s) {
  return median_prepared_ms([] {}, launch, reps, s);
}

}  // namespace

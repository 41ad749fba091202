// Host time of a call that enqueues GPU work (a launch, a driver query), shared by the launch
// benchmarks: 60 batches of 200 calls after 1,000 warm-up calls, synchronising the device between
// batches and timing only the calls; returns the median batch in us per call.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <vector>

template <typename F>
double median_us_per_call(F&& call) {
  constexpr int kBatch = 200, kBatches = 60;
  for (int i = 0; i < 1000; ++i) call();
  cudaDeviceSynchronize();
  std::vector<double> per;
  for (int b = 0; b < kBatches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

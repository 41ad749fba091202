// What the scan benchmarks share (bench/scan_bench.cu, bench/scan_bench_density.cu): fills,
// the read roofline kernel, a channel and tasks for the embedded scan kernels, and graph replay
// timing (error checks and event timing: bench_cuda.hpp).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_cuda.hpp"
#include "scan_abi.h"
#include "scan_launch.hpp"

extern "C" {
extern const unsigned char nanscope_kernels_fatbin[];
}

namespace {

__global__ void fill_random(uint32_t* p, size_t words, uint32_t seed, uint32_t mask, uint32_t bits) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (x & mask) | bits;  // finite values: exponent bits never all ones
  }
}

__global__ void xor_reduce(const uint4* p, size_t n, unsigned* out) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = __ldcs(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) atomicAdd(out, 1u);  // keeps the loads alive
}

__global__ void empty_kernel() {}

struct Channel {
  nanscope_channel_host* host = nullptr;
  CUdeviceptr host_dev = 0;
  nanscope_channel_dev* dev = nullptr;
  nanscope_scan_accum* accum = nullptr;
};

Channel make_channel(unsigned accums) {
  Channel c;
  const size_t bytes = sizeof(nanscope_channel_host) + 1024 * sizeof(nanscope_record);
  CK(cudaHostAlloc((void**)&c.host, bytes, cudaHostAllocMapped));
  std::memset(c.host, 0, bytes);
  c.host->capacity = 1024;
  void* d = nullptr;
  CK(cudaHostGetDevicePointer(&d, c.host, 0));
  c.host_dev = (CUdeviceptr)d;
  CK(cudaMalloc(&c.dev, sizeof(nanscope_channel_dev)));
  CK(cudaMemset(c.dev, 0, sizeof(nanscope_channel_dev)));
  CK(cudaMalloc(&c.accum, accums * sizeof(nanscope_scan_accum)));
  CK(cudaMemset(c.accum, 0, accums * sizeof(nanscope_scan_accum)));
  return c;
}

nanscope_scan_task make_task(const Channel& c, unsigned accum_index, const void* ptr, uint64_t elements, uint32_t dtype) {
  nanscope_scan_task t{};
  t.buffers[0] = {(uint64_t)ptr, elements, dtype, 0};
  t.buffer_count = 1;
  t.accum = c.accum + accum_index;
  t.channel_dev = c.dev;
  t.channel_host = (nanscope_channel_host*)c.host_dev;
  t.records = (nanscope_record*)(c.host_dev + sizeof(nanscope_channel_host));
  t.channel_capacity = c.host->capacity;
  return t;
}

// Captures what `record` launches on `s` into a graph; returns the graph's median replay time.
template <typename Record>
float graph_replay_ms(cudaStream_t s, Record&& record) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  record();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  const float ms = median_ms([&] { CK(cudaGraphLaunch(ge, s)); }, 30, s);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return ms;
}

}  // namespace

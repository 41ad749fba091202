// What the scan-kernel layer tests (scan_kernel_test.cu, scan_density_test.cu) share: the skip
// without a GPU, and a channel (mapped host ring, device control block, one accumulator) that the
// embedded kernels publish into.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "scan_abi.h"

// False, having said so, when no CUDA device is visible (the test then exits 77).
inline bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("skip: no CUDA device\n");
    return false;
  }
  cudaFree(nullptr);
  return true;
}

struct TestChannel {
  uint64_t cap = 0;
  nanscope_channel_host* host = nullptr;
  volatile nanscope_record* records = nullptr;
  char* host_dev = nullptr;  // the ring's device address
  nanscope_channel_dev* ctrl = nullptr;
  nanscope_scan_accum* acc = nullptr;
  nanscope_channel_host* dev_header() const { return reinterpret_cast<nanscope_channel_host*>(host_dev); }
  nanscope_record* dev_records() const { return reinterpret_cast<nanscope_record*>(host_dev + sizeof(nanscope_channel_host)); }
};

inline TestChannel make_test_channel(uint64_t cap) {
  TestChannel c;
  c.cap = cap;
  const size_t bytes = sizeof(nanscope_channel_host) + cap * sizeof(nanscope_record);
  cudaHostAlloc((void**)&c.host, bytes, cudaHostAllocMapped);
  std::memset(c.host, 0, bytes);
  c.host->capacity = cap;
  c.records = reinterpret_cast<volatile nanscope_record*>(c.host + 1);
  cudaHostGetDevicePointer((void**)&c.host_dev, c.host, 0);
  cudaMalloc(&c.ctrl, sizeof(*c.ctrl));
  cudaMemset(c.ctrl, 0, sizeof(*c.ctrl));
  cudaMalloc(&c.acc, sizeof(*c.acc));
  cudaMemset(c.acc, 0, sizeof(*c.acc));
  return c;
}

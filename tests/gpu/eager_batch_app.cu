// Held eager scans (NANSCOPE_EAGER_BATCH): programs whose findings must be the same with the
// scans held and launched together as with one scan per launch. run_gpu_test.py (eager_batch)
// runs each mode with batching on and off and compares the findings and their origins.
//
//   eager_batch_app chain|overwrite|streams|sync
// chain: a typed chain of 20 kernels, each writing its own buffer (so the scans are held, 8
//   buffers a launch); layer 3 computes 0/0, every later layer propagates it.
// overwrite: a kernel writes NaN and the next one on the stream overwrites the same buffer with
//   finite values, four ways: a typed kernel, an untyped one (nanscope cannot see into it), a
//   memset and a host copy. Each first NaN must still be reported.
// streams: two streams joined by an event: A writes NaN into x and records E; B waits for E,
//   reads x into y (propagated from A's finding) and then overwrites x.
// sync: NaN written into managed memory, the stream synchronised, then the host overwrites it
//   with finite values: the held scan must have run at the synchronisation.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gpu_check.cuh"

constexpr int kN = 4096;

__global__ void fill(float* y, float v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = v;
}

// y = x * s / z: z = 0 in the first `bad` elements makes 0/0 when x is 0 there (computed at run time).
__global__ void scale_div(float* y, const float* x, float s, const float* z, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] * s / z[i];
}

__global__ void step(float* y, const float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] * 0.5f + 1.0f;
}

// Untyped: nanscope cannot tell what it writes.
__global__ void opaque_fill(void* y, int n) {
  float* out = static_cast<float*>(y);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = 3.0f;
}

namespace {

int chain() {
  constexpr int kLayers = 20;
  std::vector<float*> b(kLayers + 1);
  float *z = nullptr, *zeros = nullptr;
  for (float*& p : b) CHECK(cudaMalloc(&p, kN * 4));
  CHECK(cudaMalloc(&z, kN * 4));
  CHECK(cudaMalloc(&zeros, kN * 4));
  fill<<<8, 256>>>(b[0], 1.0f, kN);
  fill<<<8, 256>>>(zeros, 0.0f, kN);
  fill<<<8, 256>>>(z, 0.0f, 64);  // the first 64 divisors are zero
  fill<<<8, 256>>>(z + 64, 1.0f, kN - 64);
  for (int k = 0; k < kLayers; ++k) {
    if (k == 3) scale_div<<<8, 256>>>(b[k + 1], zeros, 1.0f, z, kN);  // 0/0 in 64 elements
    else step<<<8, 256>>>(b[k + 1], b[k], kN);
  }
  float host = 0;
  CHECK(cudaMemcpy(&host, b[kLayers], 4, cudaMemcpyDeviceToHost));
  std::printf("eager_batch: chain done last=%f\n", host);
  return 0;
}

int overwrite() {
  float *x = nullptr, *z = nullptr, *zeros = nullptr;
  CHECK(cudaMalloc(&x, kN * 4));
  CHECK(cudaMalloc(&z, kN * 4));
  CHECK(cudaMalloc(&zeros, kN * 4));
  fill<<<8, 256>>>(zeros, 0.0f, kN);
  fill<<<8, 256>>>(z, 0.0f, 16);
  fill<<<8, 256>>>(z + 16, 1.0f, kN - 16);
  std::vector<float> ones(kN, 1.0f);
  for (int how = 0; how < 4; ++how) {
    scale_div<<<8, 256>>>(x, zeros, 1.0f, z, kN);  // NaN in 16 elements of x
    switch (how) {
      case 0: fill<<<8, 256>>>(x, 2.0f, kN); break;  // typed, writes x
      case 1: opaque_fill<<<8, 256>>>(x, kN); break;  // untyped
      case 2: CHECK(cudaMemsetAsync(x, 0, kN * 4)); break;
      case 3: CHECK(cudaMemcpyAsync(x, ones.data(), kN * 4, cudaMemcpyHostToDevice)); break;
    }
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("eager_batch: overwrite done\n");
  return 0;
}

int streams() {
  cudaStream_t a, bs;
  cudaEvent_t e;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&bs, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  float *x = nullptr, *y = nullptr, *w = nullptr, *z = nullptr, *zeros = nullptr;
  for (float** p : {&x, &y, &w, &z, &zeros}) CHECK(cudaMalloc(p, kN * 4));
  fill<<<8, 256, 0, a>>>(zeros, 0.0f, kN);
  fill<<<8, 256, 0, a>>>(z, 0.0f, 32);
  fill<<<8, 256, 0, a>>>(z + 32, 1.0f, kN - 32);
  scale_div<<<8, 256, 0, a>>>(x, zeros, 1.0f, z, kN);  // A: NaN into x, held
  step<<<8, 256, 0, a>>>(w, zeros, kN);                 // A: more held work
  CHECK(cudaEventRecord(e, a));
  CHECK(cudaStreamWaitEvent(bs, e, 0));
  step<<<8, 256, 0, bs>>>(y, x, kN);  // B: reads x: propagated from A's finding
  fill<<<8, 256, 0, bs>>>(x, 5.0f, kN);  // B: overwrites x
  CHECK(cudaStreamSynchronize(bs));
  CHECK(cudaStreamSynchronize(a));
  std::printf("eager_batch: streams done\n");
  return 0;
}

int sync() {
  float *x = nullptr, *z = nullptr, *zeros = nullptr;
  CHECK(cudaMallocManaged(&x, kN * 4));
  CHECK(cudaMalloc(&z, kN * 4));
  CHECK(cudaMalloc(&zeros, kN * 4));
  fill<<<8, 256>>>(zeros, 0.0f, kN);
  fill<<<8, 256>>>(z, 0.0f, 8);
  fill<<<8, 256>>>(z + 8, 1.0f, kN - 8);
  scale_div<<<8, 256>>>(x, zeros, 1.0f, z, kN);  // NaN into managed x
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < kN; ++i) x[i] = 1.0f;  // the host overwrites it: no CUDA call
  step<<<8, 256>>>(zeros, x, kN);  // reads the now finite x
  CHECK(cudaDeviceSynchronize());
  std::printf("eager_batch: sync done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "chain") return chain();
  if (mode == "overwrite") return overwrite();
  if (mode == "streams") return streams();
  if (mode == "sync") return sync();
  std::fprintf(stderr, "usage: eager_batch_app chain|overwrite|streams|sync\n");
  return 2;
}

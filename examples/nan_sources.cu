// Small kernels that make NaN/Inf the way real code does, plus one clean kernel.
// Run it under nanscope:   nanscope -- ./nan_sources
// It prints a checksum of every output so runs with and without nanscope can be compared.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

// 1. Masked softmax over a padded batch: a row with seq_len 0 is fully masked, so its max is
//    -inf and exp(-inf - -inf) = exp(NaN): 0/0 in every element of the padding row.
__global__ void masked_softmax(float* out, const float* scores, const int* seq_lens, int rows, int cols) {
  int r = blockIdx.x;
  if (r >= rows || threadIdx.x != 0) return;
  float mx = -INFINITY;
  for (int c = 0; c < cols; ++c) {
    float s = c < seq_lens[r] ? scores[r * cols + c] : -INFINITY;
    mx = fmaxf(mx, s);
  }
  float sum = 0.f;
  for (int c = 0; c < cols; ++c) {
    float s = c < seq_lens[r] ? scores[r * cols + c] : -INFINITY;
    sum += expf(s - mx);
  }
  for (int c = 0; c < cols; ++c) {
    float s = c < seq_lens[r] ? scores[r * cols + c] : -INFINITY;
    out[r * cols + c] = expf(s - mx) / sum;
  }
}

// 2. fp16 overflow: a scale pushes values past 65504 (+Inf), and Inf - Inf is NaN.
__global__ void fp16_scale_and_center(__half* scaled, __half* centered, const float* in, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half h = __float2half(in[i] * scale);
  scaled[i] = h;
  centered[i] = __hsub(h, h);
}

// 3. log of a negative number (NaN) and of zero (-Inf).
__global__ void log_probs(float* out, const float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = logf(p[i]);
}

// 4. sqrt of a negative variance, in double.
__global__ void stddev(double* out, const double* var, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = sqrt(var[i]);
}

// 5. fp8 conversion of out-of-range values without saturation: NaN in e4m3fn, ±Inf in e5m2.
__global__ void quantize_e4m3(__nv_fp8_e4m3* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i].__x = __nv_cvt_float_to_fp8(in[i], __NV_NOSAT, __NV_E4M3);
}
__global__ void quantize_e5m2(__nv_fp8_e5m2* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i].__x = __nv_cvt_float_to_fp8(in[i], __NV_NOSAT, __NV_E5M2);
}

// 6. A read of a buffer nobody initialised (filled with the 0xFF NaN pattern here).
__global__ void gather_rows(__nv_bfloat16* out, const __nv_bfloat16* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// 7. A clean kernel: nanscope must stay silent.
__global__ void axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

namespace {
uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

template <typename T>
T* upload(const std::vector<T>& host) {
  T* d = nullptr;
  if (cudaMalloc(&d, host.size() * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

template <typename T>
T* alloc(size_t n) {
  T* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemset(d, 0, n * sizeof(T));
  return d;
}
}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "nan_sources: no CUDA device found: nothing to run\n");
    return 0;
  }
  // 1. softmax: 8 rows x 64, rows 2, 4, 5 are padding (seq_len 0): 192 NaN.
  const int rows = 8, cols = 64;
  std::vector<float> scores(rows * cols);
  for (int i = 0; i < rows * cols; ++i) scores[i] = 0.01f * static_cast<float>(i % 97);
  std::vector<int> seq_lens = {5, 3, 0, 7, 0, 0, 64, 1};
  float* d_scores = upload(scores);
  int* d_seq = upload(seq_lens);
  float* d_probs = alloc<float>(rows * cols);
  masked_softmax<<<rows, 32>>>(d_probs, d_scores, d_seq, rows, cols);

  // 2. fp16: every 8th of 1024 inputs overflows: 128 +Inf in `scaled`, 128 NaN in `centered`.
  const int n16 = 1024;
  std::vector<float> big(n16);
  for (int i = 0; i < n16; ++i) big[i] = (i % 8 == 0) ? 1.0f : 1e-3f;
  float* d_big = upload(big);
  __half* d_scaled = alloc<__half>(n16);
  __half* d_centered = alloc<__half>(n16);
  fp16_scale_and_center<<<(n16 + 255) / 256, 256>>>(d_scaled, d_centered, d_big, 1e5f, n16);

  // 3. log: of 1000 inputs, 100 negative (NaN) and 100 zero (-Inf).
  const int nlog = 1000;
  std::vector<float> p(nlog);
  for (int i = 0; i < nlog; ++i) p[i] = (i % 10 == 0) ? -1.0f : (i % 10 == 1) ? 0.0f : 0.5f;
  float* d_p = upload(p);
  float* d_logp = alloc<float>(nlog);
  log_probs<<<(nlog + 255) / 256, 256>>>(d_logp, d_p, nlog);

  // 4. sqrt: 128 of 512 variances negative.
  const int nvar = 512;
  std::vector<double> var(nvar);
  for (int i = 0; i < nvar; ++i) var[i] = (i % 4 == 3) ? -2.0 : 2.0;
  double* d_var = upload(var);
  double* d_std = alloc<double>(nvar);
  stddev<<<(nvar + 255) / 256, 256>>>(d_std, d_var, nvar);

  // 5. fp8: e4m3 max is 448: 16 of 256 NaN. e5m2 max is 57344: 8 +Inf and 8 -Inf of 256.
  const int n8 = 256;
  std::vector<float> q4(n8), q5(n8);
  for (int i = 0; i < n8; ++i) {
    q4[i] = (i % 16 == 0) ? 1000.0f : 1.0f;
    q5[i] = (i % 32 == 0) ? 1e6f : (i % 32 == 16) ? -1e6f : 1.0f;
  }
  float* d_q4 = upload(q4);
  float* d_q5 = upload(q5);
  auto* d_e4m3 = alloc<__nv_fp8_e4m3>(n8);
  auto* d_e5m2 = alloc<__nv_fp8_e5m2>(n8);
  quantize_e4m3<<<1, n8>>>(d_e4m3, d_q4, n8);
  quantize_e5m2<<<1, n8>>>(d_e5m2, d_q5, n8);

  // 6. uninitialised: 2048 bf16 read from a buffer holding the 0xFF pattern: 2048 NaN.
  const int nb = 2048;
  __nv_bfloat16* d_garbage = nullptr;
  CHECK(cudaMalloc(&d_garbage, nb * sizeof(__nv_bfloat16)));
  CHECK(cudaMemset(d_garbage, 0xFF, nb * sizeof(__nv_bfloat16)));
  auto* d_rows = alloc<__nv_bfloat16>(nb);
  gather_rows<<<(nb + 255) / 256, 256>>>(d_rows, d_garbage, nb);

  // 7. clean.
  const int na = 4096;
  std::vector<float> x(na, 0.5f);
  float* d_x = upload(x);
  float* d_y = upload(x);
  axpy<<<(na + 255) / 256, 256>>>(d_y, d_x, 2.0f, na);

  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  // Checksum of every output, to compare runs with and without nanscope.
  uint64_t h = 1469598103934665603ull;
  auto fold = [&](const void* d, size_t bytes) {
    std::vector<unsigned char> buf(bytes);
    cudaMemcpy(buf.data(), d, bytes, cudaMemcpyDeviceToHost);
    h = fnv1a(buf.data(), bytes, h);
  };
  fold(d_probs, rows * cols * sizeof(float));
  fold(d_scaled, n16 * sizeof(__half));
  fold(d_centered, n16 * sizeof(__half));
  fold(d_logp, nlog * sizeof(float));
  fold(d_std, nvar * sizeof(double));
  fold(d_e4m3, n8);
  fold(d_e5m2, n8);
  fold(d_rows, nb * sizeof(__nv_bfloat16));
  fold(d_y, na * sizeof(float));
  CHECK(cudaGetLastError());
  std::printf("nan_sources: outputs fnv1a=0x%016llx\n", static_cast<unsigned long long>(h));
  return 0;
}

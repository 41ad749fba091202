// NaN origin: a chain of four kernels over a padded batch, every output watched with seq_lens.
//  A attn_softmax   0/0 in the padding rows (rows 10..15): the NaN is introduced here;
//  B rowwise_scale  carries it, still in padding rows only;
//  C amax_quant     a NaN-propagating per-tensor amax: every element NaN, the leak into real rows;
//  D consume        reads the leaked tensor.
// run_gpu_test.py (subtest origin_chain) checks origin / parents / root / leak in the log.
//
//   origin_chain_app eager|graph|graph_typed|fix|host
// eager: the chain once.  graph: the chain captured and replayed 8 times, padding only in replays
// 2 and 5.  fix: like eager, attn_out has action fix (the padding rows are zeroed, nothing leaks).
// graph_typed: like graph without watches: the typed outputs' plain scans, which nanscope merges
// into one graph node that must still publish the chain in order.
// host: a NaN copied from the host into a typed buffer, then read by consume.
// Linked against libnanscope (C API).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nanscope/nanscope.h"

#include "gpu_check.cuh"

constexpr int kRows = 16, kLen = 256, kReal = 10, kN = kRows * kLen;
constexpr int kReplays = 8;

__global__ void init_scores(float* s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s[i] = sinf((float)i);
}

// One block per row: the softmax of the row's scores, scaled by z / z with z = seq_lens[r]. A real
// row (seq_len 5) gets its softmax; a padding row (seq_len 0) gets 0/0 = NaN in every element,
// computed at run time (no branch on the padding).
__global__ void attn_softmax(float* out, const float* scores, const int* seq_lens, int rows, int cols) {
  __shared__ float red[1024];
  const int r = blockIdx.x;
  if (r >= rows) return;
  const float z = (float)seq_lens[r];
  const float* row = scores + (size_t)r * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  sum = red[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(size_t)r * cols + c] = (expf(row[c] - m) * z) / (sum * z);
}

__global__ void rowwise_scale(float* out, const float* in, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i] * 2.f;
}

// ONE block of 1024 threads: per-tensor amax where NaN wins, then q = in / amax * 448.
__global__ void amax_quant(float* q, const float* in, int n) {
  __shared__ float s[1024];
  float m = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = in[i];
    m = (v != v || fabsf(v) > m) ? fabsf(v) : m;
  }
  s[threadIdx.x] = m;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float o = s[threadIdx.x + w];
      s[threadIdx.x] = (o != o || o > s[threadIdx.x]) ? o : s[threadIdx.x];
    }
    __syncthreads();
  }
  const float amax = s[0];
  for (int i = threadIdx.x; i < n; i += blockDim.x) q[i] = in[i] / amax * 448.f;
}

__global__ void consume(float* logits, const float* q, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) logits[i] = q[i] * 3.f;
}

__global__ void init_x(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f + (float)(i % 7);
}

namespace {

int watch(const char* name, const float* ptr, nanscope_action_t action, nanscope_padding_spec_t spec,
          nanscope_watch_t* out) {
  nanscope_watch_desc_t d{};
  d.struct_size = sizeof d;
  d.name = name;
  d.ptr = ptr;
  d.dtype = NANSCOPE_DTYPE_F32;
  d.rows = kRows;
  d.row_elements = kLen;
  d.action = action;
  d.padding = spec;
  if (nanscope_watch(&d, out) != NANSCOPE_SUCCESS) {
    std::fprintf(stderr, "origin_chain: nanscope_watch(%s): %s\n", name, nanscope_last_error());
    return 1;
  }
  return 0;
}

int all_finite(const float* d, int n, int* finite) {
  std::vector<float> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  *finite = 1;
  for (float v : h) *finite &= std::isfinite(v) ? 1 : 0;
  return 0;
}

// host: x is written by a kernel (a typed output nanscope knows), then overwritten from the host
// with a NaN at element 7, then read by consume.
int run_host() {
  float *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CHECK(cudaMalloc(&y, kN * sizeof(float)));
  init_x<<<(kN + 255) / 256, 256>>>(x, kN);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> h(kN, 1.f);
  h[7] = NAN;
  CHECK(cudaMemcpy(x, h.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaDeviceSynchronize());
  consume<<<(kN + 255) / 256, 256>>>(y, x, kN);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("origin_chain: host done\n");
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool typed_only = mode == "graph_typed";
  if (mode != "eager" && mode != "graph" && mode != "fix" && mode != "host" && !typed_only) {
    std::fprintf(stderr, "usage: origin_chain_app eager|graph|graph_typed|fix|host\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "origin_chain: no CUDA device\n");
    return 77;
  }
  if (mode == "host") {
    const int rc = run_host();
    nanscope_flush();
    return rc;
  }

  float *out_a = nullptr, *out_b = nullptr, *q = nullptr, *logits = nullptr, *scores = nullptr;
  int* seq = nullptr;
  CHECK(cudaMalloc(&out_a, kN * sizeof(float)));
  CHECK(cudaMalloc(&out_b, kN * sizeof(float)));
  CHECK(cudaMalloc(&q, kN * sizeof(float)));
  CHECK(cudaMalloc(&logits, kN * sizeof(float)));
  CHECK(cudaMalloc(&scores, kN * sizeof(float)));
  CHECK(cudaMalloc(&seq, kRows * sizeof(int)));
  std::vector<int> padded(kRows), all_real(kRows, 5);
  for (int r = 0; r < kRows; ++r) padded[r] = r < kReal ? 5 : 0;

  nanscope_padding_spec_t spec = nullptr;
  if (nanscope_padding_spec_seq_lens(&spec, kRows, seq, NANSCOPE_INDEX_INT32, 0) != NANSCOPE_SUCCESS) {
    std::fprintf(stderr, "origin_chain: padding spec: %s\n", nanscope_last_error());
    return 1;
  }
  nanscope_watch_t w[4] = {};
  const nanscope_action_t attn_action = mode == "fix" ? NANSCOPE_ACTION_FIX : NANSCOPE_ACTION_DETECT;
  if (!typed_only && (watch("attn_out", out_a, attn_action, spec, &w[0]) || watch("scaled", out_b, NANSCOPE_ACTION_DETECT, spec, &w[1]) ||
      watch("q", q, NANSCOPE_ACTION_DETECT, spec, &w[2]) || watch("logits", logits, NANSCOPE_ACTION_DETECT, spec, &w[3])))
    return 1;
  nanscope_padding_spec_destroy(spec);

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  init_scores<<<(kN + 255) / 256, 256, 0, s>>>(scores, kN);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(s));
  auto chain = [&]() -> cudaError_t {
    attn_softmax<<<kRows, kLen, 0, s>>>(out_a, scores, seq, kRows, kLen);
    rowwise_scale<<<(kN + 255) / 256, 256, 0, s>>>(out_b, out_a, kN);
    amax_quant<<<1, 1024, 0, s>>>(q, out_b, kN);
    consume<<<(kN + 255) / 256, 256, 0, s>>>(logits, q, kN);
    return cudaGetLastError();
  };

  if (mode == "graph" || typed_only) {
    CHECK(cudaMemcpy(seq, all_real.data(), kRows * sizeof(int), cudaMemcpyHostToDevice));
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const cudaError_t launched = chain();
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(launched);
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int r = 0; r < kReplays; ++r) {
      const bool pad = r == 2 || r == 5;
      CHECK(cudaMemcpyAsync(seq, (pad ? padded : all_real).data(), kRows * sizeof(int), cudaMemcpyHostToDevice, s));
      CHECK(cudaGraphLaunch(exec, s));
      CHECK(cudaStreamSynchronize(s));
      int finite = 0;
      if (all_finite(logits, kN, &finite)) return 1;
      std::printf("origin_chain: replay %d padded=%d logits_finite=%d\n", r, pad ? 1 : 0, finite);
    }
    std::printf("origin_chain: graph replays=%d\n", kReplays);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
  } else {  // eager, fix
    CHECK(cudaMemcpy(seq, padded.data(), kRows * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(chain());
    CHECK(cudaStreamSynchronize(s));
    int finite = 0;
    if (all_finite(logits, kN, &finite)) return 1;
    std::printf("origin_chain: %s done logits_finite=%d\n", mode.c_str(), finite);
  }
  CHECK(cudaDeviceSynchronize());
  nanscope_flush();
  for (nanscope_watch_t h : w)
    if (h) nanscope_unwatch(h);
  CHECK(cudaStreamDestroy(s));
  for (void* p : {(void*)out_a, (void*)out_b, (void*)q, (void*)logits, (void*)scores, (void*)seq}) CHECK(cudaFree(p));
  return 0;
}

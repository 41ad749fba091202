// The seed's bug, reproduced: an MLA-style decode step over a batch padded to the CUDA-graph
// size. Padding rows have seq_lens == 0.
//  1. attention writes NaN into padding rows (0/0 softmax; or, variant `unwritten`, leaves them
//     as they were: a buffer filled with a NaN pattern);
//  2. a per-tensor FP8 quantisation takes amax over all rows: the NaN leaks into real rows;
//  3. a consumer reads the quantised result.
// The output buffers are watched through the C API with seq_lens as the padding spec.
//
//   padded_decode [detect|fix|zero|abort] [eager|graph] [softmax|unwritten]
// (zero = action zero_padding: zero padding rows, read nothing, report nothing)
//
// Graph mode captures the step once and replays it with 5, 3 and 8 real rows of 8.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nanscope/nanscope.h"

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

constexpr int kRows = 8, kHeads = 128, kDim = 512, kKv = 64;
constexpr int kRowElems = kHeads * kDim;

// One block per (row, head): softmax over the first seq_lens[row] keys, then a weighted sum of
// values. A row with seq_len 0 has max = -inf and sum = 0: every output is 0/0.
__global__ void mla_decode_attention(__nv_bfloat16* out, const float* scores, const int* seq_lens, int unwritten) {
  const int row = blockIdx.x / kHeads, head = blockIdx.x % kHeads;
  const int len = seq_lens[row];
  if (unwritten && len == 0) return;  // variant: padding rows are never written
  float mx = -INFINITY;
  for (int k = 0; k < kKv; ++k) mx = fmaxf(mx, k < len ? scores[(row * kHeads + head) * kKv + k] : -INFINITY);
  float sum = 0.f;
  for (int k = 0; k < kKv; ++k) sum += k < len ? expf(scores[(row * kHeads + head) * kKv + k] - mx) : 0.f;
  for (int d = threadIdx.x; d < kDim; d += blockDim.x) {
    float acc = 0.f;
    for (int k = 0; k < kKv; ++k) {
      const float p = k < len ? expf(scores[(row * kHeads + head) * kKv + k] - mx) : 0.f;
      acc += p * (0.001f * ((k * 7 + d) % 13));
    }
    out[(size_t)row * kRowElems + head * kDim + d] = __float2bfloat16(acc / sum);
  }
}

// amax over the whole tensor, NaN-propagating like a max that compares with `>`-or-NaN.
__global__ void tensor_amax(float* amax, const __nv_bfloat16* x, int n) {
  __shared__ float s[256];
  float m = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = fabsf(__bfloat162float(x[i]));
    m = (isnan(v) || v > m) ? v : m;
  }
  s[threadIdx.x] = m;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float o = s[threadIdx.x + w];
      s[threadIdx.x] = (isnan(o) || o > s[threadIdx.x]) ? o : s[threadIdx.x];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float v = s[0];
    if (isnan(v)) *amax = v;  // racy but monotone: NaN wins
    else if (!isnan(*amax)) atomicMax(reinterpret_cast<int*>(amax), __float_as_int(v));
  }
}

__global__ void quantize_fp8(__nv_fp8_e4m3* q, float* scale, const float* amax, const __nv_bfloat16* x, int n) {
  const float s = *amax / 448.f;
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = s;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    q[i] = __nv_fp8_e4m3(__bfloat162float(x[i]) / s);
}

__global__ void consume(float* row_sums, const __nv_fp8_e4m3* q, const float* scale) {
  const int row = blockIdx.x;
  float acc = 0.f;
  for (int i = threadIdx.x; i < kRowElems; i += blockDim.x) acc += float(q[(size_t)row * kRowElems + i]) * *scale;
  atomicAdd(&row_sums[row], acc);
}

namespace {
uint64_t fnv1a(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

int watch(const char* name, const void* ptr, nanscope_dtype_t dtype, nanscope_action_t action,
          nanscope_padding_spec_t spec, nanscope_watch_t* out) {
  nanscope_watch_desc_t d{};
  d.struct_size = sizeof d;
  d.name = name;
  d.ptr = ptr;
  d.dtype = dtype;
  d.rows = kRows;
  d.row_elements = kRowElems;
  d.action = action;
  d.padding = spec;
  if (nanscope_watch(&d, out) != NANSCOPE_SUCCESS) {
    std::fprintf(stderr, "padded_decode: nanscope_watch(%s): %s\n", name, nanscope_last_error());
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "detect";
  const bool graph = argc > 2 && std::strcmp(argv[2], "graph") == 0;
  const bool unwritten = argc > 3 && std::strcmp(argv[3], "unwritten") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "padded_decode: no CUDA device found: nothing to run\n");
    return 0;
  }
  const nanscope_action_t action = mode == "fix"    ? NANSCOPE_ACTION_FIX
                                   : mode == "zero" ? NANSCOPE_ACTION_ZERO_PADDING
                                   : mode == "abort" ? NANSCOPE_ACTION_ABORT
                                                     : NANSCOPE_ACTION_DETECT;
  std::vector<float> scores(kRows * kHeads * kKv);
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = 0.01f * static_cast<float>((i * 37) % 101);
  float* d_scores = nullptr;
  int* d_seq = nullptr;
  __nv_bfloat16* d_attn = nullptr;
  __nv_fp8_e4m3* d_q = nullptr;
  float *d_amax = nullptr, *d_scale = nullptr, *d_sums = nullptr;
  CHECK(cudaMalloc(&d_scores, scores.size() * sizeof(float)));
  CHECK(cudaMemcpy(d_scores, scores.data(), scores.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMalloc(&d_seq, kRows * sizeof(int)));
  CHECK(cudaMalloc(&d_attn, (size_t)kRows * kRowElems * sizeof(__nv_bfloat16)));
  CHECK(cudaMemset(d_attn, 0xFF, (size_t)kRows * kRowElems * sizeof(__nv_bfloat16)));  // NaN pattern
  CHECK(cudaMalloc(&d_q, (size_t)kRows * kRowElems));
  CHECK(cudaMalloc(&d_amax, sizeof(float)));
  CHECK(cudaMalloc(&d_scale, sizeof(float)));
  CHECK(cudaMalloc(&d_sums, kRows * sizeof(float)));

  // seq_lens is read on the device at every scan: one spec serves every replay.
  nanscope_padding_spec_t spec = nullptr;
  nanscope_watch_t w_attn = nullptr, w_q = nullptr;
  if (nanscope_padding_spec_seq_lens(&spec, kRows, d_seq, NANSCOPE_INDEX_INT32, 0) != NANSCOPE_SUCCESS) {
    std::fprintf(stderr, "padded_decode: %s\n", nanscope_last_error());
    return 1;
  }
  if (watch("attn_out", d_attn, NANSCOPE_DTYPE_BF16, action, spec, &w_attn) ||
      watch("q_fp8", d_q, NANSCOPE_DTYPE_F8E4M3, action, spec, &w_q))
    return 1;
  nanscope_padding_spec_destroy(spec);

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int n = kRows * kRowElems;
  auto step = [&] {
    mla_decode_attention<<<kRows * kHeads, 128, 0, s>>>(d_attn, d_scores, d_seq, unwritten);
    cudaMemsetAsync(d_amax, 0, sizeof(float), s);
    tensor_amax<<<264, 256, 0, s>>>(d_amax, d_attn, n);
    quantize_fp8<<<264, 256, 0, s>>>(d_q, d_scale, d_amax, d_attn, n);
    cudaMemsetAsync(d_sums, 0, kRows * sizeof(float), s);
    consume<<<kRows, 256, 0, s>>>(d_sums, d_q, d_scale);
  };
  const std::vector<std::vector<int>> batches = {{5, 9, 2, 64, 7, 0, 0, 0}, {3, 1, 12, 0, 0, 0, 0, 0},
                                                 {4, 4, 4, 4, 4, 4, 4, 4}};
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g;
    CHECK(cudaMemcpy(d_seq, batches[0].data(), kRows * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    step();
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
  }
  std::vector<__nv_bfloat16> attn(n);
  std::vector<float> sums(kRows);
  for (size_t b = 0; b < batches.size(); ++b) {
    CHECK(cudaMemcpyAsync(d_seq, batches[b].data(), kRows * sizeof(int), cudaMemcpyHostToDevice, s));
    if (graph) CHECK(cudaGraphLaunch(exec, s));
    else step();
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(attn.data(), d_attn, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sums.data(), d_sums, kRows * sizeof(float), cudaMemcpyDeviceToHost));
    int real = 0;
    bool padding_zero = true;
    uint64_t real_hash = 1469598103934665603ull;
    for (int r = 0; r < kRows; ++r) {
      const __nv_bfloat16* row = &attn[(size_t)r * kRowElems];
      if (batches[b][r] != 0) {
        ++real;
        real_hash = fnv1a(row, kRowElems * sizeof(__nv_bfloat16), real_hash);
      } else {
        for (int i = 0; i < kRowElems; ++i) padding_zero &= __bfloat16_as_ushort(row[i]) == 0;
      }
    }
    bool finite = true;
    for (int r = 0; r < kRows; ++r) finite &= std::isfinite(sums[r]) != 0;
    std::printf("padded_decode: step %zu real_rows=%d real_rows_hash=0x%016llx padding_rows_zero=%d consumer_finite=%d\n",
                b, real, static_cast<unsigned long long>(real_hash), padding_zero ? 1 : 0, finite ? 1 : 0);
  }
  CHECK(cudaGetLastError());
  nanscope_unwatch(w_attn);
  nanscope_unwatch(w_q);
  return 0;
}

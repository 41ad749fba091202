// Graph benchmarks, run once plainly and once under nanscope by bench/run_benchmarks.sh:
//  * replay time of a decode-like graph of 50 kernels on [16,128,512] bf16 activations (each
//    kernel reads the previous activation and writes its own, as a decode step's layers do), in
//    two flavours: typed kernels (nanscope scans every output) and untyped kernels with one
//    output watched through the C API (scanned after its writer and its reader);
//  * the same typed chain launched eagerly (one step = 50 launches), the eager loop;
//  * 1,000 replays of the typed chain clean, and 1,000 of a copy whose first kernel writes NaN into
//    the 4 padding rows (of 16) that every later kernel carries on: 50 findings every replay, the
//    case the host side must keep up with (issue 18 item 2: NaN within 5% of clean);
//  * instantiate time of two graphs of 1,000 kernel nodes built by hand: one whose scans stay in
//    line, and one whose scans move beside the chain and merge.
// Prints `graph_bench MODE key=value ...`.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nanscope/nanscope.h"

constexpr int kElems = 16 * 128 * 512;

__global__ void typed_step(__nv_bfloat16* y, const __nv_bfloat16* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = __float2bfloat16(__bfloat162float(x[i]) * 0.5f + 1.0f);
}

// The first layer of the NaN chain: the padding rows (the last 4 of 16 rows of 128 x 512) get
// NaN, as a softmax's 0/0 gives them; the other rows as typed_step.
__global__ void typed_step_padding_nan(__nv_bfloat16* y, const __nv_bfloat16* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = i >= n / 16 * 12 ? __float2bfloat16(__int_as_float(0x7fc00000)) : __float2bfloat16(__bfloat162float(x[i]) * 0.5f + 1.0f);
}

// Same work, pointers untyped: nanscope cannot see its output without a watch.
__global__ void untyped_step(void* y, const void* x, int n) {
  auto* out = static_cast<__nv_bfloat16*>(y);
  auto* in = static_cast<const __nv_bfloat16*>(x);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = __float2bfloat16(__bfloat162float(in[i]) * 0.5f + 1.0f);
}

__global__ void tiny(float* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) p[0] += 1.0f;
}

namespace {
// Runs `step` `warmup` times, then times `rounds` batches of 10 steps with CUDA events on `s`;
// returns the median batch in us per step.
template <typename Step>
float median_us(Step&& step, int warmup, int rounds, cudaStream_t s) {
  for (int i = 0; i < warmup; ++i) step();
  cudaStreamSynchronize(s);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int r = 0; r < rounds; ++r) {
    cudaEventRecord(a, s);
    for (int i = 0; i < 10; ++i) step();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 100.0f);  // us per step
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

float replay_us(cudaGraphExec_t exec, cudaStream_t s) {
  return median_us([&] { cudaGraphLaunch(exec, s); }, 5, 50, s);
}

constexpr int kLayers = 50;

// One decode step of the typed chain as 50 eager launches; us per step (median of 30 x 10).
float eager_us(__nv_bfloat16** bufs, cudaStream_t s) {
  return median_us(
      [&] {
        for (int k = 0; k < kLayers; ++k) typed_step<<<264, 256, 0, s>>>(bufs[k + 1], bufs[k], kElems);
      },
      1, 30, s);
}

cudaGraphExec_t capture_chain(bool typed, __nv_bfloat16** bufs, cudaStream_t s, bool padding_nan = false) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int k = 0; k < kLayers; ++k) {
    __nv_bfloat16* in = bufs[k];
    __nv_bfloat16* out = bufs[k + 1];
    if (typed && padding_nan && k == 0) typed_step_padding_nan<<<264, 256, 0, s>>>(out, in, kElems);
    else if (typed) typed_step<<<264, 256, 0, s>>>(out, in, kElems);
    else untyped_step<<<264, 256, 0, s>>>(out, in, kElems);
  }
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&exec, g, 0);
  return exec;
}
}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "graph_bench: no CUDA device\n");
    return 0;
  }
  const bool scoped = std::getenv("CUDA_INJECTION64_PATH") != nullptr;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  __nv_bfloat16* bufs[kLayers + 1];
  __nv_bfloat16* ubufs[kLayers + 1];
  __nv_bfloat16* nbufs[kLayers + 1];
  for (int i = 0; i <= kLayers; ++i) {
    cudaMalloc(&bufs[i], kElems * 2);
    cudaMalloc(&ubufs[i], kElems * 2);
    cudaMalloc(&nbufs[i], kElems * 2);
    cudaMemset(bufs[i], 0, kElems * 2);
    cudaMemset(ubufs[i], 0, kElems * 2);
    cudaMemset(nbufs[i], 0, kElems * 2);
  }
  nanscope_watch_t w = nullptr;
  if (scoped) {  // one watched output in the untyped chain (16 rows of 128 x 512)
    nanscope_padding_spec_t spec = nullptr;
    nanscope_padding_spec_real_rows(&spec, 16, 12);
    nanscope_watch_desc_t d{sizeof d, "bench_out", ubufs[kLayers / 2], NANSCOPE_DTYPE_BF16, 16, 128 * 512, 0,
                            NANSCOPE_ACTION_DETECT, spec};
    if (nanscope_watch(&d, &w) != NANSCOPE_SUCCESS) std::fprintf(stderr, "watch: %s\n", nanscope_last_error());
    nanscope_padding_spec_destroy(spec);
  }
  cudaGraphExec_t typed = capture_chain(true, bufs, s);
  cudaGraphExec_t untyped = capture_chain(false, ubufs, s);
  const float t_typed = replay_us(typed, s), t_untyped = replay_us(untyped, s);
  const float t_eager = eager_us(bufs, s);
  // 1,000 replays each (5 + 100 x 10), clean and with NaN in the padding rows every replay.
  cudaGraphExec_t with_nan = capture_chain(true, nbufs, s, true);
  const float t_clean_1000 = median_us([&] { cudaGraphLaunch(typed, s); }, 5, 100, s);
  const float t_nan_1000 = median_us([&] { cudaGraphLaunch(with_nan, s); }, 5, 100, s);

  // Instantiate hand-built graphs of 1,000 kernel nodes (chains). In the first every kernel writes
  // into one allocation, so each scan stays in line (the next kernel may write what it reads); in
  // the second each kernel writes its own allocation, so the scans move beside the chain and merge.
  float* p = nullptr;
  cudaMalloc(&p, 4 * 1000);
  std::vector<float*> own(1000);
  for (float*& o : own) {
    cudaMalloc(&o, 256);
    cudaMemset(o, 0, 256);
  }
  cudaMemset(p, 0, 4 * 1000);
  auto instantiate_ms = [&](bool own_buffers) {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t prev = nullptr;
    std::vector<float*> args(1000);
    std::vector<void*> slots(1000);
    for (int i = 0; i < 1000; ++i) {
      args[i] = own_buffers ? own[i] : p + i;
      slots[i] = &args[i];
      cudaKernelNodeParams kp{};
      kp.func = (void*)tiny;
      kp.gridDim = dim3(1);
      kp.blockDim = dim3(32);
      kp.kernelParams = &slots[i];
      cudaGraphNode_t node;
      cudaGraphAddKernelNode(&node, g, prev ? &prev : nullptr, prev ? 1 : 0, &kp);
      prev = node;
    }
    const auto t0 = std::chrono::steady_clock::now();
    cudaGraphExec_t exec;
    cudaGraphInstantiate(&exec, g, 0);
    const auto t1 = std::chrono::steady_clock::now();
    cudaGraphLaunch(exec, s);  // runs: every scan node must be valid
    cudaStreamSynchronize(s);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  const double inst_ms = instantiate_ms(false), inst_moved_ms = instantiate_ms(true);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("graph_bench %s typed_chain_us=%.2f untyped_chain_one_watch_us=%.2f eager_typed_chain_us=%.2f "
              "instantiate_1000_ms=%.2f instantiate_1000_merged_ms=%.2f typed_chain_1000_clean_us=%.2f "
              "typed_chain_1000_padding_nan_us=%.2f nan_over_clean=%.3f\n",
              scoped ? "nanscope" : "plain", t_typed, t_untyped, t_eager, inst_ms, inst_moved_ms, t_clean_1000,
              t_nan_1000, t_nan_1000 / t_clean_1000);
  if (w) nanscope_unwatch(w);
  return 0;
}

// A linked debug build: the program links nanscope::nanscope and uses the C++ API
// (nanscope/nanscope.hpp) to watch a padded batch.
//
//   linked_debug [detect|fix]
//
// A masked softmax over 8 rows, 3 of them padding (seq_len 0): 0/0 gives NaN in the padding
// rows. The watch (seq_lens spec) says the NaN is padding-only; with `fix` nanscope zeroes those
// rows right after the kernel. A second kernel (no watch) runs inside a ScopedPadding, so its
// typed output gets row verdicts from the global spec. Without a CUDA device it says so and
// exits 0. Also runs under `nanscope --` (one engine, initialised once).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "nanscope/nanscope.hpp"

namespace {

constexpr int kRows = 8, kCols = 64, kRealRows = 5;

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

// One block per row: softmax over the first seq_lens[row] columns, 0 beyond. A row with
// seq_len 0 has max = -inf and sum = 0, so every output is 0/0 = NaN.
__global__ void masked_softmax(float* out, const float* scores, const int* seq_lens) {
  const int row = blockIdx.x, len = seq_lens[row];
  float mx = -INFINITY, sum = 0.f;
  for (int c = 0; c < kCols; ++c) mx = fmaxf(mx, c < len ? scores[row * kCols + c] : -INFINITY);
  for (int c = 0; c < kCols; ++c) sum += c < len ? expf(scores[row * kCols + c] - mx) : 0.f;
  for (int c = threadIdx.x; c < kCols; c += blockDim.x)
    out[row * kCols + c] = (c < len ? expf(scores[row * kCols + c] - mx) : 0.f) / sum;
}

__global__ void scale(float* y, const float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s;
}

int run(nanscope::Action action) {
  std::vector<float> scores(kRows * kCols);
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = 0.01f * static_cast<float>((i * 37) % 101);
  std::vector<int> seq_lens(kRows, 0);
  for (int r = 0; r < kRealRows; ++r) seq_lens[r] = 8 + 8 * r;
  float *d_scores = nullptr, *d_probs = nullptr, *d_scaled = nullptr;
  int* d_seq = nullptr;
  CHECK(cudaMalloc(&d_scores, scores.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_probs, scores.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_scaled, scores.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_seq, kRows * sizeof(int)));
  CHECK(cudaMemcpy(d_scores, scores.data(), scores.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_seq, seq_lens.data(), kRows * sizeof(int), cudaMemcpyHostToDevice));

  nanscope::Session session;  // idempotent: attaches to the injected engine under `nanscope --`
  const auto spec = nanscope::PaddingSpec::seq_lens(kRows, d_seq);  // int32, pad_value 0
  {
    nanscope::Watch watch("probs", d_probs, kRows, kCols, action, &spec);  // dtype from float*
    masked_softmax<<<kRows, 64>>>(d_probs, d_scores, d_seq);
    CHECK(cudaGetLastError());
    nanscope::ScopedPadding pad(spec);  // typed outputs of kRows*k elements get row verdicts
    scale<<<(kRows * kCols + 255) / 256, 256>>>(d_scaled, d_probs, 2.f, kRows * kCols);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }  // unwatched, global spec cleared
  session.flush();

  std::vector<float> probs(kRows * kCols);
  CHECK(cudaMemcpy(probs.data(), d_probs, probs.size() * sizeof(float), cudaMemcpyDeviceToHost));
  bool real_finite = true, padding_zero = true, padding_nan = true;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      const float v = probs[r * kCols + c];
      if (r < kRealRows) real_finite = real_finite && std::isfinite(v);
      else {
        padding_zero = padding_zero && v == 0.f;
        padding_nan = padding_nan && std::isnan(v);
      }
    }
  const nanscope::Stats st = session.stats();
  std::printf("linked_debug: nanscope %s action=%s launches=%llu scans=%llu findings=%llu real_rows_finite=%d "
              "padding_rows_zero=%d\n",
              nanscope::Session::version(), action == nanscope::Action::fix ? "fix" : "detect",
              static_cast<unsigned long long>(st.launches), static_cast<unsigned long long>(st.scans),
              static_cast<unsigned long long>(st.findings), real_finite, padding_zero);
  cudaFree(d_scores);
  cudaFree(d_probs);
  cudaFree(d_scaled);
  cudaFree(d_seq);
  const bool expected = real_finite && st.findings > 0 &&
                        (action == nanscope::Action::fix ? padding_zero : padding_nan);
  if (!expected) std::fprintf(stderr, "linked_debug: unexpected result\n");
  return expected ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool fix = argc > 1 && std::strcmp(argv[1], "fix") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("linked_debug: no CUDA device found: nothing to run (nanscope %s linked)\n",
                nanscope::Session::version());
    return 0;
  }
  try {
    return run(fix ? nanscope::Action::fix : nanscope::Action::detect);
  } catch (const nanscope::Error& e) {
    std::fprintf(stderr, "linked_debug: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "linked_debug: %s\n", e.what());
    return 1;
  }
}

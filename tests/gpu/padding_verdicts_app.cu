// Padding verdicts against a host reference: every dtype, every padding source, odd row lengths
// (257, 1500), row strides with NaN in the gaps (must be ignored), and the fix (real rows
// bit-identical, padding rows zero, gaps untouched). Then a captured graph replayed with new
// seq_lens. Prints one JSON line of expectations per case; run_gpu_test.py compares them with
// the log. Linked against libnanscope (C API).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nanscope/nanscope.h"

__global__ void touch(void* p, int n) {  // untyped: only the watch makes it scanned
  if (n < 0) static_cast<char*>(p)[0] = 0;
}

namespace {

struct DT { nanscope_dtype_t dtype; int size; uint64_t one, nan, pinf, ninf; };
const DT kTypes[] = {
    {NANSCOPE_DTYPE_F64, 8, 0x3ff0000000000000ull, 0x7ff8000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull},
    {NANSCOPE_DTYPE_F32, 4, 0x3f800000u, 0x7fc00000u, 0x7f800000u, 0xff800000u},
    {NANSCOPE_DTYPE_F16, 2, 0x3c00u, 0x7e00u, 0x7c00u, 0xfc00u},
    {NANSCOPE_DTYPE_BF16, 2, 0x3f80u, 0x7fc0u, 0x7f80u, 0xff80u},
    {NANSCOPE_DTYPE_F8E4M3, 1, 0x38u, 0x7fu, 0, 0},
    {NANSCOPE_DTYPE_F8E5M2, 1, 0x3cu, 0x7eu, 0x7cu, 0xfcu},
};

void put(std::vector<unsigned char>& b, uint64_t i, const DT& t, uint64_t v) { std::memcpy(&b[i * t.size], &v, t.size); }

std::string ranges_json(const std::vector<int>& rows, const std::vector<bool>& pad, bool want_pad) {
  std::string out = "[";
  int start = -1, prev = -2;
  auto flush = [&] {
    if (start < 0) return;
    if (out.size() > 1) out += ",";
    out += "[" + std::to_string(start) + "," + std::to_string(prev) + "]";
  };
  for (int r : rows) {
    if (pad[r] != want_pad) continue;
    if (r != prev + 1 || start < 0 || pad[prev] != want_pad) { flush(); start = r; }
    prev = r;
  }
  flush();
  return out + "]";
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  std::mt19937 rng(7);
  const int kRows = 16;
  const uint64_t shapes[][2] = {{257, 257}, {1500, 1503}, {257, 300}, {1500, 1500}};
  const char* sources[] = {"seq_lens_i32", "seq_lens_i64", "real_rows_device", "real_rows_host", "mask"};
  int case_id = 0, failures = 0;
  for (const DT& t : kTypes) {
    for (int src = 0; src < 5; ++src, ++case_id) {
      const uint64_t row_len = shapes[case_id % 4][0], stride = shapes[case_id % 4][1];
      const bool fix = case_id % 2 == 1;
      const uint64_t elems = (kRows - 1) * stride + row_len;
      // Padding status per row, and the device source that says so.
      std::vector<bool> pad(kRows);
      std::vector<int32_t> seq32(kRows);
      std::vector<int64_t> seq64(kRows);
      std::vector<uint8_t> mask(kRows);
      const int real_count = 5 + case_id % 7;
      for (int r = 0; r < kRows; ++r) {
        if (src <= 1 || src == 4) pad[r] = rng() % 3 == 0;
        else pad[r] = r >= real_count;
        seq32[r] = pad[r] ? 0 : 1 + rng() % 100;
        seq64[r] = pad[r] ? -1 : 1 + rng() % 100;  // i64 case uses pad_value -1
        mask[r] = pad[r];
      }
      std::vector<unsigned char> h(elems * t.size);
      for (uint64_t i = 0; i < elems; ++i) {
        const bool gap = i % stride >= row_len;
        put(h, i, t, gap ? t.nan : t.one);  // NaN in gaps: not part of the tensor
      }
      uint64_t n_nan = 0, n_pinf = 0, n_ninf = 0, n_pad = 0, first = ~0ull, last = 0;
      std::vector<int> bad_rows;
      for (int r = 0; r < kRows; ++r) {
        if (rng() % 2) continue;
        bad_rows.push_back(r);
        for (int k = 0; k < 1 + (int)(rng() % 5); ++k) {
          const uint64_t i = r * stride + rng() % row_len;
          unsigned char before[8];
          std::memcpy(before, &h[i * t.size], t.size);
          int kind = rng() % 3;
          if (!t.pinf) kind = 0;
          const uint64_t v = kind == 0 ? t.nan : kind == 1 ? t.pinf : t.ninf;
          if (std::memcmp(before, &v, t.size) == 0) continue;  // already bad: counted once
          uint64_t one = t.one;
          if (std::memcmp(before, &one, t.size) != 0) continue;
          put(h, i, t, v);
          n_nan += kind == 0, n_pinf += kind == 1, n_ninf += kind == 2;
          n_pad += pad[r];
          first = std::min(first, i), last = std::max(last, i);
        }
      }
      unsigned char* d = nullptr;
      void* d_src = nullptr;
      cudaMalloc(&d, h.size());
      cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice);
      nanscope_padding_spec_t spec = nullptr;
      nanscope_status_t st = NANSCOPE_SUCCESS;
      if (src == 0) {
        cudaMalloc(&d_src, kRows * 4);
        cudaMemcpy(d_src, seq32.data(), kRows * 4, cudaMemcpyHostToDevice);
        st = nanscope_padding_spec_seq_lens(&spec, kRows, d_src, NANSCOPE_INDEX_INT32, 0);
      } else if (src == 1) {
        cudaMalloc(&d_src, kRows * 8);
        cudaMemcpy(d_src, seq64.data(), kRows * 8, cudaMemcpyHostToDevice);
        st = nanscope_padding_spec_seq_lens(&spec, kRows, d_src, NANSCOPE_INDEX_INT64, -1);
      } else if (src == 2) {
        cudaMalloc(&d_src, 4);
        cudaMemcpy(d_src, &real_count, 4, cudaMemcpyHostToDevice);
        st = nanscope_padding_spec_real_rows_device(&spec, kRows, d_src, NANSCOPE_INDEX_INT32);
      } else if (src == 3) {
        st = nanscope_padding_spec_real_rows(&spec, kRows, real_count);
      } else {
        cudaMalloc(&d_src, kRows);
        cudaMemcpy(d_src, mask.data(), kRows, cudaMemcpyHostToDevice);
        st = nanscope_padding_spec_mask(&spec, kRows, d_src);
      }
      if (st != NANSCOPE_SUCCESS) {
        std::fprintf(stderr, "spec: %s\n", nanscope_last_error());
        return 1;
      }
      const std::string name = "case" + std::to_string(case_id);
      nanscope_watch_desc_t wd{};
      wd.struct_size = sizeof wd;
      wd.name = name.c_str();
      wd.ptr = d;
      wd.dtype = t.dtype;
      wd.rows = kRows;
      wd.row_elements = row_len;
      wd.row_stride = stride;
      wd.action = fix ? NANSCOPE_ACTION_FIX : NANSCOPE_ACTION_DETECT;
      wd.padding = spec;
      nanscope_watch_t w = nullptr;
      if (nanscope_watch(&wd, &w) != NANSCOPE_SUCCESS) {
        std::fprintf(stderr, "watch: %s\n", nanscope_last_error());
        return 1;
      }
      nanscope_padding_spec_destroy(spec);
      touch<<<1, 1>>>(d + t.size * (row_len / 2), 1);  // a pointer into the middle also counts
      cudaDeviceSynchronize();
      int fix_ok = -1;
      if (fix) {
        std::vector<unsigned char> back(h.size());
        cudaMemcpy(back.data(), d, h.size(), cudaMemcpyDeviceToHost);
        fix_ok = 1;
        for (uint64_t i = 0; i < elems; ++i) {
          const int r = (int)(i / stride);
          const bool gap = i % stride >= row_len;
          const bool zero_expected = !gap && pad[r];
          for (int b = 0; b < t.size; ++b) {
            const unsigned char want = zero_expected ? 0 : h[i * t.size + b];
            if (back[i * t.size + b] != want) fix_ok = 0;
          }
        }
      }
      std::printf("{\"case\":\"%s\",\"dtype\":%d,\"source\":\"%s\",\"row_len\":%llu,\"stride\":%llu,"
                  "\"nan\":%llu,\"pos_inf\":%llu,\"neg_inf\":%llu,\"counts_padding\":%llu,\"counts_real\":%llu,"
                  "\"first_index\":%llu,\"last_index\":%llu,\"rows\":{\"padding\":%s,\"real\":%s},\"fix\":%d,\"fix_ok\":%d}\n",
                  name.c_str(), (int)t.dtype, sources[src], (unsigned long long)row_len, (unsigned long long)stride,
                  (unsigned long long)n_nan, (unsigned long long)n_pinf, (unsigned long long)n_ninf,
                  (unsigned long long)n_pad, (unsigned long long)(n_nan + n_pinf + n_ninf - n_pad),
                  (unsigned long long)first, (unsigned long long)last, ranges_json(bad_rows, pad, true).c_str(),
                  ranges_json(bad_rows, pad, false).c_str(), fix ? 1 : 0, fix_ok);
      failures += fix_ok == 0;
      nanscope_unwatch(w);
      cudaFree(d);
      if (d_src) cudaFree(d_src);
    }
  }

  // A captured graph replayed with changed seq_lens: rows 2, 3 and 5 hold NaN every replay.
  {
    const int rows = 8, len = 333;
    std::vector<float> h(rows * len, 1.0f);
    for (int r : {2, 3, 5}) h[r * len + 17] = NAN;
    float* d = nullptr;
    int* seq = nullptr;
    cudaMalloc(&d, h.size() * 4);
    cudaMalloc(&seq, rows * 4);
    cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
    nanscope_padding_spec_t spec = nullptr;
    nanscope_padding_spec_seq_lens(&spec, rows, seq, NANSCOPE_INDEX_INT32, 0);
    nanscope_watch_desc_t wd{};
    wd.struct_size = sizeof wd;
    wd.name = "graph_case";
    wd.ptr = d;
    wd.dtype = NANSCOPE_DTYPE_F32;
    wd.rows = rows;
    wd.row_elements = len;
    wd.padding = spec;
    nanscope_watch_t w = nullptr;
    nanscope_watch(&wd, &w);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    touch<<<1, 1, 0, s>>>(d, 1);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    const std::vector<std::vector<int>> seqs = {{1, 1, 0, 0, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0}};
    const char* want[] = {"{\"padding\":[[2,3]],\"real\":[[5,5]]}", "{\"padding\":[[5,5]],\"real\":[[2,3]]}",
                          "{\"padding\":[[2,3],[5,5]],\"real\":[]}"};
    const char* region[] = {"mixed", "mixed", "padding"};
    for (int r = 0; r < 3; ++r) {
      cudaMemcpyAsync(seq, seqs[r].data(), rows * 4, cudaMemcpyHostToDevice, s);
      cudaGraphLaunch(ge, s);
      cudaStreamSynchronize(s);
      std::printf("{\"graph_replay\":%d,\"region\":\"%s\",\"rows\":%s}\n", r, region[r], want[r]);
    }
    nanscope_unwatch(w);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  nanscope_flush();
  return failures ? 1 : 0;
}

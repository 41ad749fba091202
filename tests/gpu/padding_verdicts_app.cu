// Padding verdicts against a host reference: every dtype, every padding source, odd row lengths
// (257, 1500), row strides with NaN in the gaps (must be ignored), and the fix (real rows
// bit-identical, padding rows zero, gaps untouched). Then zero_padding in captured graphs (the
// zero-rows kernel) and a captured graph replayed with new seq_lens. Prints one JSON line of
// expectations per case; run_gpu_test.py compares them with the log. Linked against libnanscope
// (C API).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
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

__global__ void touch2(void* p, void* q, int n) {  // two watched buffers in one launch
  if (n < 0) static_cast<char*>(p)[0] = static_cast<char*>(q)[0] = 0;
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

// Padding spec of source `src` (the `sources` order): seq_lens int32 (pad 0), seq_lens int64
// (pad -1), a device count of real rows, a host count, a byte mask. `d_src` holds the device data.
nanscope_padding_spec_t make_spec(int src, uint64_t rows, void* d_src, int host_real) {
  nanscope_padding_spec_t spec = nullptr;
  nanscope_status_t st;
  if (src == 0) st = nanscope_padding_spec_seq_lens(&spec, rows, d_src, NANSCOPE_INDEX_INT32, 0);
  else if (src == 1) st = nanscope_padding_spec_seq_lens(&spec, rows, d_src, NANSCOPE_INDEX_INT64, -1);
  else if (src == 2) st = nanscope_padding_spec_real_rows_device(&spec, rows, d_src, NANSCOPE_INDEX_INT32);
  else if (src == 3) st = nanscope_padding_spec_real_rows(&spec, rows, host_real);
  else st = nanscope_padding_spec_mask(&spec, rows, d_src);
  if (st != NANSCOPE_SUCCESS) std::fprintf(stderr, "spec: %s\n", nanscope_last_error());
  return st == NANSCOPE_SUCCESS ? spec : nullptr;
}

// Watches `rows` rows of `row_len` elements, `stride` apart, at `d`; consumes `spec`.
nanscope_watch_t watch_rows(const std::string& name, void* d, const DT& t, uint64_t rows, uint64_t row_len,
                            uint64_t stride, nanscope_action_t action, nanscope_padding_spec_t spec) {
  nanscope_watch_desc_t wd{};
  wd.struct_size = sizeof wd;
  wd.name = name.c_str();
  wd.ptr = d;
  wd.dtype = t.dtype;
  wd.rows = rows;
  wd.row_elements = row_len;
  wd.row_stride = stride;
  wd.action = action;
  wd.padding = spec;
  nanscope_watch_t w = nullptr;
  if (nanscope_watch(&wd, &w) != NANSCOPE_SUCCESS) std::fprintf(stderr, "watch: %s\n", nanscope_last_error());
  nanscope_padding_spec_destroy(spec);
  return w;
}

// A graph of one untyped launch that takes `d`: only a watch makes nanscope scan after it.
cudaGraphExec_t capture_touch(cudaStream_t s, void* d) {
  cudaGraph_t g;
  cudaGraphExec_t ge = nullptr;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  touch<<<1, 1, 0, s>>>(d, 1);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  cudaGraphDestroy(g);
  return ge;
}

// zero_padding in a captured graph and eagerly (the zero-rows kernel): every dtype and padding
// source; rows with a tail past their last 16-byte vector, rows that start unaligned (strides of
// odd byte counts), rows of several 16 KiB chunks, and 5000 short rows (more than one block's row
// list). Three replays with new padding and new values (0 and 2 hold non-finite values in padding
// and real rows, 1 is clean), then an eager launch with non-finite values. Each must leave the padding rows zero and the real rows and gaps
// bit-identical. zero_padding reads nothing, so it reports nothing. One JSON line per (case, replay).
int zero_padding_graph_cases(std::mt19937& rng) {
  struct Shape { uint64_t rows, row_len, stride; };
  const Shape shapes[] = {{16, 1500, 1503}, {16, 257, 272}, {16, 70001, 70016}, {5000, 12, 13}};
  const char* sources[] = {"seq_lens_i32", "seq_lens_i64", "real_rows_device", "real_rows_host", "mask"};
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int case_id = 0, failures = 0;
  for (const DT& t : kTypes) {
    for (int src = 0; src < 5; ++src, ++case_id) {
      const Shape sh = shapes[case_id % 4];
      const uint64_t rows = sh.rows, elems = (rows - 1) * sh.stride + sh.row_len;
      const int host_real = (int)(rows / 3);
      void* d_src = nullptr;
      const size_t src_bytes = src == 0 ? rows * 4 : src == 1 ? rows * 8 : src == 2 ? 4 : src == 4 ? rows : 0;
      if (src_bytes) cudaMalloc(&d_src, src_bytes);
      unsigned char* d = nullptr;
      cudaMalloc(&d, elems * t.size);
      const std::string name = "zcase" + std::to_string(case_id);
      nanscope_padding_spec_t spec = make_spec(src, rows, d_src, host_real);
      nanscope_watch_t w = spec ? watch_rows(name, d, t, rows, sh.row_len, sh.stride, NANSCOPE_ACTION_ZERO_PADDING, spec) : nullptr;
      if (!w) return 1;
      cudaGraphExec_t ge = capture_touch(s, d);
      for (int rep = 0; rep < 4; ++rep) {  // three graph replays, then an eager launch
        std::vector<bool> pad(rows);
        std::vector<int32_t> seq32(rows);
        std::vector<int64_t> seq64(rows);
        std::vector<uint8_t> mask(rows);
        const int real_count = src == 3 ? host_real : (int)(rng() % (rows + 1));
        for (uint64_t r = 0; r < rows; ++r) {
          pad[r] = src <= 1 || src == 4 ? rng() % 3 == 0 : (int)r >= real_count;
          seq32[r] = pad[r] ? 0 : 1 + rng() % 100;
          seq64[r] = pad[r] ? int64_t{-1} : int64_t(1 + rng() % 100);
          mask[r] = pad[r];
        }
        std::vector<unsigned char> h(elems * t.size);
        for (uint64_t i = 0; i < elems; ++i) put(h, i, t, i % sh.stride >= sh.row_len ? t.nan : t.one);
        uint64_t bad_padding = 0, bad_real = 0;
        for (int k = 0; rep != 1 && k < 6; ++k) {  // non-finite values in six rows
          const uint64_t r = rng() % rows;
          for (int j = 0; j < 1 + (int)(rng() % 4); ++j) {
            const uint64_t i = r * sh.stride + rng() % sh.row_len;
            uint64_t one = t.one;
            if (std::memcmp(&h[i * t.size], &one, t.size) != 0) continue;  // already bad
            const int kind = t.pinf ? (int)(rng() % 3) : 0;
            put(h, i, t, kind == 0 ? t.nan : kind == 1 ? t.pinf : t.ninf);
            (pad[r] ? bad_padding : bad_real) += 1;
          }
        }
        const void* src_host = src == 0 ? (const void*)seq32.data() : src == 1 ? (const void*)seq64.data()
                             : src == 2 ? (const void*)&real_count : (const void*)mask.data();
        if (src_bytes) cudaMemcpyAsync(d_src, src_host, src_bytes, cudaMemcpyHostToDevice, s);
        cudaMemcpyAsync(d, h.data(), h.size(), cudaMemcpyHostToDevice, s);
        if (rep < 3) cudaGraphLaunch(ge, s);
        else touch<<<1, 1, 0, s>>>(d, 1);
        std::vector<unsigned char> back(h.size());
        cudaMemcpyAsync(back.data(), d, h.size(), cudaMemcpyDeviceToHost, s);
        cudaStreamSynchronize(s);
        int fix_ok = 1;
        for (uint64_t i = 0; i < elems && fix_ok; ++i) {
          const bool zero_expected = i % sh.stride < sh.row_len && pad[i / sh.stride];
          for (int b = 0; b < t.size; ++b)
            if (back[i * t.size + b] != (zero_expected ? 0 : h[i * t.size + b])) fix_ok = 0;
        }
        failures += !fix_ok;
        uint64_t padding_rows = 0;
        for (uint64_t r = 0; r < rows; ++r) padding_rows += pad[r];
        std::printf("{\"zcase\":\"%s\",\"replay\":%d,\"dtype\":%d,\"source\":\"%s\",\"rows_total\":%llu,"
                    "\"row_len\":%llu,\"stride\":%llu,\"padding_rows\":%llu,\"bad_padding\":%llu,\"bad_real\":%llu,"
                    "\"fix_ok\":%d}\n",
                    name.c_str(), rep, (int)t.dtype, sources[src], (unsigned long long)rows,
                    (unsigned long long)sh.row_len, (unsigned long long)sh.stride, (unsigned long long)padding_rows,
                    (unsigned long long)bad_padding, (unsigned long long)bad_real, fix_ok);
      }
      cudaGraphExecDestroy(ge);
      nanscope_unwatch(w);
      cudaFree(d);
      if (d_src) cudaFree(d_src);
    }
  }

  // Two zero_padding watches written by one launch (the general zero-rows entry): f32 rows with
  // int32 seq_lens, and bf16 rows with a mask, each zeroed by its own source.
  {
    const uint64_t rows = 12, len_a = 333, len_b = 2049;
    std::vector<float> ha(rows * len_a, NAN);
    std::vector<uint16_t> hb(rows * len_b, 0x7fc0);  // bf16 NaN everywhere
    std::vector<int32_t> seq(rows);
    std::vector<uint8_t> mask(rows);
    for (uint64_t r = 0; r < rows; ++r) seq[r] = r % 3 ? 5 : 0, mask[r] = r % 4 == 1;
    float* da = nullptr;
    uint16_t* db = nullptr;
    int32_t* dseq = nullptr;
    uint8_t* dmask = nullptr;
    cudaMalloc(&da, ha.size() * 4);
    cudaMalloc(&db, hb.size() * 2);
    cudaMalloc(&dseq, rows * 4);
    cudaMalloc(&dmask, rows);
    cudaMemcpy(da, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dseq, seq.data(), rows * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dmask, mask.data(), rows, cudaMemcpyHostToDevice);
    nanscope_watch_t wa = watch_rows("zpair_a", da, kTypes[1], rows, len_a, len_a, NANSCOPE_ACTION_ZERO_PADDING,
                                     make_spec(0, rows, dseq, 0));
    nanscope_watch_t wb = watch_rows("zpair_b", db, kTypes[3], rows, len_b, len_b, NANSCOPE_ACTION_ZERO_PADDING,
                                     make_spec(4, rows, dmask, 0));
    cudaGraph_t g;
    cudaGraphExec_t ge = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    touch2<<<1, 1, 0, s>>>(da, db, 1);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    cudaGraphLaunch(ge, s);
    cudaMemcpyAsync(ha.data(), da, ha.size() * 4, cudaMemcpyDeviceToHost, s);
    cudaMemcpyAsync(hb.data(), db, hb.size() * 2, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    int pair_ok = wa && wb;
    for (uint64_t i = 0; i < ha.size(); ++i) pair_ok &= (seq[i / len_a] == 0) == (ha[i] == 0.0f) && (ha[i] == 0.0f || std::isnan(ha[i]));
    for (uint64_t i = 0; i < hb.size(); ++i) pair_ok &= hb[i] == (mask[i / len_b] ? 0 : 0x7fc0);
    std::printf("{\"zpair\":1,\"ok\":%d}\n", pair_ok);
    failures += !pair_ok;
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    nanscope_unwatch(wa);
    nanscope_unwatch(wb);
    cudaFree(da), cudaFree(db), cudaFree(dseq), cudaFree(dmask);
  }
  cudaStreamDestroy(s);
  return failures;
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
        seq64[r] = pad[r] ? int64_t{-1} : int64_t(1 + rng() % 100);  // i64 case uses pad_value -1
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
      const size_t src_bytes = src == 0 ? kRows * 4 : src == 1 ? kRows * 8 : src == 2 ? 4 : src == 4 ? kRows : 0;
      const void* src_host = src == 0 ? (const void*)seq32.data() : src == 1 ? (const void*)seq64.data()
                           : src == 2 ? (const void*)&real_count : (const void*)mask.data();
      if (src_bytes) {
        cudaMalloc(&d_src, src_bytes);
        cudaMemcpy(d_src, src_host, src_bytes, cudaMemcpyHostToDevice);
      }
      const std::string name = "case" + std::to_string(case_id);
      nanscope_padding_spec_t spec = make_spec(src, kRows, d_src, real_count);
      nanscope_watch_t w = spec ? watch_rows(name, d, t, kRows, row_len, stride,
                                             fix ? NANSCOPE_ACTION_FIX : NANSCOPE_ACTION_DETECT, spec)
                                : nullptr;
      if (!w) return 1;
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

  failures += zero_padding_graph_cases(rng);

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
    nanscope_watch_t w = watch_rows("graph_case", d, kTypes[1], rows, len, len, NANSCOPE_ACTION_DETECT,
                                    make_spec(0, rows, seq, 0));
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraphExec_t ge = capture_touch(s, d);
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

// 6. The NaN-density sweep (issue 18): every scan kernel (plain, grouped, row-aware, the fused fix
// on the row-chunked and on the element walk, the zero_padding fold-in of the general row kernel)
// at none / one element / one row / half the rows / every element NaN, against the roofline of
// the same bytes measured in the same run. A scan must cost the same at every density: ratio >= 0.90.
// The roofline is the plain 16-byte-load read (xor_reduce) of the bytes the kernel reads, timed in
// the same run; a kernel that also zeroes padding rows is held to that same bandwidth over every
// byte it touches (read + stored): roofline_us = (read + stored bytes) / read GB/s. That is strict
// (HBM writes are not faster than reads) but honest: a read-and-store reference kernel of our own
// ran at a third of the fix kernel's bandwidth (run S10-1), so it measured itself, not the memory.
// One line per measurement, `density dtype=.. kernel=.. nan=.. us=.. GBps=.. roofline_GBps=..
// ratio=..` (GBps: read + stored bytes per second; roofline_GBps: the read roofline's), then the
// worst ratio.
#include <string>

#include "scan_bench_common.hpp"

namespace {

// rows: the detection-only row kernel the tool launches for watches without the fix;
// rows_general: the same detection walk in the general row kernel (tasks mixing fix and detection).
enum SweepKernel { kPlain, kGrouped, kRowsDetect, kRowsGeneral, kFixChunked, kFixElements, kZeroFoldIn };
const char* kSweepKernelNames[] = {"plain", "grouped", "rows", "rows_general", "fix", "fix_unchunked", "zero_fold_in"};
const char* kDensityNames[] = {"none", "one_element", "one_row", "half_rows", "all"};

struct SweepDType { const char* name; uint32_t dtype, finite_mask, bytes; };
const SweepDType kSweepTypes[] = {{"bf16", NS_BF16, 0xbfffbfffu, 2}, {"f16", NS_F16, 0xbfffbfffu, 2},
                                  {"f32", NS_F32, 0xbfffffffu, 4},   {"f64", NS_F64, 0xbfffffffu, 8},
                                  {"f8e4m3", NS_F8E4M3, 0xbfbfbfbfu, 1}, {"f8e5m2", NS_F8E5M2, 0xbfbfbfbfu, 1}};

// The buffer: kRows rows of kRowBytes; the last quarter of the rows are padding (seq_lens 0).
constexpr uint64_t kRows = 2048, kRowBytes = 128 * 1024, kBytes = kRows * kRowBytes, kPadRows = kRows / 4;

struct Sweep {
  const cudaDeviceProp& prop;
  CUfunction fn_plain, fn_grouped, fn_rows_detect, fn_rows, fn_zero;
  unsigned rows_detect_bps = 4, rows_bps = 4, zero_bps = 4;
  cudaStream_t s;
  Channel ch;
  unsigned char *buf = nullptr, *pristine = nullptr;
  int* seq = nullptr;
  unsigned* bitmap = nullptr;
  unsigned long long* state = nullptr;
  unsigned* sink = nullptr;
  double worst = 1e9;
  std::string worst_at;
};

// NaN (all bytes 0xff is NaN in every dtype) over the density's share of the rows.
void fill(Sweep& w, const SweepDType& d, int density) {
  fill_random<<<1024, 256, 0, w.s>>>((uint32_t*)w.buf, kBytes / 4, 18, d.finite_mask, 0);
  const uint64_t from[] = {0, kBytes / 2, kBytes - kRowBytes, kBytes / 2, 0};
  const uint64_t len[] = {0, d.bytes, kRowBytes, kBytes / 2, kBytes};
  if (len[density]) CK(cudaMemsetAsync(w.buf + from[density], 0xff, len[density], w.s));
  CK(cudaMemcpyAsync(w.pristine, w.buf, kBytes, cudaMemcpyDeviceToDevice, w.s));
  CK(cudaStreamSynchronize(w.s));
}

nanscope_scan_task sweep_task(Sweep& w, const SweepDType& d, SweepKernel k) {
  nanscope_scan_task t = make_task(w.ch, 0, w.buf, kBytes / d.bytes, d.dtype);
  if (k < kRowsDetect) return t;
  const uint64_t row_elems = kRowBytes / d.bytes;
  t.row_aware_mask = 1;
  const bool fix = k >= kFixChunked;
  t.row_specs[0] = {kRows, row_elems, row_elems, (uint64_t)w.seq, 0, 0, w.bitmap, NS_PAD_SEQ_LENS, 0, fix ? 1u : 0u, 1,
                    1.0 / row_elems, k == kFixElements ? 0u : 1u, k == kZeroFoldIn ? 1u : 0u, w.state};
  return t;
}

// Times one kernel and its roofline at the density `fill` left; prints the line.
void measure(Sweep& w, const SweepDType& d, SweepKernel k, int density) {
  nanscope_scan_task t = sweep_task(w, d, k);
  nanscope_scan_group g{};
  void* params[] = {&t};
  CUfunction fn = k == kPlain ? w.fn_plain : k == kZeroFoldIn ? w.fn_zero : k == kRowsDetect ? w.fn_rows_detect : w.fn_rows;
  nanscope::ScanPolicy pol;
  pol.blocks_per_sm = std::min(pol.blocks_per_sm, k == kZeroFoldIn    ? w.zero_bps
                                                  : k == kRowsDetect  ? w.rows_detect_bps
                                                  : k >= kRowsGeneral ? w.rows_bps
                                                                      : 4u);
  unsigned grid = nanscope::scan_grid_for_task(pol, t, kBytes, w.prop.multiProcessorCount);
  if (k == kGrouped) {  // two launches, half the buffer each
    nanscope_scan_task half = t;
    half.buffers[0].elements /= 2;
    nanscope::append_launch(g, half);
    half.buffers[0].ptr += kBytes / 2, half.launch_id = 2;
    nanscope::append_launch(g, half);
    params[0] = &g, fn = w.fn_grouped;
    grid = nanscope::scan_grid(pol, nanscope::group_max_bytes(g), w.prop.multiProcessorCount);
  }
  const bool writes = k >= kFixChunked;
  auto restore = [&] {
    if (writes) CK(cudaMemcpyAsync(w.buf, w.pristine, kBytes, cudaMemcpyDeviceToDevice, w.s));
  };
  const float ms = median_prepared_ms(
      restore, [&] { CU(cuLaunchKernel(fn, grid, 1, 1, pol.threads, 1, 1, 0, (CUstream)w.s, params, nullptr)); }, 15, w.s);
  // The kernel reads every byte (the fold-in: the padding rows only) and the fixes store zeros
  // over the padding rows; the roofline reads the same bytes and is charged the stores at its
  // own read bandwidth.
  const uint64_t pad_bytes = kPadRows * kRowBytes, from = k == kZeroFoldIn ? kBytes - pad_bytes : 0;
  const uint64_t read_bytes = kBytes - from, stored_bytes = writes ? pad_bytes : 0;
  const unsigned rgrid = w.prop.multiProcessorCount * 8;
  const float read_ms = median_ms(
      [&] { xor_reduce<<<rgrid, 512, 0, w.s>>>((const uint4*)(w.buf + from), read_bytes / 16, w.sink); }, 15, w.s);
  const double bytes = (double)(read_bytes + stored_bytes), read_gbps = (double)read_bytes / read_ms / 1e6;
  const double roof_ms = bytes / read_gbps / 1e6;
  const double ratio = roof_ms / ms;
  std::printf("density dtype=%s kernel=%s nan=%s us=%.1f GBps=%.0f roofline_GBps=%.0f ratio=%.3f\n", d.name,
              kSweepKernelNames[k], kDensityNames[density], ms * 1000, bytes / ms / 1e6, read_gbps, ratio);
  if (ratio < w.worst) w.worst = ratio, w.worst_at = std::string(d.name) + " " + kSweepKernelNames[k] + " " + kDensityNames[density];
}

void setup(Sweep& w, CUmodule mod) {
  CU(cuModuleGetFunction(&w.fn_plain, mod, "nanscope_scan"));
  CU(cuModuleGetFunction(&w.fn_grouped, mod, "nanscope_scan_grouped"));
  CU(cuModuleGetFunction(&w.fn_rows_detect, mod, "nanscope_scan_rows_detect"));
  CU(cuModuleGetFunction(&w.fn_rows, mod, "nanscope_scan_rows"));
  CU(cuModuleGetFunction(&w.fn_zero, mod, "nanscope_scan_rows_zero"));
  int fit = 0;  // the tool caps blocks per SM at what fits (ContextState)
  CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, w.fn_rows_detect, NANSCOPE_SCAN_THREADS, 0));
  w.rows_detect_bps = (unsigned)fit;
  CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, w.fn_rows, NANSCOPE_SCAN_THREADS, 0));
  w.rows_bps = (unsigned)fit;
  CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, w.fn_zero, NANSCOPE_SCAN_THREADS, 0));
  w.zero_bps = (unsigned)fit;
  CK(cudaStreamCreateWithFlags(&w.s, cudaStreamNonBlocking));
  w.ch = make_channel(1);
  w.ch.host->read_index = 1ull << 60;  // nobody drains here: let records wrap around the ring
  CK(cudaMalloc(&w.buf, kBytes));
  CK(cudaMalloc(&w.pristine, kBytes));
  std::vector<int> seq(kRows, 5);
  std::fill(seq.end() - kPadRows, seq.end(), 0);
  CK(cudaMalloc(&w.seq, kRows * sizeof(int)));
  CK(cudaMemcpy(w.seq, seq.data(), kRows * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&w.bitmap, kRows / 8));
  CK(cudaMemset(w.bitmap, 0, kRows / 8));
  CK(cudaMalloc(&w.state, 8 * NANSCOPE_STATE_WORDS));
  CK(cudaMemset(w.state, 0, 8 * NANSCOPE_STATE_WORDS));
  CK(cudaMalloc(&w.sink, sizeof(unsigned)));
}

}  // namespace

int density_sweep(const cudaDeviceProp& prop, CUmodule mod) {
  Sweep w{prop};
  setup(w, mod);
  std::printf("\nNaN-density sweep: [%llu rows, %llu KiB] (256 MiB), last quarter of the rows padding; us per scan, "
              "GB/s of the bytes it reads and stores; roofline: the 16-byte-load read GB/s of the bytes it reads, "
              "applied to every byte it touches (stores charged at the read bandwidth)\n",
              (unsigned long long)kRows, (unsigned long long)kRowBytes / 1024);
  for (const SweepDType& d : kSweepTypes) {
    for (int density = 0; density < 5; ++density) {
      fill(w, d, density);
      for (int k = kPlain; k <= kZeroFoldIn; ++k)
        if (d.dtype == NS_BF16 || k == kPlain) measure(w, d, (SweepKernel)k, density);
    }
  }
  std::printf("density_sweep worst_ratio=%.3f at %s: %s\n", w.worst, w.worst_at.c_str(),
              w.worst >= 0.9 ? "every scan >= 0.90 of the roofline" : "BELOW 0.90 of the roofline");
  CK(cudaFree(w.buf));
  CK(cudaFree(w.pristine));
  return 0;
}

// Scan benchmarks, side by side in one run on one GPU:
//  1. throughput of nanscope's scan kernel on 1 GiB fp32 / bf16 against a plain device
//     reduction of the same buffer (CUB sum, and a 16-byte-load XOR reduction = read roofline);
//  2. cost of one scan node inside a CUDA graph on a [16,128,512] bf16 buffer, against an
//     empty kernel node;
//  3.-5. row-aware scans, zero_padding in graphs and decode-sized nodes;
//  6. the NaN-density sweep of every scan kernel against the read roofline (scan_bench_density.cu;
//     `--density` runs only that).
// `--fatbin PATH` loads another build of kernels/scan.cu instead of the embedded one, so kernel
// variants can be measured side by side in one device run.
// The scan kernel is the embedded fatbin the tool uses, launched through the driver API with
// the tool's own launch geometry (src/scan_launch.hpp).
#include <cuda_bf16.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <cub/device/device_reduce.cuh>

#include "scan_bench_common.hpp"

int density_sweep(const cudaDeviceProp& prop, CUmodule mod);  // scan_bench_density.cu

namespace {

bool read_file(const char* path, std::vector<char>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !out.empty();
}

struct BenchArgs {
  bool density_only = false;
  std::string fatbin_path;
  std::vector<char> fatbin;  // empty: the embedded kernels
};

bool parse_args(int argc, char** argv, BenchArgs& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--density") {
      args.density_only = true;
    } else if (a == "--fatbin" && i + 1 < argc) {
      args.fatbin_path = argv[++i];
      if (!read_file(args.fatbin_path.c_str(), args.fatbin)) {
        std::fprintf(stderr, "scan_bench: cannot read the fatbin %s\n", args.fatbin_path.c_str());
        return false;
      }
    } else {
      std::fprintf(stderr, "scan_bench: unknown argument %s (usage: scan_bench [--density] [--fatbin PATH])\n", a.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    std::fprintf(stderr, "scan_bench: no CUDA device\n");
    return 0;
  }
  CK(cudaFree(nullptr));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  CUmodule mod;
  CUfunction scan;
  BenchArgs args;
  if (!parse_args(argc, argv, args)) return 2;
  CU(cuModuleLoadData(&mod, args.fatbin.empty() ? static_cast<const void*>(nanscope_kernels_fatbin) : args.fatbin.data()));
  CU(cuModuleGetFunction(&scan, mod, "nanscope_scan"));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Channel ch = make_channel(256);
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (!args.fatbin.empty()) std::printf("kernels: %s\n", args.fatbin_path.c_str());
  if (args.density_only) return density_sweep(prop, mod);

  // ---- 1. Throughput on 1 GiB.
  const size_t bytes = size_t{1} << 30;
  void* buf = nullptr;
  CK(cudaMalloc(&buf, bytes));
  unsigned* sink = nullptr;
  CK(cudaMalloc(&sink, sizeof(unsigned)));
  void* cub_tmp = nullptr;
  size_t cub_bytes = 0;
  float* cub_out = nullptr;
  CK(cudaMalloc(&cub_out, sizeof(float)));
  CK(cub::DeviceReduce::Sum(nullptr, cub_bytes, (const float*)buf, cub_out, bytes / 4, s));
  CK(cudaMalloc(&cub_tmp, cub_bytes));

  std::printf("\n%-34s %10s %10s %8s\n", "1 GiB buffer", "ms", "TB/s", "ratio");
  struct DT { const char* name; uint32_t dtype; uint32_t mask, bits; size_t esize; };
  // fp32: clear exponent's top bit -> always finite. bf16 pairs: same per half.
  const DT dts[] = {{"f32", NS_F32, 0xbfffffffu, 0, 4}, {"bf16", NS_BF16, 0xbfffbfffu, 0, 2}};
  for (const DT& d : dts) {
    fill_random<<<1024, 256, 0, s>>>((uint32_t*)buf, bytes / 4, 1234, d.mask, d.bits);
    CK(cudaStreamSynchronize(s));
    const double gib = (double)bytes;
    float ref_ms = median_ms([&] { xor_reduce<<<prop.multiProcessorCount * 8, 512, 0, s>>>((const uint4*)buf, bytes / 16, sink); }, 20, s);
    std::printf("%-34s %10.3f %10.2f %8s\n", (std::string("read roofline (xor reduce) ") + d.name).c_str(), ref_ms, gib / ref_ms / 1e9, "1.00");
    if (d.dtype == NS_F32) {
      float cub_ms = median_ms([&] { cub::DeviceReduce::Sum(cub_tmp, cub_bytes, (const float*)buf, cub_out, bytes / 4, s); }, 20, s);
      std::printf("%-34s %10.3f %10.2f %8.2f\n", "cub::DeviceReduce::Sum f32", cub_ms, gib / cub_ms / 1e9, ref_ms / cub_ms);
    }
    for (unsigned bps : {2u, 4u, 8u}) {
      nanscope::ScanPolicy pol;
      pol.blocks_per_sm = bps;
      nanscope_scan_task task = make_task(ch, 0, buf, bytes / d.esize, d.dtype);
      void* params[] = {&task};
      const unsigned grid = nanscope::scan_grid(pol, bytes, prop.multiProcessorCount);
      float ms = median_ms([&] { CU(cuLaunchKernel(scan, grid, 1, 1, pol.threads, 1, 1, 0, (CUstream)s, params, nullptr)); }, 20, s);
      char label[64];
      std::snprintf(label, sizeof label, "nanscope scan %s (%u blk/SM)%s", d.name, bps, bps == nanscope::ScanPolicy{}.blocks_per_sm ? " *" : "");
      std::printf("%-34s %10.3f %10.2f %8.2f\n", label, ms, gib / ms / 1e9, ref_ms / ms);
    }
  }
  if (ch.host->read_index != 0 || ((volatile nanscope_record*)(ch.host + 1))->seq != 0) {
    std::fprintf(stderr, "scan_bench: clean data produced a record\n");
    return 1;
  }

  // ---- 2. One scan node inside a graph, [16,128,512] bf16 = 2 MiB.
  const size_t small_elems = 16 * 128 * 512;
  fill_random<<<256, 256, 0, s>>>((uint32_t*)buf, small_elems / 2, 99, 0xbfffbfffu, 0);
  CK(cudaStreamSynchronize(s));
  const int nodes = 100;
  const nanscope::ScanPolicy pol;
  const unsigned small_grid = nanscope::scan_grid(pol, small_elems * 2, prop.multiProcessorCount);
  std::vector<nanscope_scan_task> small_tasks(nodes);
  // The i-th of the graph's scan nodes over the 2 MiB buffer.
  auto small_scan = [&](int i) {
    small_tasks[i] = make_task(ch, 1 + i, buf, small_elems, NS_BF16);
    void* params[] = {&small_tasks[i]};
    CU(cuLaunchKernel(scan, small_grid, 1, 1, pol.threads, 1, 1, 0, (CUstream)s, params, nullptr));
  };
  // A scan node after an app kernel that reads 2 MiB, as nanscope captures it.
  auto app_scan_ms = [&](bool with_scan) {
    return graph_replay_ms(s, [&] {
      for (int i = 0; i < nodes; ++i) {
        xor_reduce<<<prop.multiProcessorCount * 2, 512, 0, s>>>((const uint4*)buf, small_elems * 2 / 16, sink);
        if (with_scan) small_scan(i);
      }
    });
  };
  auto graph_ms = [&](bool with_scan) {
    return graph_replay_ms(s, [&] {
      for (int i = 0; i < nodes; ++i) {
        if (with_scan) small_scan(i);
        else empty_kernel<<<1, 32, 0, s>>>();
      }
    });
  };
  const float empty = graph_ms(false), scanned = graph_ms(true);
  std::printf("\n%-34s %10s\n", "graph of 100 nodes, [16,128,512] bf16", "us/node");
  std::printf("%-34s %10.2f\n", "empty kernel node", empty * 1000 / nodes);
  std::printf("%-34s %10.2f\n", "nanscope scan node", scanned * 1000 / nodes);
  const float app = app_scan_ms(false), app_scanned = app_scan_ms(true);
  std::printf("%-34s %10.2f\n", "app kernel (2 MiB read) node", app * 1000 / nodes);
  std::printf("%-34s %10.2f\n", "  + its scan node", (app_scanned - app) * 1000 / nodes);

  // ---- 3. Row-aware scan and fused scan+fix over [1024,128,512] bf16, 16 padding rows.
  {
    CUfunction scan_rows, scan_zero, scan_detect;  // detect: the detection-only row kernel (watches without the fix)
    CU(cuModuleGetFunction(&scan_rows, mod, "nanscope_scan_rows"));
    CU(cuModuleGetFunction(&scan_detect, mod, "nanscope_scan_rows_detect"));
    CU(cuModuleGetFunction(&scan_zero, mod, "nanscope_scan_rows_zero"));
    const uint64_t rows = 1024, row_elems = 128 * 512, elems = rows * row_elems;
    fill_random<<<1024, 256, 0, s>>>((uint32_t*)buf, elems / 2, 7, 0xbfffbfffu, 0);
    std::vector<int> seq(rows, 5);
    for (int r = 0; r < 16; ++r) seq[rows - 1 - r] = 0;
    int* d_seq = nullptr;
    unsigned* bitmap = nullptr;
    CK(cudaMalloc(&d_seq, rows * sizeof(int)));
    CK(cudaMemcpy(d_seq, seq.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&bitmap, rows / 8));
    CK(cudaMemset(bitmap, 0, rows / 8));
    unsigned long long* state = nullptr;  // the watch's previous-scan state
    CK(cudaMalloc(&state, 8 * NANSCOPE_STATE_WORDS));
    CK(cudaMemset(state, 0, 8 * NANSCOPE_STATE_WORDS));
    CK(cudaStreamSynchronize(s));
    nanscope::ScanPolicy rows_pol;  // the tool caps blocks per SM at what fits (ContextState)
    int fit = 0;
    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, scan_rows, (int)rows_pol.threads, 0));
    rows_pol.blocks_per_sm = std::min<unsigned>(rows_pol.blocks_per_sm, (unsigned)fit);
    nanscope::ScanPolicy detect_pol;
    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, scan_detect, (int)detect_pol.threads, 0));
    detect_pol.blocks_per_sm = std::min<unsigned>(detect_pol.blocks_per_sm, (unsigned)fit);
    nanscope::ScanPolicy zero_pol;
    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, scan_zero, (int)zero_pol.threads, 0));
    zero_pol.blocks_per_sm = std::min<unsigned>(zero_pol.blocks_per_sm, (unsigned)fit);
    auto time_task = [&](CUfunction fn, bool row_aware, bool fix) {
      nanscope_scan_task t = make_task(ch, 200, buf, elems, NS_BF16);
      if (row_aware) {
        t.row_aware_mask = 1;
        t.row_specs[0] = {rows, row_elems, row_elems, (uint64_t)d_seq, 0, 0, bitmap, NS_PAD_SEQ_LENS, 0, fix ? 1u : 0u, 1, 1.0 / row_elems, 1u, 0u, state};
      }
      void* params[] = {&t};
      const nanscope::ScanPolicy& rp = fn == scan_detect ? detect_pol : rows_pol;
      const unsigned grid = nanscope::scan_grid(row_aware ? rp : pol, elems * 2, prop.multiProcessorCount);
      return median_ms([&] { CU(cuLaunchKernel(fn, grid, 1, 1, pol.threads, 1, 1, 0, (CUstream)s, params, nullptr)); }, 20, s);
    };
    const float plain = time_task(scan, false, false);
    const float rows_only = time_task(scan_rows, true, false);
    const float detect_only = time_task(scan_detect, true, false);
    const float fused = time_task(scan_rows, true, true);
    std::printf("\n%-34s %10s %10s %8s\n", "[1024,128,512] bf16, 16 pad rows", "us", "TB/s", "vs plain");
    const double b = (double)elems * 2;
    std::printf("%-34s %10.1f %10.2f %8.2f\n", "plain scan", plain * 1000, b / plain / 1e9, 1.0);
    std::printf("%-34s %10.1f %10.2f %8.2f\n", "row-aware scan (verdicts)", rows_only * 1000, b / rows_only / 1e9, rows_only / plain);
    std::printf("%-34s %10.1f %10.2f %8.2f\n", "  the same, detection-only kernel", detect_only * 1000, b / detect_only / 1e9,
                detect_only / plain);
    std::printf("%-34s %10.1f %10.2f %8.2f\n", "fused scan + fix", fused * 1000, b / fused / 1e9, fused / plain);

    // ---- 4. zero_padding (the seed's fix) inside a graph: 100 nodes, [B,128,512] bf16. Graphs
    // run the zero-rows kernel; the general row kernel (eager zero_padding) is shown beside it.
    // Clean data, then NaN in every padding row (the seed's bug: a record every replay).
    CUfunction zero_rows;  // one bf16 buffer, int32 seq_lens: the entry the tool picks (zero_rows_entry)
    CU(cuModuleGetFunction(&zero_rows, mod, "nanscope_zero_rows_seq32"));
    std::printf("\n%-34s %10s\n", "zero_padding in a graph, bf16", "us/node");
    for (uint64_t B : {1, 8, 32, 64, 128, 256, 512, 1024}) {
      const uint64_t pad = B <= 16 ? (B + 1) / 2 : 16;
      std::vector<int> sl(B, 5);
      for (uint64_t r = 0; r < pad; ++r) sl[B - 1 - r] = 0;
      CK(cudaMemcpy(d_seq, sl.data(), B * sizeof(int), cudaMemcpyHostToDevice));
      auto zero_graph = [&](bool lean, bool nan_rows) {
        std::vector<nanscope_scan_task> tasks(nodes);
        std::vector<nanscope_zero_task> zero_tasks(nodes);  // the zero-rows kernel's parameter
        CK(cudaMemset(ch.accum, 0, (nodes + 1) * sizeof(nanscope_scan_accum)));
        ch.host->read_index = 1ull << 60;  // nobody drains here: let records wrap around the ring
        const float ms = graph_replay_ms(s, [&] {
          for (int i = 0; i < nodes; ++i) {
            // NaN back into the padding rows before each node (a plain memset node, in both graphs).
            if (nan_rows) CK(cudaMemsetAsync((char*)buf + (B - pad) * row_elems * 2, 0xff, pad * row_elems * 2, s));
            tasks[i] = make_task(ch, 1 + i, buf, B * row_elems, NS_BF16);
            tasks[i].row_aware_mask = 1;
            tasks[i].row_specs[0] = {B, row_elems, row_elems, (uint64_t)d_seq, 0, 0, bitmap, NS_PAD_SEQ_LENS, 0, 1u, 1,
                                     1.0 / row_elems, 1u, 1u, state};
            const unsigned g = lean ? nanscope::zero_rows_grid(pol, tasks[i], prop.multiProcessorCount)
                                    : nanscope::scan_grid_for_task(zero_pol, tasks[i], B * row_elems * 2, prop.multiProcessorCount);
            zero_tasks[i] = nanscope::zero_task_of(tasks[i]);
            void* params[] = {lean ? static_cast<void*>(&zero_tasks[i]) : static_cast<void*>(&tasks[i])};
            CU(cuLaunchKernel(lean ? zero_rows : scan_zero, g, 1, 1, lean ? nanscope::kZeroRowsThreads : pol.threads, 1, 1, 0,
                              (CUstream)s, params, nullptr));
          }
        });
        ch.host->read_index = 0;
        return ms * 1000 / nodes;
      };
      const float lean = zero_graph(true, false), general = zero_graph(false, false);
      const float lean_nan = zero_graph(true, true), general_nan = zero_graph(false, true);
      const float memsets = graph_replay_ms(s, [&] {
        for (int i = 0; i < nodes; ++i)
          CK(cudaMemsetAsync((char*)buf + (B - pad) * row_elems * 2, 0xff, pad * row_elems * 2, s));
      }) * 1000 / nodes;
      // With NaN rows, the memset node that writes them is subtracted (measured alone, same run).
      std::printf("zero_padding B=%llu pad=%llu us=%.2f general_us=%.2f nan_rows_us=%.2f general_nan_rows_us=%.2f "
                  "(memset node %.2f)\n",
                  (unsigned long long)B, (unsigned long long)pad, lean, general, lean_nan - memsets,
                  general_nan - memsets, memsets);
    }

    // ---- 5. A decode-sized output in a graph ([8,256] bf16, 3 padding rows), the node a watch
    // adds after its writer: clean, and with NaN in the padding rows (a record every replay).
    {
      const uint64_t R = 8, L = 256;
      std::vector<int> sl(R, 5);
      for (uint64_t r = 5; r < R; ++r) sl[r] = 0;
      CK(cudaMemcpy(d_seq, sl.data(), R * sizeof(int), cudaMemcpyHostToDevice));
      std::vector<uint16_t> h(R * L, 0x3f80);  // bf16 1.0
      auto bench_small = [&](CUfunction fn, bool row_aware, bool with_nan, bool quiet = false) {
        for (uint64_t i = 5 * L; i < R * L; ++i) h[i] = with_nan ? 0x7fc0 : 0x3f80;
        CK(cudaMemcpy(buf, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
        ch.host->read_index = 1ull << 60;  // nobody drains here: let records wrap around the ring
        std::vector<nanscope_scan_task> tasks(nodes);
        const float ms = graph_replay_ms(s, [&] {
          for (int i = 0; i < nodes; ++i) {
            tasks[i] = make_task(ch, 1 + i, buf, R * L, NS_BF16);
            if (row_aware) {
              tasks[i].row_aware_mask = 1;
              tasks[i].row_specs[0] = {R, L, L, (uint64_t)d_seq, 0, 0, bitmap, NS_PAD_SEQ_LENS, 0, 0u, 1, 1.0 / L, 1u, 0u, state,
                                       quiet ? 1u : 0u};
            }
            void* params[] = {&tasks[i]};
            const unsigned grid = nanscope::scan_grid_for_task(row_aware ? rows_pol : pol, tasks[i], R * L * 2,
                                                               prop.multiProcessorCount);
            CU(cuLaunchKernel(fn, grid, 1, 1, pol.threads, 1, 1, 0, (CUstream)s, params, nullptr));
          }
        });
        return ms * 1000 / nodes;
      };
      std::printf("\n%-34s %10s %10s %10s\n", "[8,256] bf16 node in a graph", "clean us", "NaN us", "NaN again");
      const float pc = bench_small(scan, false, false), pn = bench_small(scan, false, true);
      std::printf("%-34s %10.2f %10.2f %10s\n", "plain scan", pc, pn, "-");
      const float rc = bench_small(scan_rows, true, false), rn = bench_small(scan_rows, true, true),
                  rq = bench_small(scan_rows, true, true, true);
      std::printf("%-34s %10.2f %10.2f %10.2f\n", "row-aware scan (watch)", rc, rn, rq);
      const float dc = bench_small(scan_detect, true, false), dn = bench_small(scan_detect, true, true),
                  dq = bench_small(scan_detect, true, true, true);
      std::printf("%-34s %10.2f %10.2f %10.2f\n", "  the same, detection-only kernel", dc, dn, dq);
      ch.host->read_index = 0;
    }
  }
  CK(cudaFree(buf));
  return density_sweep(prop, mod);
}

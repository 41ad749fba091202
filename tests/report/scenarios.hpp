// Synthetic multi-process logs shared by the golden, trace and HTML tests.
#pragma once

#include "synth.hpp"

namespace synth {

inline const char* kLongKernel =
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::half_t, "
    "Flash_kernel_traits<128, 64, 64, 4, cutlass::half_t>>, true, false, false, false, true, true, false>"
    "(flash::Flash_fwd_params)";

// Three ranks of a training job. Rank 1 introduces the first NaN (50 us), rank 0 introduces one
// in padding rows (100 us) that leaks into real rows in a later kernel; rank 2's log ends in a
// line cut short by a crash.
inline void write_training(const TempDir& dir) {
  Log r0(1000, 0);
  r0.start(0);
  std::int64_t ln = r0.nonfinite(100, "void layer_norm<float>(float*, float const*, int)", 512,
                                 {{"graph_id", 7}, {"graph_node", 1}, {"replay", 0}, {"region", "padding"},
                                  {"counts_padding", 512}, {"counts_real", 0},
                                  {"rows", {{"padding", {{28, 31}}}, {"real", json::array()}, {"truncated", false}}},
                                  {"rows_total", 32}, {"origin", "introduced"}, {"fixed", false}});
  r0.repeat(200, ln, 9, 10, {{"first_replay", 1}, {"last_replay", 9}});
  std::int64_t gemm = r0.nonfinite(300, "gemm_f32(float*, float const*, float const*, int, int, int)", 128,
                                   {{"stream", "0x5a00"}, {"region", "real"},
                                    {"rows", {{"padding", json::array()}, {"real", {{0, 3}}}}},
                                    {"origin", "propagated"}, {"parents", {ln}}, {"root", {ln}}, {"leak", true},
                                    {"dump", "gemm_out.npy"}});
  r0.nonfinite(400, "softmax_rows(float*, int)", 16,
               {{"stream", "0x5a00"}, {"region", "mixed"}, {"counts_padding", 10}, {"counts_real", 6},
                {"rows", {{"padding", {{30, 31}}}, {"real", {{2, 2}}}}}, {"origin", "propagated"},
                {"parents", {gemm}}, {"root", {ln}}, {"fixed", true}});
  r0.summary(1000, 2, 1);
  r0.write(dir / "rank0.jsonl");

  Log r1(1001, 1);
  r1.start(0);
  std::int64_t at = r1.nonfinite(50, kLongKernel, 64,
                                 {{"buffer", {{"arg", 3}, {"ptr", "0x7f0000001000"}, {"dtype", "f16"}, {"elements", 8192}, {"name", "o"}}},
                                  {"region", "real"}, {"rows", {{"padding", json::array()}, {"real", {{4, 5}}}}},
                                  {"rows_total", 64}, {"origin", "introduced"}});
  r1.repeat(500, at, 4, 5);
  r1.repeat(900, at, 0, 5, {{"final", true}});
  r1.summary(1000);
  r1.write(dir / "rank1.jsonl");

  Log r2(1002, 2);
  r2.start(0);
  r2.nonfinite(80, "void layer_norm<float>(float*, float const*, int)", 32,
               {{"region", "padding"}, {"rows", {{"padding", {{60, 63}}}}}, {"origin", "introduced"}});
  std::string last = r2.base("nonfinite", 90).dump();
  r2.raw(last.substr(0, last.size() / 2));  // the writer crashed mid-line
  r2.write(dir / "rank2.jsonl", /*final_newline=*/false);
}

// An older log without origin or region data: the report falls back to the earliest finding.
inline void write_no_origin(const TempDir& dir) {
  Log p(77);
  p.start(0);
  p.nonfinite(20, "reduce_sum(float const*, float*, int)", 3);
  p.nonfinite(10, "scale(float*, float, int)", 1);
  p.summary(30);
  p.write(dir / "old.log");
}

}  // namespace synth

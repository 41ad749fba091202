// Logs with NaN-first verdicts (`inf`, `cause`, `intended_from`, `spread`, `last_writer`,
// origin `preexisting`), written event by event as the engine would, for test_verdicts*.cpp.
#pragma once

#include "synth.hpp"

namespace synth {

inline constexpr const char* kLlama = "/app/transformers/models/llama/modeling_llama.py";
inline constexpr const char* kTrain = "/app/train.py";

inline json py(const char* file, int line, const char* function) {
  return {{"file", file}, {"line", line}, {"function", function}};
}

inline json inf_counts(std::int64_t pos, std::int64_t neg) { return {{"nan", 0}, {"pos_inf", pos}, {"neg_inf", neg}}; }

// An intended -inf mask: `fill` writes it (introduced), `where` carries it (propagated). Returns
// the fill's id.
inline std::int64_t mask_events(Log& log, std::int64_t t_us) {
  const std::int64_t fill = log.next_id();
  log.nonfinite(t_us, "fill_kernel(float*, float, int)", 0,
                {{"counts", inf_counts(0, 4096)}, {"region", "unknown"}, {"origin", "introduced"}, {"root", {fill}},
                 {"inf", "intended"}, {"cause", {fill}}, {"python", py(kLlama, 412, "LlamaModel._update_causal_mask")}});
  log.nonfinite(t_us + 10, "where_kernel(float*, bool const*, float const*, int)", 0,
                {{"counts", inf_counts(0, 2048)}, {"region", "unknown"}, {"origin", "propagated"}, {"parents", {fill}},
                 {"root", {fill}}, {"inf", "intended"}, {"cause", {fill}},
                 {"python", py(kLlama, 415, "LlamaModel._update_causal_mask")}});
  return fill;
}

// A healthy run: the mask and nothing else.
inline void write_mask_only(const TempDir& dir) {
  Log log(100);
  log.start(0);
  mask_events(log, 10);
  log.summary(100);
  log.write(dir / "mask.jsonl");
}

// The mask, then a softmax over a fully masked row (NaN made from intended -inf: its own cause),
// then a GEMM that reads the NaN into every row (a spread point).
inline void write_masked_softmax(const TempDir& dir) {
  Log log(101);
  log.start(0);
  const std::int64_t fill = mask_events(log, 10);
  const std::int64_t softmax = log.next_id();
  log.nonfinite(30, "softmax_kernel(float*, float const*, int)", 64,
                {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {fill + 1}}, {"root", {fill}},
                 {"cause", {softmax}}, {"intended_from", {fill}}, {"python", py(kLlama, 430, "LlamaAttention.forward")}});
  log.nonfinite(40, "gemm_kernel(float*, float const*, float const*)", 4096,
                {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {softmax}}, {"root", {fill}},
                 {"cause", {softmax}}, {"intended_from", {fill}}, {"spread", {{"before", 0.015625}, {"after", 1.0}}},
                 {"python", py(kLlama, 433, "LlamaAttention.forward")}});
  log.summary(100);
  log.write(dir / "softmax.jsonl");
}

// Flash attention's by-design +inf logsumexp padding (intended); returns its id.
inline std::int64_t lse_event(Log& log, std::int64_t t_us) {
  const std::int64_t lse = log.next_id();
  log.nonfinite(t_us, "flash_fwd_kernel(Flash_fwd_params)", 0,
                {{"counts", inf_counts(128, 0)}, {"region", "unknown"}, {"origin", "introduced"}, {"root", {lse}},
                 {"inf", "intended"}, {"cause", {lse}}, {"python", py(kLlama, 520, "flash_attention_forward")}});
  return lse;
}

// log(0) at the loss line makes -inf (arithmetic); a multiply turns it into NaN. An unrelated
// LSE +inf comes first.
inline void write_log_zero(const TempDir& dir) {
  Log log(102);
  log.start(0);
  lse_event(log, 5);
  const std::int64_t lg = log.next_id();
  log.nonfinite(20, "log_kernel(float*, float const*, int)", 0,
                {{"counts", inf_counts(0, 16)}, {"region", "unknown"}, {"origin", "introduced"}, {"root", {lg}},
                 {"inf", "arithmetic"}, {"cause", {lg}}, {"python", py(kTrain, 57, "compute_loss")}});
  log.nonfinite(30, "mul_kernel(float*, float const*, float const*, int)", 16,
                {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {lg}}, {"root", {lg}}, {"cause", {lg}},
                 {"python", py(kTrain, 58, "compute_loss")}});
  log.summary(100);
  log.write(dir / "log0.jsonl");
}

// An LSE +inf that never becomes NaN.
inline void write_lse_only(const TempDir& dir) {
  Log log(103);
  log.start(0);
  lse_event(log, 5);
  log.summary(100);
  log.write(dir / "lse.jsonl");
}

// A NaN in padding rows leaks into a buffer with no padding spec (no rows_after), which an amax
// then spreads over its whole output.
inline void write_leak_and_spread(const TempDir& dir) {
  Log log(104);
  log.start(0);
  const std::int64_t pad = log.next_id();
  log.nonfinite(10, "embed_kernel(float*, int)", 8,
                {{"region", "padding"}, {"rows", {{"padding", {{60, 63}}}, {"real", json::array()}}}, {"rows_total", 64},
                 {"origin", "introduced"}, {"root", {pad}}, {"cause", {pad}}});
  const std::int64_t leak = log.nonfinite(20, "attn_kernel(float*, float const*)", 512,
                                          {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {pad}},
                                           {"root", {pad}}, {"cause", {pad}}, {"leak", true}});
  log.nonfinite(30, "amax_kernel(float*, float const*, int)", 4096,
                {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {leak}}, {"root", {pad}}, {"cause", {pad}},
                 {"spread", {{"before", 0.03125}, {"after", 1.0}}}, {"python", py(kTrain, 90, "fp8_scale")}});
  log.summary(100);
  log.write(dir / "spread.jsonl");
}

// `init_kernel` leaves NaN in a buffer (10 us); `scatter_kernel` later finds it there without
// writing it (origin preexisting, 20 us): its cause is the last writer's.
inline void write_preexisting(const TempDir& dir) {
  Log log(105);
  log.start(0);
  const std::int64_t init = log.next_id();
  log.nonfinite(10, "init_kernel(float*, int)", 32,
                {{"region", "unknown"}, {"origin", "introduced"}, {"root", {init}}, {"cause", {init}},
                 {"python", py(kTrain, 12, "init_weights")}});
  log.nonfinite(20, "scatter_kernel(float*, long const*, int)", 32,
                {{"region", "unknown"}, {"origin", "preexisting"}, {"parents", {init}}, {"root", {init}},
                 {"cause", {init}}, {"python", py(kTrain, 40, "update")},
                 {"last_writer", {{"event", init}, {"kernel", "init_kernel(float*, int)"}, {"launch_id", 1},
                                  {"python", py(kTrain, 12, "init_weights")}}}});
  log.summary(100);
  log.write(dir / "pre.jsonl");
}

}  // namespace synth

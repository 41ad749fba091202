// NaN-first FIRST CAUSE (src/report/verdicts.cpp): intended infinities are no first cause, a NaN
// made from them is its own, an arithmetic infinity that made NaN is the first cause, and a
// preexisting finding only says who wrote the values before.
#include <gtest/gtest.h>

#include "verdict_scenarios.hpp"

namespace {

using namespace synth;
using nlohmann::json;

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

json report_json(const std::vector<std::string>& args, int expect_rc) {
  std::vector<std::string> all = args;
  all.insert(all.end(), {"--format", "json"});
  const Result r = run(all);
  EXPECT_EQ(r.rc, expect_rc) << r.err << r.out;
  EXPECT_EQ(r.err, "");
  return json::parse(r.out);
}

Result report_text(std::vector<std::string> args) {
  args.insert(args.end(), {"--color", "never"});
  return run(args);
}

TEST(Verdicts, AnIntendedMaskIsNoFirstCause) {
  TempDir dir;
  write_mask_only(dir);
  const Result r = report_text({dir / "mask.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  none (no NaN; 2 infinity finding(s) are not faults, see INFINITIES)\n")) << r.out;
  EXPECT_TRUE(has(r.out, "INFINITIES (infinity-only findings: not faults by default; --inf-faults counts them)")) << r.out;
  EXPECT_TRUE(has(r.out, "fill_kernel(float*, float, int)")) << r.out;
  EXPECT_TRUE(has(r.out, "modeling_llama.py:412")) << r.out;
  EXPECT_TRUE(has(r.out, "PASS  --fail-on real (2 finding(s), none that gate: 2 infinity finding(s) that are not faults)"))
      << r.out;
  const json j = report_json({dir / "mask.jsonl"}, 0);
  EXPECT_TRUE(j["first_cause"].is_null());
  EXPECT_TRUE(j["first_cause_per_process"].empty());
  ASSERT_EQ(j["infinities"].size(), 2u);
  EXPECT_EQ(j["infinities"][0]["kernel"], "fill_kernel(float*, float, int)");
  EXPECT_EQ(j["infinities"][0]["inf"], "intended");
  EXPECT_EQ(j["infinities"][0]["python"], "modeling_llama.py:412");
  EXPECT_EQ(j["infinities"][0]["counts"]["neg_inf"], 4096);
  EXPECT_EQ(j["infinities"][1]["origin"], "propagated");
  EXPECT_EQ(j["totals"]["faults"], 0);
  EXPECT_EQ(j["totals"]["infinities"]["intended"], 2);
  EXPECT_EQ(j["gate"]["triggered"], false);
  EXPECT_EQ(report_json({dir / "mask.jsonl", "--fail-on", "any"}, 0)["gate"]["triggered"], false);
}

TEST(Verdicts, InfFaultsMakesTheMaskAFault) {
  TempDir dir;
  write_mask_only(dir);
  const Result r = report_text({dir / "mask.jsonl", "--inf-faults"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n  kernel   fill_kernel(float*, float, int)\n")) << r.out;
  EXPECT_FALSE(has(r.out, "INFINITIES")) << r.out;
  EXPECT_TRUE(has(r.out, "(--inf-faults: every infinity is one)")) << r.out;
  const json j = report_json({dir / "mask.jsonl", "--inf-faults"}, 1);
  EXPECT_EQ(j["first_cause"]["kernel"], "fill_kernel(float*, float, int)");
  EXPECT_EQ(j["gate"]["inf_faults"], true);
  EXPECT_EQ(j["totals"]["faults"], 2);
}

TEST(Verdicts, NaNMadeFromTheMaskIsItsOwnCause) {
  TempDir dir;
  write_masked_softmax(dir);
  const Result r = report_text({dir / "softmax.jsonl"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  made NaN from intended infinities\n  kernel   softmax_kernel(float*, float const*, int)\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, std::string("  inputs   held -inf from the intended write at ") + kLlama +
                             ":412 (event 2, kernel fill_kernel(float*, float, int))\n"))
      << r.out;
  EXPECT_FALSE(has(r.out, "led to")) << r.out;  // the softmax is the earliest fault itself
  const json j = report_json({dir / "softmax.jsonl"}, 1);
  const json& fc = j["first_cause"];
  EXPECT_EQ(fc["kernel"], "softmax_kernel(float*, float const*, int)");
  EXPECT_EQ(fc["label"], "made NaN from intended infinities");
  EXPECT_EQ(fc["intended_from"], json::array({2}));
  ASSERT_EQ(fc["intended_writes"].size(), 1u);
  EXPECT_EQ(fc["intended_writes"][0]["kernel"], "fill_kernel(float*, float, int)");
  EXPECT_EQ(fc["intended_writes"][0]["python"]["line"], 412);
  EXPECT_TRUE(fc["earliest_fault"].is_null());
  EXPECT_EQ(j["first_cause_per_process"][0]["kernel"], "softmax_kernel(float*, float const*, int)");
  EXPECT_EQ(j["infinities"].size(), 2u);  // the mask stays an intended infinity
}

TEST(Verdicts, AnArithmeticInfinityThatMadeNaNIsTheFirstCause) {
  TempDir dir;
  write_log_zero(dir);
  const Result r = report_text({dir / "log0.jsonl"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n  kernel   log_kernel(float*, float const*, int)\n  python   "
                         "/app/train.py:57 in compute_loss\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  led to   NaN in mul_kernel(float*, float const*, float const*, int) (event 4, at "
                         "/app/train.py:58): the earliest fault\n"))
      << r.out;
  // The LSE is listed as an infinity; the log kernel is not (it made NaN: a fault).
  const std::size_t infinities = r.out.find("INFINITIES");
  ASSERT_NE(infinities, std::string::npos) << r.out;
  const std::string rest = r.out.substr(infinities, r.out.find("PER KERNEL") - infinities);
  EXPECT_TRUE(has(rest, "flash_fwd_kernel")) << rest;
  EXPECT_FALSE(has(rest, "log_kernel")) << rest;
  const json j = report_json({dir / "log0.jsonl"}, 1);
  EXPECT_EQ(j["first_cause"]["kernel"], "log_kernel(float*, float const*, int)");
  EXPECT_EQ(j["first_cause"]["inf"], "arithmetic");
  EXPECT_EQ(j["first_cause"]["earliest_fault"]["kernel"], "mul_kernel(float*, float const*, float const*, int)");
  ASSERT_EQ(j["infinities"].size(), 1u);
  EXPECT_EQ(j["infinities"][0]["kernel"], "flash_fwd_kernel(Flash_fwd_params)");
  EXPECT_EQ(j["totals"]["faults"], 2);  // the multiply, and the log that made its NaN
  EXPECT_EQ(j["totals"]["infinities"]["arithmetic"], 0);
  EXPECT_EQ(j["totals"]["infinities"]["intended"], 1);
}

TEST(Verdicts, AnLseInfinityAloneIsHealthy) {
  TempDir dir;
  write_lse_only(dir);
  const Result r = report_text({dir / "lse.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  none (no NaN; 1 infinity finding(s) are not faults, see INFINITIES)")) << r.out;
  EXPECT_TRUE(has(r.out, "flash_fwd_kernel(Flash_fwd_params)")) << r.out;
  const json j = report_json({dir / "lse.jsonl"}, 0);
  ASSERT_EQ(j["infinities"].size(), 1u);
  EXPECT_EQ(j["infinities"][0]["counts"]["pos_inf"], 128);
  EXPECT_EQ(report_json({dir / "lse.jsonl", "--inf-faults"}, 1)["first_cause"]["kernel"], "flash_fwd_kernel(Flash_fwd_params)");
}

// Seen alone (a --since past the writer), the preexisting finding is the earliest fault: the card
// shows its cause, the last writer, and the finding it led to.
TEST(Verdicts, APreexistingFindingNamesItsLastWriter) {
  TempDir dir;
  write_preexisting(dir);
  const std::string since = std::to_string(kT0 + 15'000);
  const Result r = report_text({dir / "pre.jsonl", "--since", since});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n  kernel   init_kernel(float*, int)\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  left by  event 3 (scatter_kernel(float*, long const*, int)) found its buffer already "
                         "non-finite (origin preexisting): written by init_kernel(float*, int) (event 2, launch #1, at "
                         "/app/train.py:12)\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  led to   NaN in scatter_kernel(float*, long const*, int) (event 3, at /app/train.py:40)")) << r.out;
  const json j = report_json({dir / "pre.jsonl", "--since", since}, 1);
  EXPECT_EQ(j["first_cause"]["kernel"], "init_kernel(float*, int)");
  EXPECT_EQ(j["first_cause"]["preexisting"]["id"], 3);
  EXPECT_EQ(j["first_cause"]["preexisting"]["last_writer"]["event"], 2);
  EXPECT_EQ(j["first_cause"]["preexisting"]["last_writer"]["python"]["line"], 12);
}

TEST(Verdicts, APreexistingFindingIsNeverAFirstCauseOnItsOwn) {
  TempDir dir;
  write_preexisting(dir);
  const json j = report_json({dir / "pre.jsonl"}, 1);
  EXPECT_EQ(j["first_cause"]["kernel"], "init_kernel(float*, int)");
  EXPECT_TRUE(j["first_cause"]["preexisting"].is_null());  // the writer is the earliest fault itself
  // Without `cause` (the selection of older logs) it is not picked either.
  Log log(106);
  log.nonfinite(10, "host_copy", 4, {{"origin", "host"}, {"region", "unknown"}});
  log.nonfinite(5, "scatter_kernel", 4, {{"origin", "preexisting"}, {"region", "unknown"}});
  log.write(dir / "nocause.jsonl");
  const json k = report_json({dir / "nocause.jsonl"}, 1);
  EXPECT_EQ(k["first_cause"]["kernel"], "host_copy");
}

// A cause the report did not keep is said, and the earliest fault shown instead.
TEST(Verdicts, ACauseNotKeptIsSaid) {
  TempDir dir;
  Log log(107);
  log.nonfinite(10, "mul_kernel", 4, {{"origin", "propagated"}, {"parents", {999}}, {"cause", {999}}, {"region", "real"}});
  log.write(dir / "lost.jsonl");
  const Result r = report_text({dir / "lost.jsonl"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  earliest fault (the event its cause names was not kept)\n  kernel   mul_kernel\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "  cause    event 999 was not kept")) << r.out;
  EXPECT_EQ(report_json({dir / "lost.jsonl"}, 1)["first_cause"]["causes_not_kept"], json::array({999}));
}

// Older logs: an infinity-only finding without `inf` is a fault; no `cause` keeps the old choice.
TEST(Verdicts, LegacyInfinitiesStayFaults) {
  TempDir dir;
  Log log(108);
  log.nonfinite(10, "exp_kernel", 0, {{"counts", inf_counts(3, 0)}, {"origin", "introduced"}});
  log.nonfinite(5, "early_propagated", 2, {{"origin", "propagated"}});
  log.write(dir / "old.jsonl");
  const Result r = report_text({dir / "old.jsonl"});
  EXPECT_EQ(r.rc, 1) << r.out;  // region absent: not proven to be padding
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n  kernel   exp_kernel\n")) << r.out;
  EXPECT_FALSE(has(r.out, "INFINITIES")) << r.out;
  EXPECT_FALSE(has(r.out, "faults     ")) << r.out;  // no NaN-first line for an older log
}

}  // namespace

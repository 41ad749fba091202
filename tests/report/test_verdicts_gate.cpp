// The NaN-first gate (docs/report.md, "Gating"): every fault not proven to be in padding rows
// only fails --fail-on real; infinities that are not faults never gate. SPREAD POINTS, leaks
// without rows, and the INFINITIES / TOTALS figures in text, JSON and HTML.
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
  return json::parse(r.out);
}

Result report_text(std::vector<std::string> args) {
  args.insert(args.end(), {"--color", "never"});
  return run(args);
}

// A run where every real token was NaN but no padding spec was set: it fails now.
TEST(VerdictGate, AFaultInRowsNotKnownFailsReal) {
  TempDir dir;
  Log log(200);
  const std::int64_t id = log.next_id();
  log.nonfinite(10, "rms_norm_kernel", 4096, {{"region", "unknown"}, {"origin", "introduced"}, {"cause", {id}}});
  log.write(dir / "unknown.jsonl");
  const Result r = report_text({dir / "unknown.jsonl"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FAIL  --fail-on real: 1 fault(s) not proven to be in padding rows only (0 in real rows, 1 in "
                         "rows not known)\n"))
      << r.out;
  const json j = report_json({dir / "unknown.jsonl"}, 1);
  EXPECT_EQ(j["gate"]["faults_not_padding"], 1);
  EXPECT_EQ(j["totals"]["faults"], 1);
  Log old(201);  // no region at all (an older log)
  old.nonfinite(10, "k", 1);
  old.write(dir / "absent.jsonl");
  EXPECT_EQ(run({dir / "absent.jsonl"}).rc, 1);
  EXPECT_EQ(run({dir / "absent.jsonl", "--fail-on", "never"}).rc, 0);
}

TEST(VerdictGate, PaddingOnlyFaultsGateOnlyAny) {
  TempDir dir;
  Log log(202);
  const std::int64_t id = log.next_id();
  log.nonfinite(10, "pad_kernel", 8,
                {{"region", "padding"}, {"rows", {{"padding", {{60, 63}}}}}, {"origin", "introduced"}, {"cause", {id}}});
  log.write(dir / "pad.jsonl");
  const Result r = report_text({dir / "pad.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "PASS  --fail-on real (1 finding(s), none that gate: 1 fault(s) in padding rows only)\n")) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n  kernel   pad_kernel\n")) << r.out;  // still a fault
  const Result any = report_text({dir / "pad.jsonl", "--fail-on", "any"});
  EXPECT_EQ(any.rc, 1);
  EXPECT_TRUE(has(any.out, "FAIL  --fail-on any: 1 fault(s)\n")) << any.out;
}

// Infinities that are not faults never gate, folded repeats included; under --inf-faults they do.
TEST(VerdictGate, InfinitiesThatAreNotFaultsNeverGate) {
  TempDir dir;
  Log log(203);
  const std::int64_t lse = lse_event(log, 5);
  log.repeat(50, lse, 3, 4, {{"counts", inf_counts(384, 0)}, {"kernel", "flash_fwd_kernel(Flash_fwd_params)"}});
  log.write(dir / "lse.jsonl");
  const json j = report_json({dir / "lse.jsonl", "--fail-on", "any"}, 0);
  EXPECT_EQ(j["totals"]["faults"], 0);
  EXPECT_EQ(j["totals"]["findings"], 4);
  EXPECT_EQ(j["totals"]["infinities"]["intended"], 4);
  ASSERT_EQ(j["infinities"].size(), 1u);
  EXPECT_EQ(j["infinities"][0]["infinity_findings"], 4);
  EXPECT_EQ(j["infinities"][0]["counts"]["pos_inf"], 128 + 384);
  const json f = report_json({dir / "lse.jsonl", "--inf-faults"}, 1);
  EXPECT_EQ(f["totals"]["faults"], 4);
  EXPECT_TRUE(f["infinities"].empty());
}

// An infinity the log calls a fault (NANSCOPE_INF=fault), or whose kind this reader does not
// know, is a fault.
TEST(VerdictGate, InfinitiesTheLogCallsFaultsGate) {
  TempDir dir;
  Log log(204);
  log.nonfinite(10, "exp_kernel", 0, {{"counts", inf_counts(2, 0)}, {"inf", "arithmetic"}, {"fault", true}});
  log.write(dir / "fault.jsonl");
  EXPECT_EQ(report_json({dir / "fault.jsonl"}, 1)["first_cause"]["kernel"], "exp_kernel");
  Log newer(205);
  newer.nonfinite(10, "exp_kernel", 0, {{"counts", inf_counts(2, 0)}, {"inf", "from_the_future"}});
  newer.write(dir / "newer.jsonl");
  EXPECT_EQ(run({dir / "newer.jsonl"}).rc, 1);
}

TEST(VerdictGate, SpreadPointsAndLeaksWithoutRowsAreListed) {
  TempDir dir;
  write_leak_and_spread(dir);
  const Result r = report_text({dir / "spread.jsonl"});
  EXPECT_EQ(r.rc, 1) << r.out;
  const std::size_t leaks = r.out.find("LEAK POINTS");
  ASSERT_NE(leaks, std::string::npos) << r.out;
  const std::string leak_rows = r.out.substr(leaks, r.out.find("SPREAD POINTS") - leaks);
  EXPECT_TRUE(has(leak_rows, "attn_kernel(float*, float const*)")) << leak_rows;
  EXPECT_TRUE(has(leak_rows, "rows unknown")) << leak_rows;
  EXPECT_TRUE(has(r.out, "SPREAD POINTS (non-finite values confined to part of the inputs made (nearly) all of the output "
                         "non-finite)\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "3.1% → 100.0%")) << r.out;
  EXPECT_TRUE(has(r.out, "train.py:90")) << r.out;
  EXPECT_TRUE(has(r.out, "  spreads    1\n")) << r.out;
  const json j = report_json({dir / "spread.jsonl"}, 1);
  ASSERT_EQ(j["spreads"].size(), 1u);
  EXPECT_EQ(j["spreads"][0]["kernel"], "amax_kernel(float*, float const*, int)");
  EXPECT_EQ(j["spreads"][0]["spread_id"], 4);
  EXPECT_DOUBLE_EQ(j["spreads"][0]["before"].get<double>(), 0.03125);
  EXPECT_DOUBLE_EQ(j["spreads"][0]["after"].get<double>(), 1.0);
  ASSERT_EQ(j["leaks"].size(), 1u);
  EXPECT_EQ(j["leaks"][0]["leak_id"], 3);
  EXPECT_EQ(j["first_cause"]["kernel"], "embed_kernel(float*, int)");
}

TEST(VerdictGate, TheSummarysFiguresAreShownNotRequired) {
  TempDir dir;
  Log log(206);
  mask_events(log, 10);
  log.raw(R"({"schema":"nanscope/1","event":"summary","id":9,"ts_ns":1764513600000100000,"pid":206,"findings":2,)"
          R"("counts":{"nan":0,"pos_inf":0,"neg_inf":6144},"faults":0,"infinities":{"intended":2,"arithmetic":0}})");
  log.write(dir / "sum.jsonl");
  const Result r = report_text({dir / "sum.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "  faults     0 of 2 finding(s) · infinities not faults: 2 intended, 0 arithmetic · the summary "
                         "says 0 fault(s), infinities 2 intended, 0 arithmetic\n"))
      << r.out;
  const json j = report_json({dir / "sum.jsonl"}, 0);
  EXPECT_EQ(j["processes"][0]["summary_verdicts"]["infinities"]["intended"], 2);
  write_mask_only(dir);  // a summary without them
  EXPECT_TRUE(report_json({dir / "mask.jsonl"}, 0)["processes"][0]["summary_verdicts"].is_null());
}

TEST(VerdictGate, TheHtmlPageShowsTheNewSections) {
  TempDir dir;
  write_log_zero(dir);
  write_leak_and_spread(dir);
  ASSERT_EQ(run({dir / "log0.jsonl", "--html", dir / "log0.html"}).rc, 1);
  const std::string page = slurp(dir / "log0.html");
  EXPECT_TRUE(has(page, "<section id=\"infinities\">")) << page;
  EXPECT_TRUE(has(page, "not faults by default; --inf-faults counts them")) << page;
  EXPECT_TRUE(has(page, "<dt>led to</dt><dd>NaN in mul_kernel")) << page;
  ASSERT_EQ(run({dir / "spread.jsonl", "--html", dir / "spread.html"}).rc, 1);
  const std::string spread = slurp(dir / "spread.html");
  EXPECT_TRUE(has(spread, "<section id=\"spreads\">")) << spread;
  EXPECT_TRUE(has(spread, "3.1% → 100.0%")) << spread;
  EXPECT_TRUE(has(spread, "rows unknown")) << spread;
  write_mask_only(dir);
  ASSERT_EQ(run({dir / "mask.jsonl", "--html", dir / "mask.html"}).rc, 0);
  EXPECT_TRUE(has(slurp(dir / "mask.html"), "None: no NaN; 2 infinity finding(s) are not faults")) << slurp(dir / "mask.html");
}

}  // namespace

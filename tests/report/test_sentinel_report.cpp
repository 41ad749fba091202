// The sentinel tier in `nanscope report` (docs/sentinel.md): a NaN a sentinel saw that did not
// recur in its escalated window is shown where and when it was seen, with no origin and "first
// cause unknown; rerun with --tier full"; one that recurred shows the window's lineage as any
// fault does; the gate fails on both. The logs are written by hand as the engine writes them.
#include <gtest/gtest.h>

#include "verdict_scenarios.hpp"

namespace {

using namespace synth;
using nlohmann::json;

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

json graph_fields(std::int64_t node, std::int64_t replay, json extra) {
  extra["graph_id"] = 7;
  extra["graph_node"] = node;
  extra["replay"] = replay;
  return extra;
}

std::int64_t escalation(Log& log, std::int64_t t_us, const char* phase, std::int64_t replay, std::int64_t finding = 0) {
  json j = log.base("escalation", t_us);
  j["graph_id"] = 7;
  j["phase"] = phase;
  j["replay"] = replay;
  j["window"] = 3;
  if (finding) j["finding"] = finding;
  return log.add(j);
}

// The sentinel's finding, as a replay that ran only the sentinel scans writes it.
std::int64_t sentinel_finding(Log& log, std::int64_t t_us, std::int64_t replay) {
  const std::int64_t id = log.next_id();
  return log.nonfinite(t_us, "lm_head_kernel", 16,
                       graph_fields(40, replay, {{"region", "unknown"}, {"origin", "unknown"},
                                                 {"origin_why", "sentinel"}, {"cause", {id}}}));
}

TEST(SentinelReport, ANaNThatDidNotRecurIsSeenNeverExplained) {
  TempDir dir;
  Log log(300);
  log.start();
  const std::int64_t seen = sentinel_finding(log, 10, 6);
  escalation(log, 11, "escalate", 6, seen);
  escalation(log, 40, "did_not_recur", 6);
  log.summary(50);
  log.write(dir / "s.jsonl");
  const Result r = run({dir / "s.jsonl", "--color", "never"});
  EXPECT_EQ(r.rc, 1) << r.out;  // still a fault: the gate fails
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  seen by a sentinel in graph 7 replay 6; did not recur in the next 3 replays; "
                         "first cause unknown; rerun with --tier full\n"))
      << r.out;
  EXPECT_TRUE(has(r.out, "lm_head_kernel")) << r.out;
  EXPECT_FALSE(has(r.out, "introduced")) << r.out;
  EXPECT_FALSE(has(r.out, "  origin ")) << r.out;
  const Result j = run({dir / "s.jsonl", "--format", "json"});
  const json fc = json::parse(j.out)["first_cause"];
  EXPECT_TRUE(fc["origin"].is_null()) << fc.dump();
  EXPECT_EQ(fc["origin_why"], "sentinel");
  EXPECT_EQ(fc["graph_id"], 7);
  EXPECT_EQ(fc["replay"], 6);
}

TEST(SentinelReport, AnIncompleteWindowSaysSo) {
  TempDir dir;
  Log log(301);
  const std::int64_t seen = sentinel_finding(log, 10, 9);
  escalation(log, 11, "escalate", 9, seen);
  escalation(log, 12, "incomplete", 9);
  log.write(dir / "i.jsonl");
  const Result r = run({dir / "i.jsonl", "--color", "never"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  seen by a sentinel in graph 7 replay 9; the 3 replays after it had not all "
                         "drained at exit; first cause unknown; rerun with --tier full\n"))
      << r.out;
}

TEST(SentinelReport, ALocalizedNaNShowsTheWindowsLineage) {
  TempDir dir;
  Log log(302);
  const std::int64_t seen = sentinel_finding(log, 10, 6);
  escalation(log, 11, "escalate", 6, seen);
  const std::int64_t root = log.next_id();
  log.nonfinite(20, "softmax_kernel", 8,
                graph_fields(12, 1, {{"region", "unknown"}, {"origin", "introduced"}, {"cause", {root}}}));
  log.nonfinite(21, "lm_head_kernel", 16,
                graph_fields(40, 8, {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {root}}, {"cause", {root}}}));
  escalation(log, 40, "localized", 6);
  log.write(dir / "l.jsonl");
  const Result r = run({dir / "l.jsonl", "--color", "never"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n")) << r.out;
  EXPECT_TRUE(has(r.out, "softmax_kernel")) << r.out;
  EXPECT_FALSE(has(r.out, "rerun with --tier full")) << r.out;
}

// Eager under the sentinel tier: a NaN whose inputs came from launches the sample left out has no
// origin (the engine writes origin unknown, origin_why sentinel, and no graph); without a fault
// with a lineage after it, the report says so and names no cause.
TEST(SentinelReport, AnEagerNaNAfterSampledOutLaunchesIsSeenNeverExplained) {
  TempDir dir;
  Log log(303);
  const std::int64_t id = log.next_id();
  log.nonfinite(10, "gelu_kernel", 16, {{"region", "unknown"}, {"origin", "unknown"}, {"origin_why", "sentinel"},
                                        {"cause", {id}}});
  log.nonfinite(11, "c_proj_kernel", 16, {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {id}},
                                          {"cause", {id}}});
  log.write(dir / "e.jsonl");
  const Result r = run({dir / "e.jsonl", "--color", "never"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  seen after launches the sentinel tier's eager sample left out (not scanned); "
                         "it did not recur in a window that scanned every launch; first cause unknown; rerun with "
                         "--tier full\n"))
      << r.out;
  EXPECT_FALSE(has(r.out, "graph 0")) << r.out;
  EXPECT_TRUE(has(r.out, "gelu_kernel")) << r.out;  // the sentinel's finding, not its descendant
}

// The same NaN recurring in the window after it: the window's lineage is the first cause.
TEST(SentinelReport, AnEagerNaNThatRecurredShowsTheWindowsLineage) {
  TempDir dir;
  Log log(304);
  const std::int64_t first = log.next_id();
  log.nonfinite(10, "gelu_kernel", 16, {{"region", "unknown"}, {"origin", "unknown"}, {"origin_why", "sentinel"},
                                        {"cause", {first}}});
  // The rest of that step carries it: propagated, caused by the sentinel finding only.
  log.nonfinite(11, "c_proj_kernel", 16, {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {first}},
                                          {"cause", {first}}});
  const std::int64_t root = log.next_id();
  log.nonfinite(20, "gemm_kernel", 8, {{"region", "unknown"}, {"origin", "introduced"}, {"cause", {root}}});
  log.nonfinite(21, "gelu_kernel", 16, {{"region", "unknown"}, {"origin", "propagated"}, {"parents", {root}},
                                        {"cause", {root}}});
  log.write(dir / "w.jsonl");
  const Result r = run({dir / "w.jsonl", "--color", "never"});
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FIRST CAUSE  introduced\n")) << r.out;
  EXPECT_TRUE(has(r.out, "gemm_kernel")) << r.out;
  EXPECT_FALSE(has(r.out, "rerun with --tier full")) << r.out;
}

}  // namespace

namespace {

// Logs the H200 wrote (session 21, tests/report/data/h200: hf_gpt2_overflow.py eager --steps 3
// under NANSCOPE_TIER=full and =sentinel). Under sentinel the first step's NaN was seen after
// launches the sample left out (GELU's mul, origin unknown, why sentinel) and the rest of that
// step carried it; the next steps ran in the window. The report must name the same FIRST CAUSE
// as under full: the c_fc GEMM's overflow at pytorch_utils.py:119, never the GELU.
TEST(SentinelReport, RecordedGpt2EagerGivesFullsFirstCause) {
  const std::string data = std::string(NANSCOPE_REPORT_TEST_DATA) + "/h200/";
  nlohmann::json cause[2];
  const char* logs[2] = {"gpt2_eager_full.jsonl", "gpt2_eager_sentinel.jsonl"};
  for (int i = 0; i < 2; ++i) {
    const Result r = run({data + logs[i], "--format", "json"});
    ASSERT_EQ(r.rc, 1) << logs[i] << "\n" << r.err;
    cause[i] = nlohmann::json::parse(r.out)["first_cause"];
  }
  for (const char* k : {"kernel", "origin", "counts"}) EXPECT_EQ(cause[1][k], cause[0][k]) << k;
  EXPECT_EQ(cause[1]["python"]["line"], 119);
  EXPECT_EQ(cause[0]["python"]["line"], 119);
  EXPECT_EQ(cause[1]["kernel"], "nvjet_sm90_hsh_64x24_64x16_4x2_h_bz_bias_NNT");
}

}  // namespace

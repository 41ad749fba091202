// Golden tests: the text report of synthetic multi-process logs is compared with the checked-in
// tests/report/data/*.txt (regenerate with NANSCOPE_UPDATE_GOLDEN=1 after a deliberate change).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "scenarios.hpp"

namespace {

using namespace synth;

// Runs in `dir` so the report shows relative file names.
Result run_in(const TempDir& dir, std::vector<std::string> args) {
  auto old = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  Result r = run(std::move(args));
  std::filesystem::current_path(old);
  return r;
}

void expect_golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(NANSCOPE_REPORT_TEST_DATA) + "/" + name;
  if (std::getenv("NANSCOPE_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing; run with NANSCOPE_UPDATE_GOLDEN=1";
  EXPECT_EQ(slurp(path), actual) << "golden file " << path << " differs";
}

TEST(Golden, TrainingText) {
  TempDir dir;
  write_training(dir);
  Result r = run_in(dir, {"rank0.jsonl", "rank1.jsonl", "rank2.jsonl", "--color", "never"});
  EXPECT_EQ(r.rc, 1);  // real-row NaN seen
  expect_golden("training.txt", r.out);
  expect_golden("training.stderr.txt", r.err);
}

TEST(Golden, TrainingJson) {
  TempDir dir;
  write_training(dir);
  Result r = run_in(dir, {".", "--format", "json"});
  ASSERT_EQ(r.rc, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  // Multi-rank first cause: rank 1 introduced the first NaN, 50 us in.
  EXPECT_EQ(j["first_cause"]["rank"], 1);
  EXPECT_EQ(j["first_cause"]["ts_ns"], kT0 + 50'000);
  EXPECT_EQ(j["first_cause"]["kernel"], kLongKernel);  // full name in JSON
  EXPECT_EQ(j["first_cause"]["buffer"]["name"], "o");
  EXPECT_EQ(j["first_cause"]["label"], "introduced");
  EXPECT_EQ(j["first_cause_per_process"].size(), 3u);
  // The leak point.
  ASSERT_EQ(j["leaks"].size(), 1u);
  EXPECT_EQ(j["leaks"][0]["rank"], 0);
  EXPECT_EQ(j["leaks"][0]["kernel"], "gemm_f32(float*, float const*, float const*, int, int, int)");
  // Repeat aggregation: 1 + 9 findings for layer_norm on rank 0, + 1 on rank 2; 1 + 4 + 0 on rank 1.
  std::map<std::string, nlohmann::json> k;
  for (auto& x : j["kernels"]) k[x["kernel"]] = x;
  auto& ln = k["void layer_norm<float>(float*, float const*, int)"];
  EXPECT_EQ(ln["findings"], 11);
  EXPECT_EQ(ln["repeats"], 9);
  EXPECT_EQ(ln["nonfinite"]["padding"], 512 * 10 + 32);
  EXPECT_EQ(ln["fixed"], "no");
  EXPECT_EQ(ln["ranks"], nlohmann::json::array({0, 2}));
  EXPECT_EQ(k[kLongKernel]["findings"], 5);
  EXPECT_EQ(k[kLongKernel]["nonfinite"]["real"], 64 * 5);
  auto& sm = k["softmax_rows(float*, int)"];
  EXPECT_EQ(sm["nonfinite"]["real"], 6);
  EXPECT_EQ(sm["nonfinite"]["padding"], 10);
  EXPECT_EQ(sm["fixed"], "yes");
  // Graph and replays.
  ASSERT_EQ(j["graphs"].size(), 1u);
  EXPECT_EQ(j["graphs"][0]["graph_id"], 7);
  EXPECT_EQ(j["graphs"][0]["findings"], 10);
  EXPECT_EQ(j["graphs"][0]["first_replay"], 0);
  EXPECT_EQ(j["graphs"][0]["last_replay"], 9);
  // Lineage: layer_norm -> gemm -> softmax.
  EXPECT_EQ(j["lineage"]["edges"].size(), 2u);
  // Totals, including the summary's dropped scans and overflow and the truncated line.
  EXPECT_EQ(j["totals"]["scans_dropped"], 2);
  EXPECT_EQ(j["totals"]["overflow"], 1);
  EXPECT_EQ(j["totals"]["bad_lines"], 1);
  EXPECT_EQ(j["totals"]["findings"], 11 + 1 + 1 + 5);
  EXPECT_EQ(j["gate"]["triggered"], true);
  EXPECT_EQ(j["dumps"][0]["path"], "gemm_out.npy");
  EXPECT_NE(r.err.find("rank2.jsonl:3: truncated last line"), std::string::npos) << r.err;
}

TEST(Golden, NoOriginText) {
  TempDir dir;
  write_no_origin(dir);
  Result r = run_in(dir, {"old.log", "--color", "never"});
  EXPECT_EQ(r.rc, 1);  // NaN in rows not known to be padding gates --fail-on real
  expect_golden("no_origin.txt", r.out);
  EXPECT_NE(r.out.find("earliest finding (the log has no origin data)"), std::string::npos);
  EXPECT_NE(r.out.find("scale(float*, float, int)"), std::string::npos);
  EXPECT_EQ(run_in(dir, {"old.log", "--fail-on", "any"}).rc, 1);
}

}  // namespace

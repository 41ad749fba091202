// Exit codes, input handling and filters.
#include <gtest/gtest.h>

#include "scenarios.hpp"

namespace {

using namespace synth;

TEST(Cli, MissingAndEmptyInputs) {
  TempDir dir;
  Result r = run({dir / "nope.jsonl"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("nope.jsonl: no such file or directory"), std::string::npos) << r.err;
  std::ofstream(dir / "empty.jsonl").close();
  r = run({dir / "empty.jsonl"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("empty.jsonl: empty log file"), std::string::npos) << r.err;
  std::filesystem::create_directory(dir / "sub");
  r = run({dir / "sub"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no *.jsonl or *.log files"), std::string::npos) << r.err;
  r = run({});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no input"), std::string::npos) << r.err;
}

TEST(Cli, UsageErrors) {
  EXPECT_EQ(run({"x.jsonl", "--format", "yaml"}).rc, 2);
  EXPECT_EQ(run({"x.jsonl", "--fail-on", "sometimes"}).rc, 2);
  EXPECT_EQ(run({"x.jsonl", "--since", "yesterday"}).rc, 2);
  EXPECT_EQ(run({"x.jsonl", "--kernel", "(["}).rc, 2);
  EXPECT_EQ(run({"--bogus"}).rc, 2);
  Result h = run({"--help"});
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("--fail-on"), std::string::npos);
}

TEST(Cli, UnknownSchemaNamesFileAndLine) {
  TempDir dir;
  Log p(5);
  p.start(0);
  p.raw(R"({"schema":"nanscope/2","event":"start","id":2,"ts_ns":1,"pid":5})");
  p.nonfinite(10, "k", 1, {{"region", "real"}});
  p.write(dir / "v2.jsonl");
  Result r = run({dir / "v2.jsonl"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("v2.jsonl:2: unsupported schema \"nanscope/2\""), std::string::npos) << r.err;
}

TEST(Cli, FailOnModes) {
  TempDir dir;
  Log p(5);
  p.nonfinite(10, "pad_only", 4, {{"region", "padding"}});
  p.write(dir / "pad.jsonl");
  EXPECT_EQ(run({dir / "pad.jsonl"}).rc, 0);
  EXPECT_EQ(run({dir / "pad.jsonl", "--fail-on", "any"}).rc, 1);
  Log q(6);
  q.nonfinite(10, "no_region", 4);
  q.write(dir / "unknown.jsonl");
  EXPECT_EQ(run({dir / "unknown.jsonl", "--fail-on", "real"}).rc, 1);  // unknown region: not proven padding
  EXPECT_EQ(run({dir / "unknown.jsonl", "--fail-on", "any"}).rc, 1);
  Log m(7);
  m.nonfinite(10, "mixed", 4, {{"region", "mixed"}});
  m.write(dir / "mixed.jsonl");
  EXPECT_EQ(run({dir / "mixed.jsonl"}).rc, 1);
  EXPECT_EQ(run({dir / "mixed.jsonl", "--fail-on", "never"}).rc, 0);
  Log c(8);
  c.start(0);
  c.summary(10);
  c.write(dir / "clean.jsonl");
  Result r = run({dir / "clean.jsonl", "--fail-on", "any"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("FIRST CAUSE  none"), std::string::npos) << r.out;
}

TEST(Cli, Filters) {
  TempDir dir;
  write_training(dir);
  auto findings = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{dir.path.string(), "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    Result r = run(args);
    auto j = nlohmann::json::parse(r.out);
    return std::make_pair(j["totals"]["findings"].get<int>(), j["first_cause"]);
  };
  // --kernel: only layer_norm (rank 0 at 100 us is then the first cause, rank 2 at 80 us? no: 80 us).
  auto [n, fc] = findings({"--kernel", "layer_norm"});
  EXPECT_EQ(n, 11);
  EXPECT_EQ(fc["rank"], 2);
  // --since in ns and in ISO-8601 skip rank 1's 50 us and rank 2's 80 us findings.
  auto [n2, fc2] = findings({"--since", std::to_string(kT0 + 90'000)});
  EXPECT_EQ(fc2["rank"], 0);
  auto [n3, fc3] = findings({"--since", "2025-11-30T14:40:00.000090Z"});
  EXPECT_EQ(n3, n2);
  EXPECT_EQ(fc3["rank"], 0);
  // --until before anything: no findings, exit 0.
  Result r = run({dir.path.string(), "--until", "2025-11-30T14:39:59Z"});
  EXPECT_EQ(r.rc, 0) << r.out;
}

TEST(Cli, DirectoryIsReadRecursively) {
  TempDir dir;
  std::filesystem::create_directories(dir / "node1");
  Log a(1, 0), b(2, 1);
  a.nonfinite(5, "k", 1, {{"region", "real"}, {"origin", "introduced"}});
  b.nonfinite(3, "k", 1, {{"region", "real"}, {"origin", "introduced"}});
  a.write(dir / "a.jsonl");
  b.write(dir / "node1/b.log");
  std::ofstream(dir / "notes.txt") << "not a log\n";
  Result r = run({dir.path.string(), "--format", "json"});
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["first_cause"]["rank"], 1);
}

TEST(Cli, TextShortensLongKernelNames) {
  TempDir dir;
  write_training(dir);
  Result r = run({dir.path.string(), "--color", "never"});
  EXPECT_NE(r.out.find("flash::flash_fwd_kernel<…>(…)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\033["), std::string::npos);  // no colour when asked not to
  Result c = run({dir.path.string(), "--color", "always"});
  EXPECT_NE(c.out.find("\033["), std::string::npos);
}

}  // namespace

namespace {

// The summary's coverage (src/coverage.cpp) reaches the report: how much was looked at, so a
// clean report can be told from one that looked at nothing.
TEST(Cli, ReportsWhatTheRunInspected) {
  TempDir dir;
  Log p(5);
  p.start(0);
  p.raw(R"x({"schema":"nanscope/1","event":"summary","id":9,"ts_ns":1764513600000100000,"pid":5,"launches":120,)x"
        R"x("scans":90,"findings":0,"kernels_inspected":7,"kernels_not_inspected":2,"scans_dropped":0,"overflow":0,)x"
        R"x("duration_ns":1000,"coverage":{"launches":120,"by_inspection":{"decoded":80,"typed":5,"watched":0,)x"
        R"x("opaque":10,"library":20,"layout_mismatch":5,"excluded":0},"inspected_share":0.7,)x"
        R"x("bytes_written_decoded":1000,"bytes_written_decoded_scanned":990,"bytes_scanned":2000,)x"
        R"x("kernels_not_inspected":2,"not_inspected_top":[{"kernel":"my_ext_kernel(Params)",)x"
        R"x("reason":"no typed floating-point output pointers","launches":10}]}})x");
  p.write(dir / "cov.jsonl");
  const Result r = run({dir / "cov.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("85 of 100 launches outside libraries (85.0%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("library 20"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("99.0% of the bytes decoded launches wrote were scanned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not inspected: 10 launches of my_ext_kernel(Params) (no typed floating-point output pointers)"),
            std::string::npos) << r.out;
}

// A process's summary whose `coverage` object is given (the rest as src/finding_event.cpp writes it).
void coverage_summary(Log& p, std::int64_t launches, std::int64_t scans, const nlohmann::json& coverage) {
  nlohmann::json j = p.base("summary", 100);
  j["launches"] = launches, j["scans"] = scans, j["findings"] = 0, j["scans_dropped"] = 0, j["overflow"] = 0;
  j["duration_ns"] = 1000;
  j["coverage"] = coverage;
  p.add(j);
}

// Launches whose outputs lay in an allocator pool (extent unknown) were not looked at: they count
// against the inspected share, and the line says how many there were.
TEST(Cli, LaunchesWithPoolExtentsCountAsNotInspected) {
  TempDir dir;
  Log p(6);
  p.start(0);
  coverage_summary(p, 40, 30, {{"launches", 40},
                               {"by_inspection", {{"decoded", 0}, {"typed", 30}, {"watched", 0}, {"opaque", 0},
                                                  {"library", 0}, {"layout_mismatch", 0}, {"extent_unknown", 10},
                                                  {"sampled_out", 0}, {"excluded", 0}}},
                               {"inspected_share", 0.75}, {"bytes_scanned", 2000}, {"kernels_not_inspected", 1},
                               {"not_inspected_top", nlohmann::json::array()}});
  p.write(dir / "pool.jsonl");
  const Result r = run({dir / "pool.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("30 of 40 launches outside libraries (75.0%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("extent unknown (allocator pool) 10"), std::string::npos) << r.out;
}

// Under the sentinel tier the report says how many graph replays ran only the sentinel scans: a
// clean verdict there means "the sentinels saw nothing", not "every kernel was looked at".
TEST(Cli, SentinelOnlyReplaysAreSaid) {
  TempDir dir;
  Log p(7);
  p.start(0);
  coverage_summary(p, 40, 40, {{"launches", 40},
                               {"by_inspection", {{"decoded", 0}, {"typed", 40}, {"watched", 0}, {"opaque", 0},
                                                  {"library", 0}, {"layout_mismatch", 0}, {"extent_unknown", 0},
                                                  {"sampled_out", 0}, {"excluded", 0}}},
                               {"inspected_share", 1.0}, {"bytes_scanned", 2000}, {"kernels_not_inspected", 0},
                               {"not_inspected_top", nlohmann::json::array()}, {"graph_replays_sentinel_only", 97},
                               {"graph_replays_every_scan", 3}});
  p.write(dir / "tier.jsonl");
  const Result r = run({dir / "tier.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("graph replays under the sentinel tier: 97 ran only the sentinel scans"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", 3 every scan"), std::string::npos) << r.out;
}

// XLA's autotuning launches are said apart from the program's: they are not in the inspected share's
// denominator ("outside libraries" means the program's own launches).
TEST(Cli, XlasAutotuningLaunchesAreSaidApart) {
  TempDir dir;
  Log p(8);
  p.start(0);
  coverage_summary(p, 300, 40, {{"launches", 300},
                                {"by_inspection", {{"decoded", 40}, {"typed", 0}, {"watched", 0}, {"opaque", 2},
                                                   {"library", 20}, {"layout_mismatch", 0}, {"extent_unknown", 0},
                                                   {"sampled_out", 0}, {"excluded", 16}, {"compile_time", 222}}},
                                {"inspected_share", 0.13}, {"bytes_scanned", 2000}, {"kernels_not_inspected", 1},
                                {"not_inspected_top", nlohmann::json::array()}});
  p.write(dir / "xla.jsonl");
  const Result r = run({dir / "xla.jsonl"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("40 of 42 launches outside libraries (95.2%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("excluded 16, XLA's autotuning (launched while XLA compiled) 222"), std::string::npos) << r.out;
}

}  // namespace

// True totals (issue 19, defect 10): the `nonfinite` and `repeat` events of a log add up to its
// `summary`, and the report's totals are that sum. The logs here are written by the library's
// own event code (src/finding_event.hpp, src/event_log.hpp) the way the finding reporter calls it
// (hooks/finding_reporter.cpp: handle_finding, shutdown), then read back by `nanscope report`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "event_log.hpp"
#include "finding_event.hpp"
#include "synth.hpp"

namespace {

using namespace synth;
namespace ns = nanscope;

// The finding reporter's path from a drained finding to the log, without CUDA: fold or emit,
// the closing repeats at exit, the summary.
class Writer {
 public:
  explicit Writer(const std::string& path) : log_(ns::EventLogOptions{path, /*console=*/false}) {}

  void finding(const ns::Finding& f, const std::string& kernel) {
    ++figures_.findings;
    figures_.nan += f.nan, figures_.pos_inf += f.pos_inf, figures_.neg_inf += f.neg_inf;
    ns::Site* site = sites_.record(ns::site_key(f, ""), f.replay);
    if (site && site->total > 1) {
      if (auto repeat = sites_.fold(*site, f, f.captured)) log_.emit(ns::event_name::repeat, *repeat);
      return;
    }
    ns::FindingFacts facts{f, 0};
    facts.kernel = kernel;
    const uint64_t id = log_.reserve_id();
    log_.emit_with_id(id, ns::event_name::nonfinite, ns::finding_event(facts, std::nullopt));
    if (site) site->first_event = id, site->identity = ns::site_identity(f, kernel), site->row_aware = f.row_aware;
  }
  // At exit; `closing` false: a process that died before its closing repeats.
  void finish(bool closing = true) {
    if (closing)
      for (const ns::Json& r : sites_.closing()) log_.emit(ns::event_name::repeat, r);
    log_.emit(ns::event_name::summary, ns::summary_event(figures_, std::nullopt));
    log_.flush();
  }
  const ns::SummaryFigures& figures() const { return figures_; }

 private:
  ns::EventLog log_;
  ns::Sites sites_;
  ns::SummaryFigures figures_;
};

ns::Finding output(uint32_t kernel_id, uint64_t nan, uint64_t pos_inf = 0) {
  ns::Finding f;
  f.kernel_id = kernel_id;
  f.ptr = 0x7f0000000000 + 0x100000 * kernel_id;
  f.elements = 1 << 20;
  f.dtype = ns::DType::f32;
  f.nan = nan, f.pos_inf = pos_inf;
  return f;
}

ns::Finding rows(uint32_t kernel_id, uint64_t padding, uint64_t real) {
  ns::Finding f = output(kernel_id, padding + real);
  f.row_aware = true;
  f.watch_id = 1;
  f.padding_source = ns::PaddingSource::seq_lens;
  f.rows_total = 64;
  f.verdict.ranges = {{0, 3, false}, {60, 63, true}};
  f.verdict.counts_padding = padding, f.verdict.counts_real = real;
  return f;
}

nlohmann::json report_json(const std::string& path) {
  const Result r = run({path, "--format", "json", "--fail-on", "never"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return nlohmann::json::parse(r.out);
}

// The issue's case: ten kernels, each finding NaN again and again, with counts that change now
// and then. The report showed half the findings and half the NaN; its totals are the summary's.
TEST(Totals, FoldedFindingsAddUpToTheSummary) {
  TempDir dir;
  Writer w(dir / "run.jsonl");
  for (int step = 0; step < 50; ++step)
    for (uint32_t k = 0; k < 10; ++k) w.finding(output(k, 36000 + 64 * k + (step % 7 == 3 ? 5 : 0)), "kernel" + std::to_string(k));
  w.finish();
  const nlohmann::json j = report_json(dir / "run.jsonl");
  const ns::SummaryFigures& s = w.figures();
  EXPECT_EQ(j["totals"]["findings"], s.findings);
  EXPECT_EQ(j["totals"]["counts"]["nan"], s.nan);
  EXPECT_EQ(j["totals"]["counts"]["pos_inf"], 0);
  EXPECT_EQ(j["totals"]["orphan_repeats"], 0);  // the second site of each kernel places its repeats too
  EXPECT_GT(j["totals"]["repeats"].get<std::int64_t>(), 400);
  ASSERT_EQ(j["kernels"].size(), 10u);
  for (const auto& k : j["kernels"]) {
    EXPECT_EQ(k["findings"], 50) << k["name"];
    EXPECT_GT(k["repeats"].get<std::int64_t>(), 40) << k["name"];
  }
  EXPECT_EQ(j["processes"][0]["summary_check"]["matches"], true);
  const Result text = run({dir / "run.jsonl", "--color", "never", "--fail-on", "never"});
  EXPECT_NE(text.out.find("check      the events add up to the summary of the process"), std::string::npos) << text.out;
}

// Padding and real rows: the folded values keep their split.
TEST(Totals, FoldedRowsKeepTheirRegions) {
  TempDir dir;
  Writer w(dir / "rows.jsonl");
  std::int64_t padding = 0, real = 0;
  for (int step = 0; step < 37; ++step) {
    const uint64_t p = 7 + step % 3, r = step % 5 == 0 ? 2 : 0;
    w.finding(rows(1, p, r), "attention");
    padding += p, real += r;
  }
  w.finish();
  const nlohmann::json j = report_json(dir / "rows.jsonl");
  EXPECT_EQ(j["totals"]["findings"], 37);
  EXPECT_EQ(j["totals"]["nonfinite"]["padding"], padding);
  EXPECT_EQ(j["totals"]["nonfinite"]["real"], real);
  EXPECT_EQ(j["totals"]["nonfinite"]["unknown"], 0);
  EXPECT_EQ(j["processes"][0]["summary_check"]["matches"], true);
}

// A process that died before its closing repeats: the report says its totals fall short.
TEST(Totals, MissingClosingRepeatsAreSaid) {
  TempDir dir;
  Writer w(dir / "died.jsonl");
  for (int i = 0; i < 6; ++i) w.finding(output(3, 100), "k");  // repeats at 4, then 2 pending
  w.finish(/*closing=*/false);
  const Result r = run({dir / "died.jsonl", "--color", "never", "--fail-on", "never"});
  EXPECT_NE(r.out.find("events are missing (a truncated log, or a process that died before its closing repeats): "
                       "these totals are a lower bound; the summary says 6 finding(s) (600 NaN, 0 +Inf, 0 -Inf), "
                       "the events add up to 4 finding(s) (400 NaN, 0 +Inf, 0 -Inf)"),
            std::string::npos)
      << r.out;
}

// A log of an older nanscope: repeats without counts, folded findings whose counts differed.
TEST(Totals, OlderRepeatsWithoutCountsAreSaid) {
  TempDir dir;
  Log p(9);
  p.start(0);
  const std::int64_t a = p.nonfinite(10, "k", 36045);
  p.repeat(20, a, 1, 2, {{"final", true}});
  p.raw(R"({"schema":"nanscope/1","event":"summary","id":9,"ts_ns":1764513600000100000,"pid":9,"findings":20,)"
        R"("counts":{"nan":737284,"pos_inf":0,"neg_inf":0}})");
  p.write(dir / "old.jsonl");
  const Result r = run({dir / "old.jsonl", "--color", "never", "--fail-on", "never"});
  EXPECT_NE(r.out.find("pid 9: this log's repeats carry no counts (older nanscope): folded findings are counted as "
                       "copies of the event they repeat, so these totals are estimates; the summary says 20 "
                       "finding(s) (737,284 NaN, 0 +Inf, 0 -Inf), the events add up to 2 finding(s) (72,090 NaN"),
            std::string::npos)
      << r.out;
  const nlohmann::json j = report_json(dir / "old.jsonl");
  EXPECT_EQ(j["processes"][0]["summary_check"]["matches"], false);
  EXPECT_EQ(j["processes"][0]["summary_check"]["repeats_without_counts"], true);
  EXPECT_EQ(j["processes"][0]["summary_check"]["summary"]["counts"]["nan"], 737284);
  ASSERT_EQ(run({dir / "old.jsonl", "--html", dir / "old.html", "--fail-on", "never"}).rc, 0);
  EXPECT_NE(slurp(dir / "old.html").find("pid 9: the summary says 20 finding(s) and 737,284 non-finite values, the "
                                         "events add up to 2 and 72,090: this log's repeats carry no counts"),
            std::string::npos);
}

// TOTALS splits the findings into events and folded ones; a repeat outside --until is neither.
TEST(Totals, FilteredRepeatsAreNotCountedAsEvents) {
  TempDir dir;
  Log p(4);
  const std::int64_t id = p.nonfinite(10, "k", 2);
  p.repeat(20, id, 3, 4, {{"counts", {{"nan", 6}, {"pos_inf", 0}, {"neg_inf", 0}}}});
  p.repeat(90, id, 2, 6, {{"counts", {{"nan", 4}, {"pos_inf", 0}, {"neg_inf", 0}}}, {"final", true}});
  p.write(dir / "f.jsonl");
  const Result r = run({dir / "f.jsonl", "--until", std::to_string(kT0 + 50'000), "--color", "never", "--fail-on", "never"});
  EXPECT_NE(r.out.find("findings   4 (1 events + 3 folded in repeats), 1 events outside the filters"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("values     8 NaN"), std::string::npos) << r.out;
}

// A repeat's counts are checked like a finding's: none without findings, no more than its
// findings' buffers hold, its padding and real rows a part of them.
TEST(Totals, AbsurdRepeatCountsAreBadLines) {
  TempDir dir;
  Log p(5);
  const std::int64_t id = p.nonfinite(10, "k", 3, {{"region", "real"}});
  p.repeat(20, id, 0, 1, {{"counts", {{"nan", 5}, {"pos_inf", 0}, {"neg_inf", 0}}}});
  p.repeat(30, id, 2, 3, {{"counts", {{"nan", 9000}, {"pos_inf", 0}, {"neg_inf", 0}}}, {"buffer", {{"elements", 4096}}}});
  p.repeat(40, id, 2, 3, {{"counts", {{"nan", 6}, {"pos_inf", 0}, {"neg_inf", 0}}}, {"counts_padding", 4}, {"counts_real", 4}});
  p.repeat(50, id, 2, 3, {{"counts", {{"nan", 6}, {"pos_inf", 0}, {"neg_inf", 0}}}, {"buffer", {{"elements", 4096}}}});
  p.write(dir / "bad.jsonl");
  const Result r = run({dir / "bad.jsonl", "--format", "json"});
  EXPECT_NE(r.err.find("bad.jsonl:2: field 'counts': expected no values in a repeat of 0 findings"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.jsonl:3: field 'counts': expected at most count x buffer.elements values"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.jsonl:4: field 'counts_padding'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("bad.jsonl:5:"), std::string::npos) << r.err;  // 6 NaN in 2 findings of 4096 elements
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["totals"]["findings"], 3);
  EXPECT_EQ(j["totals"]["counts"]["nan"], 9);
}

}  // namespace

// Hostile logs (issue 19): values no writer produces must be rejected as bad lines naming
// file:line, never crash the report, never wrap a total or defeat the CI gate; a log's control
// characters never reach the terminal or the page raw.
#include <gtest/gtest.h>

#include <climits>

#include "scenarios.hpp"
#include "util.hpp"

namespace {

using namespace synth;
using nanscope::report::group_digits;
using nanscope::report::parse_time;

TEST(Hostile, GroupDigitsOfTheExtremes) {
  EXPECT_EQ(group_digits(INT64_MIN), "-9,223,372,036,854,775,808");
  EXPECT_EQ(group_digits(INT64_MAX), "9,223,372,036,854,775,807");
  EXPECT_EQ(group_digits(-1234), "-1,234");
}

// Defect 1: counts.nan = INT64_MIN crashed text, --html and --trace alike.
TEST(Hostile, MinimumCountIsABadLineNotACrash) {
  TempDir dir;
  Log p(5);
  p.nonfinite(10, "k", 1, {{"region", "real"}});
  p.raw(R"({"schema":"nanscope/1","event":"nonfinite","id":2,"ts_ns":1764513600000000000,"pid":5,"kernel":"k",)"
        R"("counts":{"nan":-9223372036854775808,"pos_inf":0,"neg_inf":0}})");
  p.write(dir / "min.jsonl");
  const Result r = run({dir / "min.jsonl", "--html", dir / "o.html", "--trace", dir / "o.json"});
  EXPECT_EQ(r.rc, 1) << r.err;  // the good real-row finding still fails the gate
  EXPECT_NE(r.err.find("min.jsonl:2: field 'counts.nan': expected a non-negative integer"), std::string::npos) << r.err;
}

// Defect 2: a negative repeat count cancelled a real-row finding: PASS, exit 0, no bad line.
TEST(Hostile, NegativeRepeatCannotDefeatTheGate) {
  TempDir dir;
  Log p(5);
  const std::int64_t id = p.nonfinite(10, "k", 3, {{"region", "real"}});
  p.repeat(20, id, -1, 0);
  p.write(dir / "neg.jsonl");
  for (const char* fail_on : {"real", "any"}) {
    const Result r = run({dir / "neg.jsonl", "--fail-on", fail_on, "--color", "never"});
    EXPECT_EQ(r.rc, 1) << fail_on << '\n' << r.out;
    EXPECT_NE(r.err.find("neg.jsonl:2: field 'count': expected a non-negative integer"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  }
  Log q(6);
  q.nonfinite(10, "k", -3, {{"region", "real"}});
  q.raw(R"({"schema":"nanscope/1","event":"nonfinite","id":2,"ts_ns":-5,"pid":6,"kernel":"k","counts":{"nan":1}})");
  q.nonfinite(30, "k", 1, {{"region", "real"}, {"rows", {{"real", {{5, 2}}}}}});
  q.write(dir / "neg2.jsonl");
  const Result r = run({dir / "neg2.jsonl"});
  EXPECT_NE(r.err.find("neg2.jsonl:1: field 'counts.nan'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("neg2.jsonl:2: field 'ts_ns'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("neg2.jsonl:3: field 'rows.real'"), std::string::npos) << r.err;
}

// Defect 7: repeat products and sums saturate instead of wrapping negative.
TEST(Hostile, HugeFiguresSaturate) {
  TempDir dir;
  Log p(5);
  const std::int64_t id = p.nonfinite(10, "k", INT64_MAX / 2, {{"region", "real"}, {"counts_real", INT64_MAX / 2}});
  p.repeat(20, id, INT64_MAX, INT64_MAX);
  p.repeat(30, id, INT64_MAX, INT64_MAX);
  p.raw(R"({"schema":"nanscope/1","event":"nonfinite","id":9,"ts_ns":9223372036854775807,"pid":5,"kernel":"k",)"
        R"("counts":{"nan":9223372036854775807,"pos_inf":9223372036854775807,"neg_inf":1}})");
  p.write(dir / "big.jsonl");
  const Result r = run({dir / "big.jsonl", "--format", "json", "--html", dir / "o.html", "--trace", dir / "o.json"});
  ASSERT_EQ(r.rc, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["totals"]["findings"].get<std::int64_t>(), INT64_MAX) << j["totals"];
  EXPECT_EQ(j["totals"]["counts"]["nan"].get<std::int64_t>(), INT64_MAX) << j["totals"];
  const Result t = run({dir / "big.jsonl", "--color", "never"});
  EXPECT_EQ(t.out.find("-9,"), std::string::npos) << t.out;  // nothing wrapped negative
}

TEST(Hostile, SinceBeyondTheRangeOfNanosecondsIsRefused) {
  EXPECT_FALSE(parse_time("2262-04-12T00:00:00Z"));
  EXPECT_FALSE(parse_time("1677-09-21T00:00:00Z"));
  EXPECT_TRUE(parse_time("2262-04-11T00:00:00Z"));
  const Result r = run({"x.jsonl", "--since", "2262-04-12T00:00:00Z"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--since: cannot read '2262-04-12T00:00:00Z'"), std::string::npos) << r.err;
}

// Defect 8: ESC, BEL, CR, NUL and C1 controls in a kernel name are escaped in every output.
TEST(Hostile, ControlCharactersAreEscaped) {
  TempDir dir;
  Log p(5);
  p.start(0);
  p.raw(R"({"schema":"nanscope/1","event":"nonfinite","id":2,"ts_ns":1764513600000000000,"pid":5,)"
        R"("kernel":"evil\u001b[2J\u0007\r\u0000FAKE\u0085\u007f\nPASS","stream":"0x\u001b",)"
        R"("counts":{"nan":1,"pos_inf":0,"neg_inf":0},"region":"real","origin":"introduced"})");
  p.write(dir / "ctl.jsonl");
  const Result r = run({dir / "ctl.jsonl", "--color", "never", "--html", dir / "o.html"});
  ASSERT_EQ(r.rc, 1) << r.err;
  const std::string html = slurp(dir / "o.html");
  for (const std::string* s : {&r.out, &html}) {
    for (char c : *s) {
      const auto u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u >= 0x20 || c == '\n') << "raw control byte " << int(u) << " in output";
      EXPECT_NE(u, 0x7F);
    }
    EXPECT_EQ(s->find("\xc2\x85"), std::string::npos);
  }
  EXPECT_NE(r.out.find(R"(evil\x1b[2J\x07\x0d\x00FAKE\u0085\x7f\x0aPASS)"), std::string::npos) << r.out;
  EXPECT_NE(html.find(R"(evil\x1b[2J\x07\x0d\x00FAKE)"), std::string::npos);
}

}  // namespace

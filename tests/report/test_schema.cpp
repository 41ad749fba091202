// One schema for the writer and `nanscope report` (src/log_schema.hpp): every key the writer's
// lists say an event carries must be known to the parser (decoded, or skipped on purpose), and
// every key the parser knows must be one the writer emits or a legacy key of older logs. A key
// added on one side only fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "event.hpp"
#include "fields.hpp"
#include "launch_site.hpp"
#include "log_schema.hpp"
#include "synth.hpp"

namespace nanscope::report {
namespace {

using Set = std::set<std::string_view>;

Set known(std::string_view object) {
  const auto keys = parser_known_keys(object);
  return Set(keys.begin(), keys.end());
}

Set writer_top_keys() {
  Set all(std::begin(schema::kCommonKeys), std::end(schema::kCommonKeys));
  for (const schema::EventSpec& e : schema::kEvents) all.insert(e.keys.begin(), e.keys.end());
  return all;
}

TEST(Schema, EveryKeyTheWriterEmitsIsKnownToTheParser) {
  const Set parser = known("");
  for (std::string_view k : schema::kCommonKeys) EXPECT_TRUE(parser.count(k)) << "common key " << k;
  for (const schema::EventSpec& e : schema::kEvents)
    for (std::string_view k : e.keys) EXPECT_TRUE(parser.count(k)) << e.name << "." << k << " is unknown to the parser";
}

TEST(Schema, EveryKeyTheParserKnowsIsWrittenOrLegacy) {
  Set allowed = writer_top_keys();
  allowed.insert(std::begin(schema::kLegacyKeys), std::end(schema::kLegacyKeys));
  for (std::string_view k : known("")) EXPECT_TRUE(allowed.count(k)) << k << " is read but no writer emits it";
}

TEST(Schema, NestedObjectsAgreeBothWays) {
  for (const schema::ObjectSpec& o : schema::kObjects) {
    const Set parser = known(o.key);
    EXPECT_FALSE(parser.empty()) << o.key << " has no parser table";
    const Set writer(o.keys.begin(), o.keys.end());
    EXPECT_EQ(parser, writer) << "members of " << o.key;
    EXPECT_TRUE(writer_top_keys().count(o.key)) << o.key << " is no event's key";
  }
}

// The objects of NaN-first verdicts, decoded member by member like those of kObjects (the schema's
// list of them is the writer's; these are listed here). `candidates` and `python` are kept as
// text on purpose (launch_site.hpp decodes them), so they have no parser table.
TEST(Schema, NaNFirstObjectsAgreeBothWays) {
  const schema::ObjectSpec objects[] = {{schema::key::spread, schema::kSpreadKeys},
                                        {schema::key::last_writer, schema::kLastWriterKeys},
                                        {schema::key::infinities, schema::kInfinitiesKeys}};
  for (const schema::ObjectSpec& o : objects) {
    const Set writer(o.keys.begin(), o.keys.end());
    EXPECT_EQ(known(o.key), writer) << "members of " << o.key;
    EXPECT_TRUE(writer_top_keys().count(o.key)) << o.key << " is no event's key";
  }
  EXPECT_TRUE(known(schema::key::candidates).empty());
  EXPECT_TRUE(known(schema::key::python).empty());
}

constexpr const char* kNaNFirstLine =
    R"j({"schema":"nanscope/1","event":"nonfinite","id":7,"ts_ns":10,"pid":7,"kernel":"k",)j"
    R"j("counts":{"nan":0,"pos_inf":0,"neg_inf":5},"origin":"preexisting","parents":[3],"inf":"arithmetic",)j"
    R"j("fault":true,"cause":[2,3],"intended_from":[1],"spread":{"before":0.25,"after":1},)j"
    R"j("last_writer":{"event":3,"kernel":"w","launch_id":9,"python":{"file":"/a.py","line":4,"function":"f"}}})j";

TEST(Schema, NaNFirstKeysAreRead) {
  Event ev;
  ASSERT_FALSE(parse_line(kNaNFirstLine, ev));
  EXPECT_EQ(ev.origin, Origin::preexisting);
  EXPECT_EQ(ev.inf, InfKind::arithmetic);
  EXPECT_TRUE(ev.fault);
  EXPECT_EQ(ev.cause, (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(ev.has_field(h_cause));
  EXPECT_EQ(ev.intended_from, (std::vector<std::int64_t>{1}));
  ASSERT_TRUE(ev.has_field(h_spread));
  EXPECT_DOUBLE_EQ(ev.spread.before, 0.25);
  EXPECT_DOUBLE_EQ(ev.spread.after, 1.0);
  ASSERT_TRUE(ev.has_field(h_last_writer));
  EXPECT_EQ(ev.last_writer.event, 3);
  EXPECT_EQ(ev.last_writer.kernel, "w");
  EXPECT_EQ(ev.last_writer.launch_id, 9);
  EXPECT_EQ(python_site_text(*python_site(ev.last_writer.python_json)), "/a.py:4 in f");
  ASSERT_FALSE(parse_line(R"({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,"kernel":"k",)"
                          R"("counts":{"nan":0,"pos_inf":1,"neg_inf":0},"inf":"from_the_future"})",
                          ev));
  EXPECT_EQ(ev.inf, InfKind::other);
  EXPECT_FALSE(ev.has_field(h_cause));
  ASSERT_FALSE(parse_line(R"({"schema":"nanscope/1","event":"summary","id":9,"ts_ns":1,"pid":1,"faults":2,)"
                          R"("infinities":{"intended":3,"arithmetic":4}})",
                          ev));
  EXPECT_EQ(ev.faults, 2);
  EXPECT_EQ(ev.infinities_intended, 3);
  EXPECT_EQ(ev.infinities_arithmetic, 4);
  const ParseError bad = parse_line(R"({"schema":"nanscope/1","event":"summary","id":9,"ts_ns":1,"pid":1,)"
                                    R"("infinities":{"intended":-1}})",
                                    ev);
  ASSERT_TRUE(bad);
  EXPECT_NE(bad.message.find("infinities.intended"), std::string::npos) << bad.message;
  const ParseError type = parse_line(R"({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,)"
                                     R"("kernel":"k","counts":{"nan":1,"pos_inf":0,"neg_inf":0},"spread":{"after":"x"}})",
                                     ev);
  ASSERT_TRUE(type);
  EXPECT_NE(type.message.find("spread.after"), std::string::npos) << type.message;
}

TEST(Schema, NoEventListsAKeyTwice) {
  for (const schema::EventSpec& e : schema::kEvents) {
    Set seen(std::begin(schema::kCommonKeys), std::end(schema::kCommonKeys));
    for (std::string_view k : e.keys) EXPECT_TRUE(seen.insert(k).second) << e.name << "." << k << " listed twice";
  }
  Set names;
  for (const schema::EventSpec& e : schema::kEvents) EXPECT_TRUE(names.insert(e.name).second) << e.name;
}

// The enum strings round-trip through the reader's inverse; an unknown string reads as unknown.
TEST(Schema, EnumStringsRoundTrip) {
  for (Origin o : {Origin::introduced, Origin::propagated, Origin::host, Origin::unknown, Origin::candidate,
                   Origin::preexisting})
    EXPECT_EQ(schema::origin_from(schema::origin_name(o)), o);
  for (Region r : {Region::padding, Region::real, Region::mixed, Region::unknown})
    EXPECT_EQ(schema::region_from(schema::region_name(r)), r);
  EXPECT_EQ(schema::origin_from("from_the_future"), Origin::unknown);
  EXPECT_STREQ(schema::origin_name(Origin::none), "");
}

// The writer marks a fixed finding with action: zeroed (older logs said fixed: true); the
// report's "fixed" column reads either.
TEST(Schema, WritersSpellingOfAFixIsRead) {
  Event ev;
  ASSERT_FALSE(parse_line(R"({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,)"
                          R"("kernel":"k","counts":{"nan":1,"pos_inf":0,"neg_inf":0},"action":"zeroed"})",
                          ev));
  EXPECT_TRUE(ev.has_field(h_fixed));
  EXPECT_TRUE(ev.fixed);
  ASSERT_FALSE(parse_line(R"({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,)"
                          R"("kernel":"k","counts":{"nan":1,"pos_inf":0,"neg_inf":0}})",
                          ev));
  EXPECT_FALSE(ev.has_field(h_fixed));
}

TEST(Schema, NestedTypeErrorsNameTheObject) {
  Event ev;
  ParseError err = parse_line(R"({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,)"
                              R"("kernel":"k","counts":{"nan":"x"}})",
                              ev);
  ASSERT_TRUE(err);
  EXPECT_NE(err.message.find("counts.nan"), std::string::npos) << err.message;
}

// A candidate finding as the writer emits it (docs/origin.md): the parser keeps `candidates` and
// `python` as text, launch_site.hpp decodes them, and the report shows both in the first cause.
constexpr const char* kCandidateLine =
    R"j({"schema":"nanscope/1","event":"nonfinite","id":3,"ts_ns":10,"pid":7,"device":0,"stream":"0x0",)j"
    R"j("kernel":"scale_rows_params(ScaleRowsParams)","launch_id":14,"buffer":{"arg":65535,"ptr":"0x7f00",)j"
    R"j("dtype":"f32","elements":16384},"counts":{"nan":2048,"pos_inf":0,"neg_inf":0},"first_index":0,)j"
    R"j("last_index":9,"region":"unknown","origin":"candidate","root":[3],)j"
    R"j("candidates":[{"kernel":"scale_rows_params(ScaleRowsParams)","launch_id":14,"stream":"0x0",)j"
    R"j("python":{"file":"/app/cuda_ext_params.py","line":93,"function":"main"}}],)j"
    R"j("python":{"file":"/app/cuda_ext_params.py","line":93,"function":"main"}})j";

TEST(Schema, CandidatesAndThePythonLineAreReadBack) {
  Event ev;
  ASSERT_FALSE(parse_line(kCandidateLine, ev));
  EXPECT_EQ(ev.origin, Origin::candidate);
  const auto py = python_site(ev.python_json);
  ASSERT_TRUE(py.has_value());
  EXPECT_EQ(python_site_text(*py), "/app/cuda_ext_params.py:93 in main");
  EXPECT_EQ(python_site_short(*py), "cuda_ext_params.py:93");
  const auto c = candidate_refs(ev.candidates_json);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kernel, "scale_rows_params(ScaleRowsParams)");
  EXPECT_EQ(c[0].launch_id, 14);
  ASSERT_TRUE(c[0].python.has_value());
  EXPECT_EQ(c[0].python->line, 93);
  EXPECT_EQ(candidates_text(c, 80), "scale_rows_params(ScaleRowsParams) (launch 14, /app/cuda_ext_params.py:93 in main)");

  synth::TempDir dir;
  { std::ofstream(dir / "c.jsonl") << kCandidateLine << "\n"; }
  const synth::Result r = synth::run({dir / "c.jsonl", "--color", "never"});
  EXPECT_NE(r.out.find("candidate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuda_ext_params.py:93 in main"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not proven"), std::string::npos) << r.out;
  const synth::Result j = synth::run({dir / "c.jsonl", "--format", "json"});
  EXPECT_NE(j.out.find("\"candidates\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"function\": \"main\""), std::string::npos) << j.out;
}

// torch.compile: the model's line, mapped from Inductor's output code, with the generated line.
TEST(Schema, AMappedPythonLineShowsWhereItWasCompiledInto) {
  const auto py = python_site(R"({"file":"/m/modeling_llama.py","line":64,"function":"forward",)"
                              R"("generated":{"file":"/tmp/torchinductor_u/ab/cab.py","line":112}})");
  ASSERT_TRUE(py.has_value());
  EXPECT_EQ(py->generated_line, 112);
  EXPECT_EQ(python_site_text(*py), "/m/modeling_llama.py:64 in forward (compiled into /tmp/torchinductor_u/ab/cab.py:112)");
  EXPECT_EQ(python_site_short(*py), "modeling_llama.py:64");
  // An odd `generated` is ignored.
  const auto odd = python_site(R"({"file":"/m/a.py","line":3,"function":"f","generated":[1]})");
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(python_site_text(*odd), "/m/a.py:3 in f");
}

// An XLA kernel's line comes with the op that made it (its HLO op_name); an odd op is left out.
TEST(Schema, AnXlaLineShowsItsOp) {
  const auto py = python_site(R"({"file":"/w/jax_pool.py","line":27,"function":"main.<locals>.step",)"
                              R"("op":"jit(step)/log"})");
  ASSERT_TRUE(py.has_value());
  EXPECT_EQ(python_site_text(*py), "/w/jax_pool.py:27 in main.<locals>.step (op jit(step)/log)");
  const auto odd = python_site(R"({"file":"/w/a.py","line":3,"function":"f","op":7})");
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(python_site_text(*odd), "/w/a.py:3 in f");
}

// Hostile or older values give nothing (or the entries that make sense), never an error.
TEST(Schema, OddCandidatesAndPythonValuesAreHarmless) {
  EXPECT_FALSE(python_site("null").has_value());
  EXPECT_FALSE(python_site("").has_value());
  EXPECT_FALSE(python_site(R"({"file":7,"line":"x"})").has_value());
  EXPECT_FALSE(python_site("[1,2").has_value());
  EXPECT_TRUE(candidate_refs(R"({"kernel":"k"})").empty());
  const auto some = candidate_refs(R"(["bare", 3, {"kernel":""}, {"kernel":"k","launch_id":"x","python":5}])");
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].kernel, "bare");
  EXPECT_EQ(some[1].launch_id, 0);
  EXPECT_FALSE(some[1].python.has_value());
  std::string many = "[";
  for (int i = 0; i < 1000; ++i) many += std::string(i ? "," : "") + R"({"kernel":"k"})";
  EXPECT_EQ(candidate_refs(many + "]").size(), kMaxCandidates);
  Event ev;  // the parser takes any JSON value for both, as a newer writer may send
  EXPECT_FALSE(parse_line(R"({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,"kernel":"k",)"
                          R"("counts":{"nan":1,"pos_inf":0,"neg_inf":0},"python":[1,{"a":2}],"candidates":"x"})",
                          ev));
}

}  // namespace
}  // namespace nanscope::report

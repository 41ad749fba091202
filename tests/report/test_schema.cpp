// One schema for the writer and `nanscope report` (src/log_schema.hpp): every key the writer's
// lists say an event carries must be known to the parser (decoded, or skipped on purpose), and
// every key the parser knows must be one the writer emits or a legacy key of older logs. A key
// added on one side only fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "event.hpp"
#include "fields.hpp"
#include "log_schema.hpp"

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
  for (Origin o : {Origin::introduced, Origin::propagated, Origin::host, Origin::unknown})
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

}  // namespace
}  // namespace nanscope::report

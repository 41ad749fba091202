// The line parser: the schema's example, escapes, types, errors.
#include <gtest/gtest.h>

#include "event.hpp"

using namespace nanscope::report;

namespace {

const char* kExample =
    R"j({"schema":"nanscope/1","event":"nonfinite","id":3,"ts_ns":1764513600000000000,"pid":4242,"device":0,"stream":"0x0","kernel":"masked_softmax(float*, float const*, int, int)","kernel_mangled":"_Z14masked_softmaxPfPKfii","launch_id":1,"correlation_id":17,"buffer":{"arg":0,"ptr":"0x7f3a00000000","dtype":"f32","elements":4096},"counts":{"nan":512,"pos_inf":0,"neg_inf":0},"first_index":3584,"last_index":4095})j";

TEST(Parse, SchemaExample) {
  Event e;
  ParseError pe = parse_line(kExample, e);
  ASSERT_FALSE(pe) << pe.message;
  EXPECT_EQ(e.kind, Kind::nonfinite);
  EXPECT_EQ(e.id, 3);
  EXPECT_EQ(e.ts_ns, 1764513600000000000);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.rank, -1);
  EXPECT_EQ(e.kernel, "masked_softmax(float*, float const*, int, int)");
  EXPECT_EQ(e.buffer.ptr, "0x7f3a00000000");
  EXPECT_EQ(e.buffer.elements, 4096);
  EXPECT_EQ(e.counts.nan, 512);
  EXPECT_EQ(e.first_index, 3584);
  EXPECT_EQ(e.region, Region::none);
}

TEST(Parse, OptionalFieldsAndUnknownFields) {
  Event e;
  ParseError pe = parse_line(
      R"j({"schema":"nanscope/1","event":"nonfinite","id":9,"ts_ns":5,"pid":1,"rank":3,"local_rank":1,"kernel":"k","counts":{"nan":1,"pos_inf":2,"neg_inf":3},"region":"mixed","counts_padding":4,"counts_real":2,"rows":{"padding":[[1,2],[5,5]],"real":[[0,0]],"truncated":true},"origin":"introduced","parents":[1,2],"root":[1],"leak":true,"fixed":true,"graph_id":4,"replay":11,"dump":"x.npy","future":{"nested":[1,{"a":null}]},"also":-1.5e3})j",
      e);
  ASSERT_FALSE(pe) << pe.message;
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.counts.total(), 6);
  EXPECT_EQ(e.region, Region::mixed);
  EXPECT_EQ(e.counts_padding, 4);
  ASSERT_EQ(e.rows_padding.size(), 2u);
  EXPECT_EQ(e.rows_padding[1], RowRange(5, 5));
  EXPECT_TRUE(e.rows_truncated);
  EXPECT_EQ(e.origin, Origin::introduced);
  EXPECT_EQ(e.parents, (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(e.leak);
  EXPECT_TRUE(e.fixed);
  EXPECT_TRUE(e.has_field(h_graph_id));
  EXPECT_EQ(e.replay, 11);
  EXPECT_EQ(e.dump, "x.npy");
}

TEST(Parse, EscapesAndUtf8) {
  Event e;
  ParseError pe = parse_line(
      R"j({"schema":"nanscope\/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,"kernel":"k\u00e9\"q\"\n\ud83d\ude00 \u00fc","counts":{"nan":1}})j",
      e);
  ASSERT_FALSE(pe) << pe.message;
  // A control character (here the newline) is kept as its printable escape (util.hpp).
  EXPECT_EQ(e.kernel, "k\xC3\xA9\"q\"\\x0a\xF0\x9F\x98\x80 \xC3\xBC");
}

TEST(Parse, Errors) {
  Event e;
  auto kind = [&](std::string_view line) { return parse_line(line, e).kind; };
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","id":1,"ts_ns":1,"pid":1})j"), ErrorKind::none);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","id":1,"ts_ns":1,"pid":1)j"), ErrorKind::syntax);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","id":1,"ts_ns":1,"pid":1}x)j"), ErrorKind::syntax);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","id":01,"ts_ns":1,"pid":1})j"), ErrorKind::syntax);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","id":"1","ts_ns":1,"pid":1})j"), ErrorKind::field);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","id":1.5,"ts_ns":1,"pid":1})j"), ErrorKind::field);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"start","ts_ns":1,"pid":1})j"), ErrorKind::field);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1})j"), ErrorKind::field);
  EXPECT_EQ(kind(R"j({"schema":"nanscope/2","event":"start","id":1,"ts_ns":1,"pid":1})j"), ErrorKind::schema);
  EXPECT_EQ(kind(R"j([1,2])j"), ErrorKind::field);
  EXPECT_EQ(kind("{\"schema\":\"nanscope/1\xFF\"}"), ErrorKind::syntax);  // invalid UTF-8
  EXPECT_EQ(kind(R"j({"schema":"\ud800"})j"), ErrorKind::syntax);           // lone surrogate
  EXPECT_EQ(kind(std::string(200, '[')), ErrorKind::limit);
  ParseError pe = parse_line(R"j({"schema":"nanscope/1","event":"start","id":1,"ts_ns":1,"pi)j", e);
  EXPECT_NE(pe.message.find("truncated"), std::string::npos) << pe.message;
  pe = parse_line(R"j({"schema":"nanscope/1","event":"start","id":true,"ts_ns":1,"pid":1})j", e);
  EXPECT_EQ(pe.message, "field 'id': expected an integer");
}

TEST(Parse, FutureMinorSchemaAndUnknownEventKind) {
  Event e;
  EXPECT_FALSE(parse_line(R"j({"schema":"nanscope/1.1","event":"gpu_reset","id":1,"ts_ns":1,"pid":1})j", e));
  EXPECT_EQ(e.kind, Kind::other);
}

}  // namespace

namespace {

// The string scanner takes 8 bytes a step: a byte that ends the plain run (quote, escape,
// control character, DEL, UTF-8) is found at every offset of a step, and so is a line that
// ends inside a string.
TEST(Parse, StringScannerAtEveryOffset) {
  const std::string head = R"j({"schema":"nanscope/1","event":"nonfinite","id":1,"ts_ns":1,"pid":1,"counts":{"nan":1},"kernel":")j";
  struct Case {
    std::string written, decoded;
    bool ok;
  };
  const Case cases[] = {{"\\\"", "\"", true},    {"\\\\", "\\", true},  {"\\u0041", "A", true},
                        {"\x7f", "\\x7f", true},  {"\xc3\xa9", "\xc3\xa9", true},
                        {"\x01", "", false},     {"\xff", "", false}};
  for (std::size_t at = 0; at < 19; ++at) {
    for (const Case& c : cases) {
      const std::string before(at, 'a'), after(17 - at % 8, 'b');
      Event e;
      const ParseError pe = parse_line(head + before + c.written + after + "\"}", e);
      EXPECT_EQ(!pe, c.ok) << at << " " << c.written << ": " << pe.message;
      if (c.ok && !pe) EXPECT_EQ(e.kernel, before + c.decoded + after) << at;
    }
    Event e;
    const std::string plain(at, 'a');
    EXPECT_FALSE(parse_line(head + plain + "\"}", e)) << at;
    EXPECT_EQ(e.kernel, plain);
    EXPECT_EQ(parse_line(head + plain, e).kind, ErrorKind::syntax) << at;  // the line ends inside the string
  }
}

}  // namespace

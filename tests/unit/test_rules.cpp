// Tests for src/rules.cpp: the rules file parser (valid files, every malformed case, bad rules
// skipped while good ones load) and resolve() against a fake kernel parameter block.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "rules.hpp"

namespace nanscope {
namespace {

const std::string kFile = "rules.json";

RulesResult parse(const std::string& text) { return parse_rules(text, kFile); }

// The one error of a file with one bad rule (or a file-level problem).
std::string only_error(const std::string& text) {
  auto r = parse(text);
  EXPECT_EQ(r.errors.size(), 1u) << text;
  EXPECT_TRUE(r.file.rules.empty()) << text;
  return r.errors.empty() ? "" : r.errors.front();
}

// A file holding one rule whose body is `rule`.
std::string one(const std::string& rule) {
  return R"({"version": 1, "rules": [)" + rule + "]}";
}

// A valid rule with `extra` spliced into its object (after "kernel") and `output` as output.
std::string rule_with(const std::string& output, const std::string& extra = "") {
  return R"({"name": "r", "kernel": "attn", )" + extra + R"("output": )" + output + "}";
}
const std::string kOutput = R"({"param": 0, "dtype": "bf16", "rows": 8, "row_elements": 64})";

// The full file from docs/rules.md: every padding form.
const char* kEveryForm = R"({
  "version": 1,
  "comment": "one rule per padding form",
  "rules": [
    {
      "name": "mla-decode-out",
      "kernel": "flash_mla.*decode",
      "output": {"param": 0, "offset": 8, "dtype": "bf16",
                 "rows": {"param": 2}, "row_elements": 65536,
                 "row_stride": {"param": 0, "offset": 24, "type": "int64"}},
      "padding": {"seq_lens": {"param": 1, "type": "int32", "pad_value": 0}},
      "action": "fix"
    },
    {
      "name": "host-count",
      "kernel": "^void paged_attention",
      "output": {"param": 7, "dtype": "f16", "rows": 8,
                 "row_elements": {"param": 3, "type": "int64"}},
      "padding": {"real_rows": {"param": 4}},
      "action": "abort"
    },
    // comments are allowed
    {
      "name": "device-count",
      "kernel": "decode",
      "output": {"param": 7, "dtype": "f32", "rows": 4, "row_elements": 100, "row_stride": 128},
      "padding": {"real_rows_device": {"param": 6, "type": "int64"}}
    },
    {
      "name": "mask",
      "kernel": "decode",
      "output": {"param": 7, "dtype": "f8e4m3", "rows": 8, "row_elements": 1500},
      "padding": {"mask": {"param": 0, "offset": 16}},
      "action": "detect"
    },
    {
      "name": "no-padding",
      "kernel": ".",
      "comment": "region unknown, but exact rows",
      "output": {"param": 7, "dtype": "f64", "rows": 2, "row_elements": 3}
    }
  ]
})";

TEST(RulesParse, EveryPaddingForm) {
  auto r = parse(kEveryForm);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front();
  ASSERT_EQ(r.file.rules.size(), 5u);
  const auto& mla = r.file.rules[0];
  EXPECT_EQ(mla.name, "mla-decode-out");
  EXPECT_EQ(mla.kernel, "flash_mla.*decode");
  EXPECT_EQ(mla.file, kFile);
  EXPECT_EQ(mla.index, 0u);
  EXPECT_EQ(mla.where(), "rules.json: rule 0 (\"mla-decode-out\")");
  EXPECT_EQ(mla.output.ptr.param, 0u);
  EXPECT_EQ(mla.output.ptr.offset, 8u);
  EXPECT_EQ(mla.output.dtype, DType::bf16);
  EXPECT_TRUE(mla.output.rows.from_param);
  EXPECT_EQ(mla.output.rows.ref.param, 2u);
  EXPECT_EQ(mla.output.rows.ref.type, IndexType::i32);
  EXPECT_FALSE(mla.output.row_elements.from_param);
  EXPECT_EQ(mla.output.row_elements.value, 65536u);
  ASSERT_TRUE(mla.output.row_stride.has_value());
  EXPECT_TRUE(mla.output.row_stride->from_param);
  EXPECT_EQ(mla.output.row_stride->ref.offset, 24u);
  EXPECT_EQ(mla.output.row_stride->ref.type, IndexType::i64);
  EXPECT_EQ(mla.padding.source, PaddingSource::seq_lens);
  EXPECT_EQ(mla.padding.ref.param, 1u);
  EXPECT_EQ(mla.padding.ref.type, IndexType::i32);
  EXPECT_EQ(mla.padding.pad_value, 0);
  EXPECT_EQ(mla.action, Action::fix);

  const auto& host = r.file.rules[1];
  EXPECT_EQ(host.padding.source, PaddingSource::real_count_host);
  EXPECT_EQ(host.padding.ref.param, 4u);
  EXPECT_EQ(host.output.row_elements.ref.type, IndexType::i64);
  EXPECT_EQ(host.output.dtype, DType::f16);
  EXPECT_EQ(host.action, Action::abort);
  EXPECT_FALSE(host.output.row_stride.has_value());

  const auto& dev = r.file.rules[2];
  EXPECT_EQ(dev.padding.source, PaddingSource::real_count_device);
  EXPECT_EQ(dev.padding.ref.type, IndexType::i64);
  EXPECT_EQ(dev.output.row_stride->value, 128u);
  EXPECT_EQ(dev.action, Action::detect);  // the default

  const auto& mask = r.file.rules[3];
  EXPECT_EQ(mask.padding.source, PaddingSource::mask);
  EXPECT_EQ(mask.padding.ref.offset, 16u);
  EXPECT_EQ(mask.output.dtype, DType::f8e4m3);

  EXPECT_EQ(r.file.rules[4].padding.source, PaddingSource::none);
  EXPECT_EQ(r.file.rules[4].index, 4u);
}

TEST(RulesParse, SeqLensOptions) {
  auto r = parse(one(rule_with(kOutput, R"("padding": {"seq_lens": {"param": 3, "offset": 40,
      "type": "int64", "pad_value": -1}}, )")));
  ASSERT_TRUE(r.errors.empty()) << r.errors.front();
  const auto& p = r.file.rules.at(0).padding;
  EXPECT_EQ(p.ref.param, 3u);
  EXPECT_EQ(p.ref.offset, 40u);
  EXPECT_EQ(p.ref.type, IndexType::i64);
  EXPECT_EQ(p.pad_value, -1);
}

TEST(RulesParse, MinimalFiles) {
  auto r = parse(R"({"rules": []})");  // version defaults to 1
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.file.rules.empty());
  r = parse(one(rule_with(kOutput, R"("padding": null, )")));
  ASSERT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.file.rules.at(0).padding.source, PaddingSource::none);
}

TEST(RulesParse, DtypeNames) {
  for (const char* d : {"f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2"}) {
    auto r = parse(one(rule_with(std::string(R"({"param": 0, "dtype": ")") + d +
                                 R"(", "rows": 1, "row_elements": 1})")));
    ASSERT_TRUE(r.errors.empty()) << d;
    EXPECT_STREQ(dtype_name(r.file.rules.at(0).output.dtype), d);
  }
}

TEST(RulesMatch, RegexSearchOnDemangledName) {
  auto r = parse(kEveryForm);
  ASSERT_EQ(r.file.rules.size(), 5u);
  const auto& mla = r.file.rules[0];
  EXPECT_TRUE(mla.matches("void flash_mla::kernel<cutlass::bfloat16_t>(Params)"
                          " [clone decode]"));
  EXPECT_TRUE(mla.matches("void flash_mla_splitkv_decode_kernel<64>(Flash_fwd_mla_params)"));
  EXPECT_FALSE(mla.matches("void flash_attn_fwd_kernel(Params)"));
  EXPECT_FALSE(mla.matches(""));
  const auto& anchored = r.file.rules[1];
  EXPECT_TRUE(anchored.matches("void paged_attention_v2_kernel<float>(float*, int)"));
  EXPECT_FALSE(anchored.matches("void vllm::paged_attention_v2_kernel<float>(float*, int)"));
}

// ---------------------------------------------------------------------------------------------
// Malformed files: each error names the file, the rule (index and name) and the field.

TEST(RulesErrors, NotJson) {
  EXPECT_EQ(only_error("{ rules: [] }"),
            "rules.json: not valid JSON: parse error at line 1, column 3: syntax error while "
            "parsing object key - invalid literal; last read: '{ r'; expected string literal "
            "(byte 3)");
  EXPECT_EQ(only_error(""),
            "rules.json: not valid JSON: parse error at line 1, column 1: syntax error while "
            "parsing value - unexpected end of input; expected '[', '{', or a literal (byte 1)");
}

TEST(RulesErrors, Truncated) {
  std::string text = kEveryForm;
  text.resize(text.find("\"host-count\""));
  const auto e = only_error(text);
  const auto line = std::count(text.begin(), text.end(), '\n') + 1;  // the last, cut short
  EXPECT_EQ(e.rfind("rules.json: not valid JSON: parse error at line " + std::to_string(line) +
                        ", column ",
                    0),
            0u)
      << e;
  EXPECT_NE(e.find("unexpected end of input"), std::string::npos) << e;
  EXPECT_NE(e.find("(byte " + std::to_string(text.size() + 1) + ")"), std::string::npos) << e;
}

TEST(RulesErrors, FileLevel) {
  EXPECT_EQ(only_error("[]"),
            R"(rules.json: expected an object {"version": 1, "rules": [...]}, got an array)");
  EXPECT_EQ(only_error(R"({"version": 1})"), "rules.json: rules: missing");
  EXPECT_EQ(only_error(R"({"version": 1, "rules": {}})"),
            "rules.json: rules: expected an array, got an object");
  EXPECT_EQ(only_error(R"({"version": 2, "rules": []})"),
            "rules.json: version: 2 is not supported (this nanscope reads version 1)");
  EXPECT_EQ(only_error(R"({"version": "1", "rules": []})"),
            R"(rules.json: version: "1" is not supported (this nanscope reads version 1))");
  // An unknown top-level field is reported, the rules are still read.
  auto r = parse(R"({"version": 1, "rule": [], "rules": [)" + rule_with(kOutput) + "]}");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "rules.json: rule: unknown field (expected version, rules, comment)");
  EXPECT_EQ(r.file.rules.size(), 1u);
}

TEST(RulesErrors, UnknownDtype) {
  auto text = R"({"version": 1, "rules": [)" + rule_with(kOutput) + ", " +
              R"({"name": "b", "kernel": "k", "output": )" + kOutput + "}, " +
              R"({"name": "mla-decode-out", "kernel": "k", "output": {"param": 0,
                  "dtype": "bf17", "rows": 8, "row_elements": 64}}]})";
  auto r = parse(text);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0],
            R"(rules.json: rule 2 ("mla-decode-out"): output.dtype: "bf17" is not one of f64, )"
            "f32, f16, bf16, f8e4m3, f8e5m2");
  EXPECT_EQ(r.file.rules.size(), 2u);
}

// Found by .ci/fuzz: an out-of-range number threw json::out_of_range past the parse_error
// handler, and std::terminate took the application down.
TEST(RulesErrors, NumberPastDoubleRangeIsAnError) {
  const auto r = parse_rules(R"({"rules": [2222222222222222222e22222222]})", "rules.json");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("number overflow"), std::string::npos) << r.errors[0];
}

TEST(RulesErrors, BadRegex) {
  const auto e = only_error(one(R"({"name": "r", "kernel": "flash_mla[", "output": )" +
                                kOutput + "}"));
  EXPECT_EQ(e.rfind(R"(rules.json: rule 0 ("r"): kernel: "flash_mla[" is not a valid )"
                    "regular expression: ",
                    0),
            0u)
      << e;
  EXPECT_EQ(only_error(one(R"({"name": "r", "kernel": "", "output": )" + kOutput + "}")),
            R"(rules.json: rule 0 ("r"): kernel: is empty (use "." to match every kernel))");
}

TEST(RulesErrors, MissingFields) {
  EXPECT_EQ(only_error(one(R"({"kernel": "k", "output": )" + kOutput + "}")),
            "rules.json: rule 0: name: missing");
  EXPECT_EQ(only_error(one(R"({"name": "r", "output": )" + kOutput + "}")),
            R"(rules.json: rule 0 ("r"): kernel: missing)");
  EXPECT_EQ(only_error(one(R"({"name": "r", "kernel": "k"})")),
            R"(rules.json: rule 0 ("r"): output: missing)");
  EXPECT_EQ(only_error(one(rule_with(R"({"dtype": "f32", "rows": 8, "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.param: missing)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "rows": 8, "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.dtype: missing)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.rows: missing)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": 8})"))),
            R"(rules.json: rule 0 ("r"): output.row_elements: missing)");
  EXPECT_EQ(only_error(one(rule_with(
                R"({"param": 0, "dtype": "f32", "rows": {"type": "int64"}, "row_elements": 1})"))),
            R"(rules.json: rule 0 ("r"): output.rows.param: missing)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"seq_lens": {"type": "int32"}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.seq_lens.param: missing)");
}

TEST(RulesErrors, WrongTypes) {
  EXPECT_EQ(only_error(one(R"("not a rule")")),
            R"(rules.json: rule 0: expected an object, got a string "not a rule")");
  EXPECT_EQ(only_error(one(R"({"name": 7, "kernel": "k", "output": )" + kOutput + "}")),
            "rules.json: rule 0: name: expected a string, got an integer 7");
  EXPECT_EQ(only_error(one(R"({"name": "r", "kernel": ["k"], "output": )" + kOutput + "}")),
            R"(rules.json: rule 0 ("r"): kernel: expected a string, got an array ["k"])");
  EXPECT_EQ(only_error(one(rule_with("[0]"))),
            R"(rules.json: rule 0 ("r"): output: expected an object, got an array [0])");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": "0", "dtype": "f32", "rows": 8,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.param: expected a non-negative integer, got a )"
            R"(string "0")");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": "8",
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.rows: expected a positive integer or )"
            R"({"param": N}, got a string "8")");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": 8.5,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.rows: 8.5 is not an integer)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": 32, "rows": 8,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.dtype: expected a string, got an integer 32)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("action": "zero", )"))),
            R"(rules.json: rule 0 ("r"): action: "zero" is not one of detect, fix, abort, zero_padding)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"real_rows": {"param": 4,
                                                 "type": "int16"}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.real_rows.type: "int16" is not one of int32, )"
            "int64");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"seq_lens": {"param": 1,
                                                 "pad_value": "0"}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.seq_lens.pad_value: expected an integer, got a )"
            R"(string "0")");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": "seq_lens", )"))),
            R"(rules.json: rule 0 ("r"): padding: expected an object, got a string "seq_lens")");
}

TEST(RulesErrors, NegativeAndZeroNumbers) {
  EXPECT_EQ(only_error(one(rule_with(R"({"param": -1, "dtype": "f32", "rows": 8,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.param: -1 is negative)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "offset": -8, "dtype": "f32", "rows": 8,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.offset: -8 is negative)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": -3,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.rows: -3 is negative)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": 0,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.rows: is 0)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": 8,
                                         "row_elements": {"param": -2}})"))),
            R"(rules.json: rule 0 ("r"): output.row_elements.param: -2 is negative)");
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 4294967296, "dtype": "f32", "rows": 8,
                                         "row_elements": 64})"))),
            R"(rules.json: rule 0 ("r"): output.param: 4294967296 is larger than 4294967295)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"mask": {"param": 6,
                                                 "offset": -1}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.mask.offset: -1 is negative)");
}

TEST(RulesErrors, InconsistentValues) {
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": 8,
                                         "row_elements": 257, "row_stride": 100})"))),
            R"(rules.json: rule 0 ("r"): output.row_stride: 100 is smaller than row_elements )"
            "(257)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"seq_lens": {"param": 1,
                                                 "pad_value": 4294967296}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.seq_lens.pad_value: 4294967296 does not fit )"
            "type int32");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"seq_lens": {"param": 1,
                        "type": "int64", "pad_value": 9223372036854775808}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.seq_lens.pad_value: 9223372036854775808 does )"
            "not fit int64");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"seq_lens": {"param": 1},
                                                 "mask": {"param": 2}}, )"))),
            R"(rules.json: rule 0 ("r"): padding: expected exactly one of seq_lens, real_rows, )"
            "real_rows_device, mask; got 2");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {}, )"))),
            R"(rules.json: rule 0 ("r"): padding: expected exactly one of seq_lens, real_rows, )"
            "real_rows_device, mask; got 0");
  EXPECT_EQ(only_error(one(R"({"name": "", "kernel": "k", "output": )" + kOutput + "}")),
            R"(rules.json: rule 0 (""): name: is empty)");
}

TEST(RulesErrors, UnknownFieldsAreTypos) {
  EXPECT_EQ(only_error(one(rule_with(R"({"param": 0, "dtype": "f32", "rows": 8,
                                         "row_elements": 64, "row_stide": 80})"))),
            R"(rules.json: rule 0 ("r"): output.row_stide: unknown field (expected param, )"
            "offset, dtype, rows, row_elements, row_stride)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"seqlens": {"param": 1}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.seqlens: unknown field (expected seq_lens, )"
            "real_rows, real_rows_device, mask)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("padding": {"mask": {"param": 1,
                                                 "type": "int32"}}, )"))),
            R"(rules.json: rule 0 ("r"): padding.mask.type: unknown field (expected param, )"
            "offset)");
  EXPECT_EQ(only_error(one(rule_with(kOutput, R"("actoin": "fix", )"))),
            R"(rules.json: rule 0 ("r"): actoin: unknown field (expected name, kernel, output, )"
            "padding, action, comment)");
}

TEST(RulesErrors, DuplicateNames) {
  auto r = parse(R"({"rules": [)" + rule_with(kOutput) + ", " + rule_with(kOutput) + "]}");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], R"(rules.json: rule 1 ("r"): name: "r" is already used by rule 0)");
  EXPECT_EQ(r.file.rules.size(), 1u);
}

TEST(RulesErrors, BadRulesSkippedGoodRulesKept) {
  const std::string f32 = R"("output": {"param": 0, "dtype": "f32", "rows": 8, "row_elements": 4})";
  const std::string text = R"({"version": 1, "rules": [
    {"name": "good-0", "kernel": "a", )" + f32 + R"(},
    {"name": "bad-1", "kernel": "(", )" + f32 + R"(},
    {"name": "good-2", "kernel": "b", )" + f32 + R"(},
    {"name": "bad-3", "kernel": "c", "output": {"param": 0, "dtype": "f32", "rows": -8,
                                               "row_elements": 4}},
    42,
    {"name": "good-5", "kernel": "d", )" + f32 + R"(}
  ]})";
  auto r = parse(text);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].rfind(R"(rules.json: rule 1 ("bad-1"): kernel: )", 0), 0u) << r.errors[0];
  EXPECT_EQ(r.errors[1], R"(rules.json: rule 3 ("bad-3"): output.rows: -8 is negative)");
  EXPECT_EQ(r.errors[2], "rules.json: rule 4: expected an object, got an integer 42");
  ASSERT_EQ(r.file.rules.size(), 3u);
  EXPECT_EQ(r.file.rules[0].name, "good-0");
  EXPECT_EQ(r.file.rules[1].name, "good-2");
  EXPECT_EQ(r.file.rules[1].index, 2u);  // the index in the file, for later messages
  EXPECT_EQ(r.file.rules[2].name, "good-5");
  EXPECT_EQ(r.file.rules[2].index, 5u);
}

TEST(RulesLoad, MissingFile) {
  auto r = load_rules("/nonexistent/nanscope-rules.json");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0],
            "/nonexistent/nanscope-rules.json: cannot open rules file: No such file or directory");
  EXPECT_TRUE(r.file.rules.empty());
}

// Defect 9: a directory was "not valid JSON"; a 1 GB file was read whole into the application.
TEST(RulesLoad, DirectoriesAndHugeFilesAreNamed) {
  auto r = load_rules(::testing::TempDir());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("is a directory, not a rules file"), std::string::npos) << r.errors[0];
  const std::string path = ::testing::TempDir() + "nanscope_big_rules_" + std::to_string(::getpid()) + ".json";
  ASSERT_EQ(::truncate(path.c_str(), 0), -1);  // not there yet
  { std::ofstream(path) << "[]"; }
  ASSERT_EQ(::truncate(path.c_str(), off_t(1) << 30), 0);  // sparse: 1 GiB, no disk used
  r = load_rules(path);
  std::remove(path.c_str());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("larger than the 4 MiB limit"), std::string::npos) << r.errors[0];
}

TEST(RulesLoad, ReadsAFile) {
  const std::string path =
      ::testing::TempDir() + "nanscope_rules_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(path);
    out << kEveryForm;
  }
  auto r = load_rules(path);
  std::remove(path.c_str());
  EXPECT_TRUE(r.errors.empty());
  ASSERT_EQ(r.file.rules.size(), 5u);
  EXPECT_EQ(r.file.rules[3].file, path);
  EXPECT_EQ(r.file.rules[3].where(), path + ": rule 3 (\"mask\")");
}

// ---------------------------------------------------------------------------------------------
// resolve() against a parameter block laid out as the driver passes it: each parameter at its
// natural alignment, one after another.

class ParamBlock {
 public:
  template <typename T>
  uint32_t add(const T& value) {
    return add_bytes(&value, sizeof value, alignof(T));
  }
  uint32_t add_bytes(const void* p, size_t n, size_t align) {
    size_t at = (bytes_.size() + align - 1) / align * align;
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
    params_.push_back({at, n});
    return static_cast<uint32_t>(params_.size() - 1);
  }
  ParamReader reader() const {
    return [this](uint32_t param, uint32_t offset, void* out, size_t n) {
      if (param >= params_.size()) return false;
      const auto [at, size] = params_[param];
      if (offset > size || n > size - offset) return false;
      std::memcpy(out, bytes_.data() + at + offset, n);
      return true;
    };
  }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<std::pair<size_t, size_t>> params_;  // offset, size
};

// Like flash-mla's Flash_fwd_mla_params: the output pointer sits inside a struct parameter.
struct MlaParams {
  int32_t batch;
  int32_t heads;
  uint64_t out;        // offset 8
  uint64_t mask;       // offset 16
  int64_t row_stride;  // offset 24
};
static_assert(offsetof(MlaParams, out) == 8 && offsetof(MlaParams, row_stride) == 24);

constexpr uint64_t kOut = 0x7f0000200000, kSeqLens = 0x7f0000300000, kMask = 0x7f0000400000,
                   kCount = 0x7f0000500000, kPlainOut = 0x7f0000600000;

// The parameters of the kernels the rules in kEveryForm describe.
ParamBlock every_form_params(int32_t rows = 8, int64_t stride = 70000, int32_t real = 5) {
  ParamBlock b;
  b.add(MlaParams{8, 128, kOut, kMask, stride});  // 0
  b.add(kSeqLens);                                // 1: int* seq_lens
  b.add(rows);                                    // 2: int rows
  b.add(int64_t{1500});                           // 3: int64 row_elements
  b.add(real);                                    // 4: int real rows
  b.add(uint8_t{1});                              // 5: a bool, unused
  b.add(kCount);                                  // 6: int64* real rows on the device
  b.add(kPlainOut);                               // 7: the output of the other kernels
  return b;
}

std::vector<Rule> every_form_rules() {
  auto r = parse_rules(kEveryForm, kFile);
  EXPECT_TRUE(r.errors.empty());
  return r.file.rules;
}

// The watch rule `index` of kEveryForm resolves to over `block`; a failure is a test failure.
WatchSpec resolve_ok(std::size_t index, const ParamBlock& block) {
  const auto rules = every_form_rules();
  std::string error;
  auto w = resolve(rules.at(index), block.reader(), &error);
  EXPECT_TRUE(w) << error;
  return w.value_or(WatchSpec{});
}

TEST(RulesResolve, SeqLensWithOutputInsideAStruct) {
  const auto w = resolve_ok(0, every_form_params());
  EXPECT_EQ(w.name, "mla-decode-out");
  EXPECT_EQ(w.ptr, kOut);
  EXPECT_EQ(w.dtype, DType::bf16);
  EXPECT_EQ(w.rows, 8u);
  EXPECT_EQ(w.row_elements, 65536u);
  EXPECT_EQ(w.row_stride, 70000u);
  EXPECT_EQ(w.action, Action::fix);
  EXPECT_EQ(w.padding.source, PaddingSource::seq_lens);
  EXPECT_EQ(w.padding.rows, 8u);
  EXPECT_EQ(w.padding.device_ptr, kSeqLens);
  EXPECT_EQ(w.padding.index_type, IndexType::i32);
  EXPECT_EQ(w.padding.pad_value, 0);
  EXPECT_EQ(validate(w), "");
}

TEST(RulesResolve, HostCount) {
  const auto w = resolve_ok(1, every_form_params());
  EXPECT_EQ(w.ptr, kPlainOut);
  EXPECT_EQ(w.rows, 8u);
  EXPECT_EQ(w.row_elements, 1500u);  // from an int64 parameter
  EXPECT_EQ(w.row_stride, 0u);
  EXPECT_EQ(w.action, Action::abort);
  EXPECT_EQ(w.padding.source, PaddingSource::real_count_host);
  EXPECT_EQ(w.padding.host_count, 5u);
  EXPECT_EQ(w.padding.rows, 8u);
}

TEST(RulesResolve, DeviceCountMaskAndNone) {
  const auto block = every_form_params();
  const auto dev = resolve_ok(2, block);
  EXPECT_EQ(dev.padding.source, PaddingSource::real_count_device);
  EXPECT_EQ(dev.padding.device_ptr, kCount);
  EXPECT_EQ(dev.padding.index_type, IndexType::i64);
  EXPECT_EQ(dev.padding.rows, 4u);
  EXPECT_EQ(dev.row_stride, 128u);

  const auto mask = resolve_ok(3, block);
  EXPECT_EQ(mask.padding.source, PaddingSource::mask);
  EXPECT_EQ(mask.padding.device_ptr, kMask);  // a pointer inside the struct parameter 0
  EXPECT_EQ(mask.dtype, DType::f8e4m3);

  const auto rules = every_form_rules();
  auto none = resolve(rules.at(4), block.reader(), nullptr);  // a null error is allowed
  ASSERT_TRUE(none);
  EXPECT_EQ(none->padding.source, PaddingSource::none);
  EXPECT_EQ(none->rows, 2u);
  EXPECT_EQ(none->row_elements, 3u);
}

TEST(RulesResolve, FreshValuesEveryLaunch) {
  for (int32_t rows : {1, 8, 1024}) {
    const auto w = resolve_ok(0, every_form_params(rows, 65536, 1));
    EXPECT_EQ(w.rows, static_cast<uint64_t>(rows));
    EXPECT_EQ(w.padding.rows, static_cast<uint64_t>(rows));
  }
}

// The error resolve() gives for rule `index` of kEveryForm over `block`.
std::string resolve_error(std::size_t index, const ParamBlock& block) {
  const auto rules = every_form_rules();
  std::string error;
  EXPECT_FALSE(resolve(rules.at(index), block.reader(), &error));
  return error;
}

TEST(RulesResolveErrors, ParameterOutOfRange) {
  ParamBlock two;
  two.add(uint64_t{kOut});
  EXPECT_EQ(resolve_error(1, two),
            R"(rules.json: rule 1 ("host-count"): output: cannot read 8 bytes of parameter 7 at )"
            "offset 0");
  // Parameter 0 is an 8-byte pointer here, so the struct offset runs past its end.
  EXPECT_EQ(resolve_error(0, two),
            R"(rules.json: rule 0 ("mla-decode-out"): output: cannot read 8 bytes of parameter 0 )"
            "at offset 8");
}

TEST(RulesResolveErrors, NullPointers) {
  ParamBlock b;
  b.add(MlaParams{8, 128, 0, kMask, 70000});
  EXPECT_EQ(resolve_error(0, b),
            R"(rules.json: rule 0 ("mla-decode-out"): output: parameter 0 offset 8 holds a null )"
            "pointer");
  b = ParamBlock{};
  b.add(MlaParams{8, 128, kOut, kMask, 70000});
  b.add(uint64_t{0});  // seq_lens
  b.add(int32_t{8});
  EXPECT_EQ(resolve_error(0, b),
            R"(rules.json: rule 0 ("mla-decode-out"): padding.seq_lens: parameter 1 offset 0 )"
            "holds a null pointer");
}

TEST(RulesResolveErrors, BadSizes) {
  EXPECT_EQ(resolve_error(0, every_form_params(-1)),
            R"(rules.json: rule 0 ("mla-decode-out"): output.rows: parameter 2 holds -1 )"
            "(negative)");
  EXPECT_EQ(resolve_error(0, every_form_params(0)),
            R"(rules.json: rule 0 ("mla-decode-out"): output.rows: parameter 2 holds 0)");
  EXPECT_EQ(resolve_error(0, every_form_params(8, 4096)),
            R"(rules.json: rule 0 ("mla-decode-out"): invalid watch: row_stride (4096) is )"
            "smaller than row_elements (65536)");
}

TEST(RulesResolveErrors, HostCountOutOfRange) {
  EXPECT_EQ(resolve_error(1, every_form_params(8, 70000, 9)),
            R"(rules.json: rule 1 ("host-count"): padding.real_rows: parameter 4 holds 9, more )"
            "than rows (8)");
  EXPECT_EQ(resolve_error(1, every_form_params(8, 70000, -2)),
            R"(rules.json: rule 1 ("host-count"): padding.real_rows: parameter 4 holds -2 )"
            "(negative)");
}

TEST(RulesResolveErrors, NoReader) {
  const auto rules = every_form_rules();
  std::string error;
  EXPECT_FALSE(resolve(rules.at(0), ParamReader{}, &error));
  EXPECT_EQ(error, R"(rules.json: rule 0 ("mla-decode-out"): no parameter reader)");
}

}  // namespace
}  // namespace nanscope

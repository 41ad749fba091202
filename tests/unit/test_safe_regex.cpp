// SafeRegex: the same answers as std::regex on the patterns users write, and none of its
// failures on hostile ones (issue 19, defect 5): deep nesting and long subjects neither
// overflow the stack nor take quadratic time.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>

#include "safe_regex.hpp"

using nanscope::SafeRegex;

namespace {

bool safe_search(const std::string& pattern, const std::string& subject) {
  std::string error;
  auto re = SafeRegex::compile(pattern, &error);
  EXPECT_TRUE(re) << pattern << ": " << error;
  return re && re->search(subject);
}

TEST(SafeRegex, AgreesWithStdRegex) {
  const std::vector<std::string> patterns = {
      "gemm",         "^gemm",        "float\\)$",     "layer_norm|softmax", "ker.el",       "a*b",
      "(ab)+c",       "x?y",          "[a-c]+_[0-9]{2}", "[^a-z]",           "\\d+",         "\\w+\\s\\w+",
      "(?:fwd|bwd)_kernel<", "o{2,}",  "o{1,2}k",       "^$",                "\\(float\\*",  "[\\d_]+$",
      "a{0}b",        "(a|ab)(c|bcd)(d*)", "^void .*<.*>", "[]a]",            "a.*?b",        "\\.",
  };
  const std::vector<std::string> subjects = {
      "", "gemm_f32(float*)", "void layer_norm<float>(float*, float const*, int)", "softmax_rows(float*, int)",
      "kernel", "aab", "ababc", "y", "abc_12", "ABC", "x 42", "flash_fwd_kernel<T>", "foo", "look", "abcd",
      "]", "a-b", "1_2", "x.y",
  };
  for (const auto& p : patterns) {
    const std::regex ref(p, std::regex::ECMAScript);
    for (const auto& s : subjects) EXPECT_EQ(safe_search(p, s), std::regex_search(s, ref)) << p << " / " << s;
  }
}

TEST(SafeRegex, RefusesWhatItCannotDoByName) {
  std::string error;
  EXPECT_FALSE(SafeRegex::compile("(a)\\1", &error));
  EXPECT_NE(error.find("back-references"), std::string::npos);
  EXPECT_FALSE(SafeRegex::compile("(?=a)", &error));
  EXPECT_NE(error.find("look-around"), std::string::npos);
  EXPECT_FALSE(SafeRegex::compile("(a", &error));
  EXPECT_FALSE(SafeRegex::compile("a)", &error));
  EXPECT_FALSE(SafeRegex::compile("[a", &error));
  EXPECT_FALSE(SafeRegex::compile("*a", &error));
  EXPECT_FALSE(SafeRegex::compile("a{3,1}", &error));
}

TEST(SafeRegex, HostilePatternsAreBoundedErrors) {
  std::string error;
  const std::string deep = std::string(30000, '(') + "a" + std::string(30000, ')');
  EXPECT_FALSE(SafeRegex::compile(deep, &error));
  EXPECT_NE(error.find("longer than 4096 bytes"), std::string::npos) << error;
  const std::string nested = std::string(100, '(') + "a" + std::string(100, ')');
  EXPECT_FALSE(SafeRegex::compile(nested, &error));
  EXPECT_NE(error.find("nested deeper than 64"), std::string::npos) << error;
  EXPECT_FALSE(SafeRegex::compile("((a{100}){100}){100}", &error));
  EXPECT_NE(error.find("too complex"), std::string::npos) << error;
}

TEST(SafeRegex, LongSubjectsInLinearTime) {
  const std::string name(1'000'000, 'a');
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(safe_search(".*z", name));  // std::regex: stack overflow at 50,000
  EXPECT_TRUE(safe_search("(a|aa)*a$", name));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0);
}

}  // namespace

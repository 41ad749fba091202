// Property tests on random and mutated lines: the parser never crashes, calls a line a syntax
// error exactly when a reference JSON parser rejects it, and the report names every bad line.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <set>

#include "event.hpp"
#include "scenarios.hpp"

using namespace nanscope::report;

namespace {

std::string mutate(std::string s, std::mt19937_64& rng) {
  static const std::string alphabet = "{}[]:,\"\\ 0123456789-+.eEtrufalsn\x01\x7f\xc3\xa9\xff\xed\xa0\x80/ubfnrt";
  int ops = 1 + int(rng() % 4);
  for (int i = 0; i < ops && !s.empty(); ++i) {
    std::size_t pos = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[pos] = alphabet[rng() % alphabet.size()]; break;            // flip a byte
      case 1: s.erase(pos, 1 + rng() % 8); break;                           // delete
      case 2: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;   // insert
      case 3: s.resize(pos); break;                                         // truncate
      case 4: s.insert(pos, s.substr(rng() % s.size(), rng() % 16)); break;  // duplicate a piece
      case 5: s[pos] = char(rng() & 0xFF); break;                           // random byte
    }
  }
  return s;
}

std::vector<std::string> seeds() {
  synth::TempDir dir;
  synth::write_training(dir);
  std::vector<std::string> out;
  for (const char* f : {"rank0.jsonl", "rank1.jsonl"}) {
    std::istringstream in(synth::slurp(dir / f));
    for (std::string l; std::getline(in, l);) out.push_back(l);
  }
  return out;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

TEST(Fuzz, SyntaxErrorsMatchReferenceParser) {
  std::mt19937_64 rng(20261130);
  auto base = seeds();
  Event e;
  int syntax = 0, valid = 0;
  for (int i = 0; i < 60000; ++i) {
    std::string line = mutate(base[rng() % base.size()], rng);
    if (blank(line)) continue;
    ParseError pe = parse_line(line, e);
    if (pe.kind == ErrorKind::limit) continue;
    bool ok_json = nlohmann::json::accept(line);
    if (!ok_json && pe.kind == ErrorKind::field) {
      // The reference parser also rejects valid-grammar numbers beyond double range.
      try {
        auto j = nlohmann::json::parse(line);
        (void)j;
      } catch (const nlohmann::json::exception& ex) {
        if (std::string(ex.what()).find("number overflow") != std::string::npos) continue;
      }
    }
    ASSERT_EQ(pe.kind == ErrorKind::syntax, !ok_json) << "line: " << line << "\nmessage: " << pe.message;
    syntax += pe.kind == ErrorKind::syntax;
    valid += !pe;
  }
  EXPECT_GT(syntax, 10000);
  EXPECT_GT(valid, 100);
}

TEST(Fuzz, RandomBytesNeverCrash) {
  std::mt19937_64 rng(7);
  Event e;
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 200, '\0');
    for (auto& c : s) c = char(rng() & 0xFF);
    if (i % 2) s = "{\"schema\":\"nanscope/1\"," + s;
    ParseError pe = parse_line(s, e);
    EXPECT_TRUE(pe || !pe);
  }
}

// End to end: a log mixing valid and mutated lines; every bad line is named on stderr with its
// file and line number, and counted.
TEST(Fuzz, EveryBadLineIsReported) {
  std::mt19937_64 rng(42);
  auto base = seeds();
  synth::TempDir dir;
  std::string text;
  std::set<int> bad;
  Event e;
  int lineno = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string line = base[rng() % base.size()];
    if (rng() % 3 == 0) line = mutate(line, rng);
    line.erase(std::remove(line.begin(), line.end(), '\n'), line.end());
    ++lineno;
    text += line + "\n";
    if (blank(line)) continue;
    ParseError pe = parse_line(line, e);
    if (pe.kind == ErrorKind::schema) {  // the report refuses the rest of such a file
      text.resize(text.size() - line.size() - 1);
      --lineno;
      continue;
    }
    if (pe) bad.insert(lineno);
  }
  std::ofstream(dir / "fuzz.jsonl") << text;
  synth::Result r = synth::run({dir / "fuzz.jsonl", "--format", "json"});
  std::set<int> reported;
  std::regex re("fuzz\\.jsonl:([0-9]+): ");
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), re), end; it != end; ++it)
    reported.insert(std::stoi((*it)[1]));
  EXPECT_EQ(reported, bad);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["totals"]["bad_lines"].get<std::size_t>(), bad.size());
  EXPECT_GT(bad.size(), 500u);
}

}  // namespace

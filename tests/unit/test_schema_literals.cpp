// Every event and key name the log writer spells comes from src/log_schema.hpp (issue 36): this
// test reads the sources that write log events (those that build nlohmann `Json` or call emit) and
// fails on a string literal in an event or key position, naming file and line. Input parsers
// (rules, config) read nlohmann::json and are not writers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Event and key positions: emit("x", ...), emit_with_id(id, "x", ...), j["x"], and {"x", value}
// pairs of a JSON object literal (a key, then a comma), except in an array's initializer
// (`kPrefixes[] = {"nvjet_", ...}`: a list of strings, not an object).
const std::regex kLiteralName(R"re((\bemit\(\s*"|\bemit_with_id\([^,()]*,\s*"|\["[a-z_]+"\]))re");
const std::regex kLiteralPair(R"re(\{\s*"[a-z_]+"\s*,)re");
const std::regex kArrayInit(R"re(\[\w*\]\s*=\s*\{)re");
const std::regex kWriter(R"re(\bJson\b|ordered_json|\.emit\(|->emit\()re");

std::vector<std::string> literal_names(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> found;
  if (!std::regex_search(text.str(), kWriter)) return found;
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    const auto comment = line.find("//");
    const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
    const bool pair = std::regex_search(code, kLiteralPair) && !std::regex_search(code, kArrayInit);
    if (std::regex_search(code, kLiteralName) || pair) found.push_back(file.filename().string() + ":" + std::to_string(n) + ": " + line);
  }
  return found;
}

std::vector<std::string> writer_literals(const fs::path& root) {
  std::vector<std::string> found;
  for (const char* dir : {"hooks", "src"})
    for (const auto& entry : fs::directory_iterator(root / dir)) {  // not src/report (the reader), src/decode
      if (entry.path().extension() != ".cpp") continue;
      for (std::string& f : literal_names(entry.path())) found.push_back(std::move(f));
    }
  return found;
}

TEST(SchemaLiterals, TheWriterSpellsNoEventOrKeyName) {
  const auto found = writer_literals(NANSCOPE_SOURCE_DIR);
  std::string all;
  for (const std::string& f : found) all += "\n  " + f;
  EXPECT_TRUE(found.empty()) << "use the names of src/log_schema.hpp:" << all;
}

// The check sees the forms it forbids.
TEST(SchemaLiterals, TheCheckCatchesEachForm) {
  const fs::path dir = fs::temp_directory_path() / "nanscope_schema_literals";
  fs::create_directories(dir);
  const fs::path file = dir / "writer.cpp";
  std::ofstream(file) << "Json j;\n"
                         "log.emit(\"start\", j);\n"
                         "log_->emit_with_id(id, \"nonfinite\", j);\n"
                         "j[\"what\"] = 1;\n"
                         "Json k{{\"message\", m}};\n"
                         "j[schema::key::what] = 1;  // j[\"what\"] in a comment is fine\n"
                         "options({\"lib.so\"});\n"
                         "constexpr std::string_view kPrefixes[] = {\"nvjet_\", \"sm90_\"};\n";
  const auto found = literal_names(file);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_NE(found[0].find(":2:"), std::string::npos);
  EXPECT_NE(found[3].find(":5:"), std::string::npos);
  std::ofstream(file, std::ios::trunc) << "nlohmann::json v; object(v, f, {\"param\", \"offset\"});\n";  // a parser
  EXPECT_TRUE(literal_names(file).empty());
  fs::remove_all(dir);
}

}  // namespace

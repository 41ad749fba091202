// The JSONL writer: one complete object per line, common fields first, ids increasing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "event_log.hpp"
#include "log_schema.hpp"

using namespace nanscope;

namespace {
std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}
std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + std::to_string(getpid()) + ".jsonl")).string();
}
}  // namespace

TEST(EventLog, WritesOneObjectPerLineWithCommonFields) {
  const std::string path = temp_path("nanscope-eventlog-");
  std::filesystem::remove(path);
  {
    EventLog log({path, false, "info"});
    ASSERT_TRUE(log.has_file());
    EXPECT_EQ(log.emit("start", Json{{"version", "x"}}), 1u);
    EXPECT_EQ(log.emit("nonfinite", Json{{"kernel", "k(float*)"}, {"counts", {{"nan", 3}}}}), 2u);
    log.flush();
  }
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["schema"], "nanscope/1");
  EXPECT_EQ(lines[0]["event"], "start");
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[0]["pid"], getpid());
  EXPECT_GT(lines[0]["ts_ns"].get<uint64_t>(), 1600000000000000000ull);
  EXPECT_EQ(lines[1]["event"], "nonfinite");
  EXPECT_EQ(lines[1]["counts"]["nan"], 3);
  EXPECT_EQ(lines[1]["kernel"], "k(float*)");
  std::filesystem::remove(path);
}

// The one registry of once-only warnings: each kind is said once, wherever it is asked from.
TEST(EventLog, EachOnceOnlyWarningIsFirstOnce) {
  EventLog log({"", false, "info"});
  EXPECT_FALSE(log.said(schema::Once::graph_update));
  EXPECT_TRUE(log.first_time(schema::Once::graph_update));
  EXPECT_FALSE(log.first_time(schema::Once::graph_update));
  EXPECT_TRUE(log.said(schema::Once::graph_update));
  EXPECT_TRUE(log.first_time(schema::Once::dump_write));  // another kind is its own
  EXPECT_STREQ(schema::once_name(schema::Once::graph_update), "graph_update");
  EXPECT_EQ(std::size(schema::kOnceNames), static_cast<size_t>(schema::Once::count));
}

TEST(EventLog, AppendsAndKeepsEarlierData) {
  const std::string path = temp_path("nanscope-append-");
  std::filesystem::remove(path);
  { EventLog(EventLogOptions{path, false, "info"}).emit("start", Json::object()); }
  { EventLog(EventLogOptions{path, false, "info"}).emit("start", Json::object()); }
  EXPECT_EQ(read_lines(path).size(), 2u);
  std::filesystem::remove(path);
}

TEST(EventLog, InvalidUtf8IsReplacedNotDropped) {
  const std::string path = temp_path("nanscope-utf8-");
  std::filesystem::remove(path);
  {
    EventLog log({path, false, "info"});
    log.emit("nonfinite", Json{{"kernel", std::string("bad\xff\xfe name")}});
  }
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0]["kernel"].get<std::string>().find("name"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(EventLog, UnwritablePathIsReportedByName) {
  // A directory cannot be created under a regular file, even by root.
  const std::string file = temp_path("nanscope-notadir-");
  std::ofstream(file) << "x";
  const std::string bad = file + "/x.jsonl";
  std::string error;
  EventLog log({bad, false, "info"}, &error);
  std::filesystem::remove(file);
  EXPECT_FALSE(log.has_file());
  EXPECT_NE(error.find(bad), std::string::npos);
  EXPECT_EQ(log.emit("start", Json::object()), 1u);  // still usable, console only
}

// The rank comes from the configuration (src/rank_env.hpp reads the launchers' variables).
TEST(EventLog, EveryEventCarriesTheRank) {
  const std::string path = temp_path("nanscope-rank-");
  std::filesystem::remove(path);
  {
    EventLogOptions options{path, false, "info"};
    options.rank = 3, options.local_rank = 1, options.world_size = 4;
    EventLog log(options);
    log.emit("start", Json::object());
  }
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["rank"], 3);
  EXPECT_EQ(lines[0]["local_rank"], 1);
  EXPECT_EQ(lines[0]["world_size"], 4);
  // With every optional header field present, the header is exactly the schema's common keys
  // (log_schema.hpp), the list the reader is checked against (tests/report/test_schema.cpp).
  std::set<std::string> written, declared(std::begin(schema::kCommonKeys), std::end(schema::kCommonKeys));
  for (auto it = lines[0].begin(); it != lines[0].end(); ++it) written.insert(it.key());
  EXPECT_EQ(written, declared);
  std::filesystem::remove(path);
}

// A rank's name taken already (a rerun): the fallback name, and the error says so.
TEST(EventLog, TakenRankNameFallsBack) {
  const std::string path = temp_path("nanscope-rank-taken-"), fallback = path + ".pid1";
  std::filesystem::remove(fallback);
  std::ofstream(path) << "an earlier run\n";
  std::string error;
  {
    EventLogOptions options{path, false, "info", "nanscope", /*unique_path=*/true};
    options.fallback_path = fallback;
    EventLog log(options, &error);
    EXPECT_TRUE(log.has_file());
    log.emit("start", Json::object());
  }
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
  EXPECT_NE(error.find(fallback), std::string::npos) << error;
  EXPECT_EQ(read_lines(fallback).size(), 1u);
  std::filesystem::remove(path);
  std::filesystem::remove(fallback);
}

// Issue 19, defect 4: another user planted links for the next pids; a run appended through
// them. The log never follows a link, a %p name is created new (O_EXCL), and no directory is
// created behind the user's back.
TEST(EventLog, NeverWritesThroughALinkOrIntoAPlantedFile) {
  const std::string dir = temp_path("ns-log-links-");
  std::filesystem::create_directories(dir);
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "precious\n";
  std::filesystem::create_symlink(victim, dir + "/run-1.jsonl");
  std::string error;
  { EventLog log({dir + "/run-1.jsonl", false}, &error); log.emit("start", Json::object()); }
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  error.clear();
  std::ofstream(dir + "/run-2.jsonl") << "";  // a file already at this process's unique name
  EventLogOptions unique{dir + "/run-2.jsonl", false};
  unique.unique_path = true;
  { EventLog log(unique, &error); log.emit("start", Json::object()); }
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
  error.clear();
  { EventLog log({dir + "/missing/run.jsonl", false}, &error); }
  EXPECT_NE(error.find("does not exist (nanscope creates no directories)"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir + "/missing"));
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "precious\n");
  unique.path = dir + "/run-3.jsonl";
  error.clear();
  { EventLog log(unique, &error); log.emit("start", Json::object()); }
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(std::filesystem::status(unique.path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::remove_all(dir);
}

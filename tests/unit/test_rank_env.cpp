// Rank detection from the launchers' variables, and NANSCOPE_LOG's per-rank names (%r, %p,
// and a plain name in a multi-process job).
#include <gtest/gtest.h>

#include <map>

#include "config.hpp"
#include "rank_env.hpp"

using namespace nanscope;

namespace {
using Env = std::map<std::string, std::string>;
RankEnvLookup lookup(const Env& env) {
  return [env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}
RankInfo rank_of(const Env& env) { return detect_rank(lookup(env)); }
}  // namespace

TEST(RankEnv, NoVariablesNoRank) {
  const RankInfo r = rank_of({});
  EXPECT_FALSE(r.rank);
  EXPECT_FALSE(r.world_size);
  EXPECT_FALSE(r.multi_process());
  EXPECT_TRUE(r.errors.empty());
}

TEST(RankEnv, EachLauncher) {
  struct Case { Env env; const char* source; long rank, local, world; };
  const Case cases[] = {
      {{{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}, "torchrun", 3, 1, 8},
      {{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "6"}}, "openmpi", 5, 1, 6},
      {{{"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "4"}}, "pmi", 2, 0, 4},
      {{{"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS", "16"}}, "slurm", 7, 3, 16},
  };
  for (const Case& c : cases) {
    const RankInfo r = rank_of(c.env);
    ASSERT_TRUE(r.rank) << c.source;
    EXPECT_STREQ(r.source, c.source);
    EXPECT_EQ(*r.rank, c.rank);
    EXPECT_EQ(*r.local_rank, c.local);
    EXPECT_EQ(*r.world_size, c.world);
    EXPECT_TRUE(r.multi_process());
    EXPECT_TRUE(r.errors.empty());
  }
}

// torchrun inside a Slurm step: SLURM_PROCID is the node's task, RANK the process's rank.
// mpirun inside an allocation: every child inherits the batch step's SLURM_PROCID=0.
TEST(RankEnv, PrecedenceTorchrunThenMpiThenSlurm) {
  RankInfo r = rank_of({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  EXPECT_STREQ(r.source, "torchrun");
  EXPECT_EQ(*r.rank, 5);
  EXPECT_EQ(*r.world_size, 8);
  r = rank_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  EXPECT_STREQ(r.source, "openmpi");
  EXPECT_EQ(*r.rank, 3);
  r = rank_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"SLURM_PROCID", "0"}});
  EXPECT_STREQ(r.source, "pmi");
  EXPECT_EQ(*r.rank, 1);
  EXPECT_FALSE(r.local_rank);  // the family's own variable only, never Slurm's
}

TEST(RankEnv, MalformedValuesAreNamedAndUnknown) {
  RankInfo r = rank_of({{"RANK", "one"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "1"}});
  EXPECT_FALSE(r.rank);  // not taken from Slurm instead
  EXPECT_EQ(*r.world_size, 2);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("RANK='one'"), std::string::npos) << r.errors[0];
  for (const char* bad : {"-1", "", "2x", " 1", "99999999999999999999999"}) {
    r = rank_of({{"RANK", bad}});
    EXPECT_FALSE(r.rank) << bad;
    EXPECT_EQ(r.errors.size(), 1u) << bad;
  }
  r = rank_of({{"RANK", "0"}, {"LOCAL_RANK", "x"}, {"WORLD_SIZE", "0"}});
  EXPECT_EQ(*r.rank, 0);
  EXPECT_FALSE(r.local_rank);
  EXPECT_FALSE(r.world_size);
  EXPECT_EQ(r.errors.size(), 2u);
  r = rank_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_FALSE(r.rank);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("WORLD_SIZE=4"), std::string::npos) << r.errors[0];
}

TEST(LogFileName, PercentRIsTheRank) {
  const RankInfo r = rank_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  LogFileName n = log_file_name("/tmp/run-%r.jsonl", 4242, r);
  EXPECT_EQ(n.path, "/tmp/run-1.jsonl");
  EXPECT_TRUE(n.unique);
  EXPECT_TRUE(n.note.empty());
  EXPECT_EQ(n.fallback, "/tmp/run-1.pid4242.jsonl");  // when a rerun finds run-1.jsonl there
  n = log_file_name("/tmp/run-%r-%p.jsonl", 4242, r);
  EXPECT_EQ(n.path, "/tmp/run-1-4242.jsonl");
  EXPECT_TRUE(n.fallback.empty());  // the pid makes it this process's already
}

TEST(LogFileName, PercentRWithoutARankIsThePid) {
  const LogFileName n = log_file_name("run-%r.jsonl", 4242, rank_of({}));
  EXPECT_EQ(n.path, "run-4242.jsonl");
  EXPECT_TRUE(n.unique);
  EXPECT_NE(n.note.find("%r but no rank is known"), std::string::npos) << n.note;
}

TEST(LogFileName, OneFileInAMultiProcessJobBecomesPerRank) {
  LogFileName n = log_file_name("/tmp/d.x/run.jsonl", 77, rank_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(n.path, "/tmp/d.x/run.rank3.jsonl");
  EXPECT_TRUE(n.unique);
  EXPECT_NE(n.note.find("never share a file"), std::string::npos) << n.note;
  n = log_file_name("/tmp/d.x/run", 77, rank_of({{"WORLD_SIZE", "4"}, {"RANK", "x"}}));
  EXPECT_EQ(n.path, "/tmp/d.x/run.pid77");  // the rank is unknown: the pid keeps the files apart
  // A single process keeps its one file, appended to (a launcher's helpers may share it).
  n = log_file_name("run.jsonl", 77, rank_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  EXPECT_EQ(n.path, "run.jsonl");
  EXPECT_FALSE(n.unique);
  EXPECT_TRUE(n.note.empty());
}

TEST(LogFileName, ConfigCarriesRankAndSaysWhy) {
  const ConfigResult c = parse_config(
      [](const char* name) -> std::optional<std::string> {
        const Env env{{"NANSCOPE_LOG", "out-%r.jsonl"}, {"RANK", "bad"}, {"WORLD_SIZE", "2"}};
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      99);
  EXPECT_EQ(c.config.log_path, "out-99.jsonl");
  EXPECT_TRUE(c.config.log_path_unique);
  EXPECT_FALSE(c.config.rank.rank);
  EXPECT_EQ(*c.config.rank.world_size, 2);
  ASSERT_EQ(c.errors.size(), 2u);  // the malformed RANK, and what %r became
  EXPECT_NE(c.errors[0].find("RANK='bad'"), std::string::npos);
  EXPECT_NE(c.errors[1].find("%r"), std::string::npos);
}

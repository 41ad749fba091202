#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "config.hpp"

using namespace nanscope;

namespace {
ConfigResult parse(std::map<std::string, std::string> env, long pid = 4242) {
  return parse_config(
      [&](const char* name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      pid);
}
}  // namespace

TEST(Config, DefaultsWithEmptyEnvironment) {
  auto r = parse({});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.config.enabled);
  EXPECT_EQ(r.config.mode, Mode::detect);
  EXPECT_TRUE(r.config.log_path.empty());
  EXPECT_EQ(r.config.channel_records, 4096u);
  EXPECT_TRUE(r.config.graph_overlap);
  EXPECT_TRUE(r.config.graph_merge);
  EXPECT_EQ(r.config.graph_pdl, GraphPdl::release);
}

TEST(Config, ReadsEveryVariable) {
  auto r = parse({{"NANSCOPE_ENABLE", "on"},
                  {"NANSCOPE_LOG", "/tmp/run-%p.jsonl"},
                  {"NANSCOPE_CONSOLE", "off"},
                  {"NANSCOPE_LEVEL", "debug"},
                  {"NANSCOPE_KERNEL_FILTER", "softmax|attn"},
                  {"NANSCOPE_KERNEL_EXCLUDE", "^at::"},
                  {"NANSCOPE_MODE", "fix"},
                  {"NANSCOPE_CHANNEL_RECORDS", "1024"},
                  {"NANSCOPE_MAX_CAPTURED_SCANS", "10"},
                  {"NANSCOPE_POLL_US", "200"},
                  {"NANSCOPE_MAX_SCAN_BYTES", "1048576"},
                  {"NANSCOPE_TYPED", "0"},
                  {"NANSCOPE_AGGREGATE", "off"},
                  {"NANSCOPE_GRAPH_MERGE", "0"},
                  {"NANSCOPE_GRAPH_PDL", "both"}},
                 77);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front();
  const Config& c = r.config;
  EXPECT_EQ(c.log_path, "/tmp/run-77.jsonl");
  EXPECT_FALSE(c.console);
  EXPECT_EQ(c.level, "debug");
  EXPECT_EQ(c.kernel_filter, "softmax|attn");
  EXPECT_EQ(c.kernel_exclude, "^at::");
  EXPECT_EQ(c.mode, Mode::fix);
  EXPECT_EQ(c.channel_records, 1024u);
  EXPECT_EQ(c.max_captured_scans, 10u);
  EXPECT_EQ(c.poll_us, 200u);
  EXPECT_EQ(c.max_scan_bytes, 1048576u);
  EXPECT_FALSE(c.typed);
  EXPECT_FALSE(c.aggregate);
  EXPECT_FALSE(c.graph_merge);
  EXPECT_EQ(c.graph_pdl, GraphPdl::both);
  EXPECT_TRUE(c.graph_overlap);
}

TEST(Config, GraphPdlTakesOnlyItsThreeValues) {
  EXPECT_EQ(parse({{"NANSCOPE_GRAPH_PDL", "off"}}).config.graph_pdl, GraphPdl::off);
  auto r = parse({{"NANSCOPE_GRAPH_PDL", "on"}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors.front().find("NANSCOPE_GRAPH_PDL"), std::string::npos);
  EXPECT_EQ(r.config.graph_pdl, GraphPdl::release);
}

TEST(Config, TierIsFullByDefaultAndTakesOnlyItsTwoValues) {
  const Config d = parse({}).config;
  EXPECT_EQ(d.tier, Tier::full);
  EXPECT_EQ(d.escalate, 3u);
  const auto s = parse({{"NANSCOPE_TIER", "sentinel"}, {"NANSCOPE_ESCALATE", "5"}});
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(s.config.tier, Tier::sentinel);
  EXPECT_EQ(s.config.escalate, 5u);
  EXPECT_NE(s.config.describe().find("tier=sentinel escalate=5"), std::string::npos);
  auto bad = parse({{"NANSCOPE_TIER", "sentinels"}});
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors.front().find("NANSCOPE_TIER"), std::string::npos);
  EXPECT_EQ(bad.config.tier, Tier::full);
}

TEST(Config, EscalateIsBounded) {
  for (const char* v : {"0", "1001", "x", "-1"}) {
    auto r = parse({{"NANSCOPE_ESCALATE", v}});
    ASSERT_EQ(r.errors.size(), 1u) << v;
    EXPECT_NE(r.errors.front().find("NANSCOPE_ESCALATE"), std::string::npos) << v;
    EXPECT_EQ(r.config.escalate, 3u) << v;
  }
  EXPECT_EQ(parse({{"NANSCOPE_ESCALATE", "1000"}}).config.escalate, 1000u);
}

TEST(Config, PidExpandsEverywhereInThePath) {
  EXPECT_EQ(parse({{"NANSCOPE_LOG", "%p/x-%p.jsonl"}}, 5).config.log_path, "5/x-5.jsonl");
}

TEST(Config, BadValuesNameTheVariableAndKeepTheDefault) {
  auto r = parse({{"NANSCOPE_MODE", "fx"},
                  {"NANSCOPE_CHANNEL_RECORDS", "lots"},
                  {"NANSCOPE_POLL_US", "5"},
                  {"NANSCOPE_ENABLE", "maybe"},
                  {"NANSCOPE_KERNEL_FILTER", "([unclosed"},
                  {"NANSCOPE_LEVEL", "verbose"}});
  ASSERT_EQ(r.errors.size(), 6u);
  EXPECT_NE(r.errors[0].find("NANSCOPE_ENABLE='maybe'"), std::string::npos);
  EXPECT_NE(r.errors[1].find("NANSCOPE_LEVEL='verbose'"), std::string::npos);
  EXPECT_NE(r.errors[1].find("accepts trace, debug, info, warn, error, off"), std::string::npos);
  EXPECT_NE(r.errors[2].find("NANSCOPE_KERNEL_FILTER"), std::string::npos);
  EXPECT_NE(r.errors[3].find("NANSCOPE_MODE='fx'"), std::string::npos);
  EXPECT_NE(r.errors[3].find("detect, fix, abort"), std::string::npos);
  EXPECT_NE(r.errors[4].find("NANSCOPE_CHANNEL_RECORDS='lots'"), std::string::npos);
  EXPECT_NE(r.errors[5].find("from 10 to 1000000"), std::string::npos);
  EXPECT_EQ(r.config.mode, Mode::detect);
  EXPECT_EQ(r.config.channel_records, 4096u);
  EXPECT_EQ(r.config.poll_us, 500u);
  EXPECT_TRUE(r.config.enabled);
  EXPECT_TRUE(r.config.kernel_filter.empty());
  EXPECT_EQ(r.config.level, "info");
}

TEST(Config, RejectsTrailingGarbageAndNegativeNumbers) {
  auto r = parse({{"NANSCOPE_CHANNEL_RECORDS", "64k"}, {"NANSCOPE_MAX_SCAN_BYTES", "-1"}});
  EXPECT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.config.max_scan_bytes, 0u);
}

// Issue 19, defect 9: an empty value still means the default, but is said (it was silent).
TEST(Config, EmptyValueMeansDefaultAndIsSaid) {
  auto r = parse({{"NANSCOPE_MODE", ""}, {"NANSCOPE_LOG", ""}});
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0], "NANSCOPE_LOG is set but empty; using its default");
  EXPECT_EQ(r.config.mode, Mode::detect);
}

TEST(Config, DumpDirMustBeAWritableDirectory) {
  const std::string file = ::testing::TempDir() + "ns-dump-file-" + std::to_string(::getpid());
  { std::ofstream(file) << "x"; }
  auto r = parse({{"NANSCOPE_DUMP_DIR", file}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("is not a directory"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(r.config.dump_dir.empty());
  r = parse({{"NANSCOPE_DUMP_DIR", file + "/none"}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("does not exist"), std::string::npos) << r.errors[0];
  std::remove(file.c_str());
  r = parse({{"NANSCOPE_DUMP_DIR", ::testing::TempDir()}});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.dump_dir, ::testing::TempDir());
}

// Defect 5: NANSCOPE_KERNEL_FILTER nested 30,000 deep overflowed the application's stack.
TEST(Config, HostileKernelFilterIsRejected) {
  auto r = parse({{"NANSCOPE_KERNEL_FILTER", std::string(30000, '(') + "a" + std::string(30000, ')')},
                  {"NANSCOPE_KERNEL_EXCLUDE", std::string(200, '(') + "a" + std::string(200, ')')}});
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_TRUE(r.config.kernel_filter.empty());
  EXPECT_TRUE(r.config.kernel_exclude.empty());
  EXPECT_NE(r.errors[1].find("nested deeper than 64"), std::string::npos) << r.errors[1];
}

TEST(Config, PercentPMarksTheLogAsThisProcesssOwn) {
  EXPECT_TRUE(parse({{"NANSCOPE_LOG", "run-%p.jsonl"}}).config.log_path_unique);
  EXPECT_FALSE(parse({{"NANSCOPE_LOG", "run.jsonl"}}).config.log_path_unique);
}

TEST(Config, DisableSwitch) {
  EXPECT_FALSE(parse({{"NANSCOPE_ENABLE", "0"}}).config.enabled);
  EXPECT_FALSE(parse({{"NANSCOPE_ENABLE", "OFF"}}).config.enabled);
}

TEST(Config, EagerBatchIsOnByDefaultAndTakesOnOffOrACount) {
  EXPECT_EQ(parse({}).config.eager_batch, 8u);  // on by default since the S9 device runs
  EXPECT_EQ(parse({}).config.eager_batch_us, 1000u);
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH", "on"}}).config.eager_batch, 8u);
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH", "1"}}).config.eager_batch, 8u);
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH", "off"}}).config.eager_batch, 0u);
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH", "4"}}).config.eager_batch, 4u);
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH", "8"}}).config.eager_batch, 8u);
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH_US", "50"}}).config.eager_batch_us, 50u);
  // Abort mode wants the first finding as early as it can come.
  EXPECT_EQ(parse({{"NANSCOPE_EAGER_BATCH", "on"}, {"NANSCOPE_MODE", "abort"}}).config.eager_batch, 0u);
  for (const char* bad : {"9", "maybe", "-2", "4x"}) {
    const auto r = parse({{"NANSCOPE_EAGER_BATCH", bad}});
    EXPECT_EQ(r.config.eager_batch, 8u) << bad;  // a bad value keeps the default, and says so
    ASSERT_EQ(r.errors.size(), 1u) << bad;
    EXPECT_NE(r.errors[0].find("NANSCOPE_EAGER_BATCH"), std::string::npos);
    EXPECT_NE(r.errors[0].find("2 to 8"), std::string::npos) << r.errors[0];
  }
}

TEST(Config, MaxWholeAllocBytesDefaultsToOneGiBAndTakesAByteCount) {
  EXPECT_EQ(parse({}).config.max_whole_alloc_bytes, uint64_t{1} << 30);
  EXPECT_EQ(parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", "4294967296"}}).config.max_whole_alloc_bytes, uint64_t{4} << 30);
  // 0: no driver allocation's end bounds a scan; the largest value: every one may.
  EXPECT_EQ(parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", "0"}}).config.max_whole_alloc_bytes, 0u);
  EXPECT_EQ(parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", "18446744073709551615"}}).config.max_whole_alloc_bytes, UINT64_MAX);
  EXPECT_TRUE(parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", "0"}}).errors.empty());
}

TEST(Config, BadMaxWholeAllocBytesNamesTheVariableAndKeepsTheDefault) {
  for (const char* bad : {"1G", "-1", "lots", "18446744073709551616", " 1024"}) {
    const auto r = parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", bad}});
    EXPECT_EQ(r.config.max_whole_alloc_bytes, uint64_t{1} << 30) << bad;
    ASSERT_EQ(r.errors.size(), 1u) << bad;
    EXPECT_NE(r.errors[0].find(std::string("NANSCOPE_MAX_WHOLE_ALLOC_BYTES='") + bad + "'"), std::string::npos)
        << r.errors[0];
    EXPECT_NE(r.errors[0].find("using 1073741824"), std::string::npos) << r.errors[0];
  }
  const auto empty = parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", ""}});
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_EQ(empty.errors[0], "NANSCOPE_MAX_WHOLE_ALLOC_BYTES is set but empty; using its default");
}

TEST(Config, TheStartupEchoSaysTheWholeAllocationBound) {
  EXPECT_NE(parse({}).config.describe().find("max_whole_alloc_bytes=1073741824"), std::string::npos);
  EXPECT_NE(parse({{"NANSCOPE_MAX_WHOLE_ALLOC_BYTES", "4096"}}).config.describe().find("max_whole_alloc_bytes=4096"),
            std::string::npos);
}

// NANSCOPE_INF: whether every infinity is a fault (docs/origin.md#nan-first-verdicts).
TEST(Config, InfinityPolicy) {
  EXPECT_FALSE(parse({}).config.inf_faults);
  EXPECT_TRUE(parse({{"NANSCOPE_INF", "fault"}}).config.inf_faults);
  EXPECT_FALSE(parse({{"NANSCOPE_INF", "ignore"}}).config.inf_faults);
  const auto bad = parse({{"NANSCOPE_INF", "yes"}});
  EXPECT_FALSE(bad.config.inf_faults);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors[0].find("NANSCOPE_INF"), std::string::npos) << bad.errors[0];
  EXPECT_NE(parse({{"NANSCOPE_INF", "fault"}}).config.describe().find("inf=fault"), std::string::npos);
}

// XLA's dumps (docs/jax.md): NANSCOPE_XLA_DUMP names them, else XLA_FLAGS' --xla_dump_to; `off`
// reads none, the user's own dump directory included (the launcher's --no-xla-dumps).
TEST(Config, XlaDumpsFromTheirVariableOrXlaFlagsOrOff) {
  EXPECT_EQ(parse({{"NANSCOPE_XLA_DUMP", "/tmp/nanscope-xla-1"}}).config.xla_dump, "/tmp/nanscope-xla-1");
  const Config flags = parse({{"XLA_FLAGS", "--xla_gpu_autotune_level=0 --xla_dump_to=/data/d"}}).config;
  EXPECT_EQ(flags.xla_dump, "/data/d");
  EXPECT_FALSE(flags.xla_dumps_off);
  const auto off = parse({{"NANSCOPE_XLA_DUMP", "off"}, {"XLA_FLAGS", "--xla_dump_to=/data/d"}});
  EXPECT_TRUE(off.errors.empty());
  EXPECT_EQ(off.config.xla_dump, "");
  EXPECT_TRUE(off.config.xla_dumps_off);
  EXPECT_FALSE(parse({}).config.xla_dumps_off);
}

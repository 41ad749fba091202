// The cross-rank join (src/report/ranks.hpp): synthetic 4-rank logs of one all_reduce.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "event.hpp"

#include "rank_scenarios.hpp"

namespace {

using namespace synth;
using nlohmann::json;

std::vector<std::string> with(std::vector<std::string> files, std::vector<std::string> args) {
  files.insert(files.end(), args.begin(), args.end());
  return files;
}

json report_json(const std::vector<std::string>& files, Result* raw = nullptr) {
  Result r = run(with(files, {"--format", "json"}));
  if (raw) *raw = r;
  return json::parse(r.out);
}

// The cross_rank findings of the one collective, by rank.
std::map<int, json> by_rank(const json& j) {
  std::map<int, json> out;
  EXPECT_EQ(j["cross_rank"]["collectives"].size(), 1u) << j["cross_rank"].dump(1);
  for (const json& f : j["cross_rank"]["collectives"][0]["findings"]) out[f["rank"].get<int>()] = f;
  return out;
}

TEST(Ranks, NanFromRank1ReachesEveryRankThroughTheAllReduce) {
  TempDir dir;
  write_ranks(dir);
  Result r;
  const json j = report_json(rank_files(dir), &r);
  EXPECT_EQ(r.rc, 1) << r.err;  // layer_norm's real rows on rank 0
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_EQ(j["first_cause"]["rank"], 1);
  EXPECT_EQ(j["first_cause"]["kernel"], "init_weights_1(float*, int)");
  EXPECT_EQ(j["first_cause"]["label"], "introduced");
  // Only rank 1 introduced anything: the receivers' local "introduced" is reinterpreted.
  ASSERT_EQ(j["first_cause_per_process"].size(), 1u);
  EXPECT_EQ(j["first_cause_per_process"][0]["rank"], 1);
  auto f = by_rank(j);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[1]["verdict"], "contributor");
  EXPECT_EQ(f[1]["origin_logged"], "propagated");
  EXPECT_EQ(f[1]["first_cause"][0]["kernel"], "init_weights_1(float*, int)");  // its own K1
  for (int rank : {0, 2, 3}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(f[rank]["verdict"], "propagated");
    EXPECT_EQ(f[rank]["origin"], "propagated");
    EXPECT_EQ(f[rank]["origin_logged"], "introduced");
    ASSERT_EQ(f[rank]["parents"].size(), 1u);
    EXPECT_EQ(f[rank]["parents"][0]["rank"], 1);
    EXPECT_EQ(f[rank]["parents"][0]["event"], f[1]["event"]);
    ASSERT_EQ(f[rank]["first_cause"].size(), 1u);
    EXPECT_EQ(f[rank]["first_cause"][0]["rank"], 1);
    EXPECT_EQ(f[rank]["first_cause"][0]["kernel"], "init_weights_1(float*, int)");
    EXPECT_EQ(f[rank]["first_cause"][0]["origin"], "introduced");
  }
  // Per rank: every rank's first cause is rank 1's K1; ranks 0, 2, 3 through the all_reduce.
  for (const json& rk : j["cross_rank"]["ranks"]) {
    SCOPED_TRACE(rk.dump());
    EXPECT_EQ(rk["first_cause"]["rank"], 1);
    EXPECT_EQ(rk["first_cause"]["kernel"], "init_weights_1(float*, int)");
    EXPECT_EQ(rk["via"].is_null(), rk["rank"] == 1);
    if (!rk["via"].is_null()) EXPECT_EQ(rk["via"]["seq"], 12);
  }
  // Rank 0's later layer_norm descends from its all_reduce finding; its first cause is still K1.
  ASSERT_EQ(j["cross_rank"]["dependents"].size(), 1u);
  const json& dep = j["cross_rank"]["dependents"][0];
  EXPECT_EQ(dep["rank"], 0);
  EXPECT_EQ(dep["kernel"], "void layer_norm<float>(float*, float const*, int)");
  EXPECT_EQ(dep["root_event"], f[0]["event"]);
  EXPECT_EQ(dep["first_cause"][0]["kernel"], "init_weights_1(float*, int)");
  // Lineage: K1 -> rank 1's recv -> ranks 0, 2, 3's recvs; rank 0's recv -> layer_norm.
  std::map<int, json> site;
  for (const json& s : j["lineage"]["sites"]) site[s["site"].get<int>()] = s;
  std::multimap<std::string, std::string> edges;
  for (const json& e : j["lineage"]["edges"]) {
    const json& p = site[e["parent"].get<int>()];
    const json& c = site[e["child"].get<int>()];
    edges.emplace(std::to_string(p["rank"].get<int>()) + ":" + p["kernel"].get<std::string>().substr(0, 10),
                  std::to_string(c["rank"].get<int>()) + ":" + c["kernel"].get<std::string>().substr(0, 10));
    if (c["kernel"] == kNcclKernel && c["rank"] != 1) EXPECT_EQ(c["origin"], "propagated");
  }
  const std::multimap<std::string, std::string> want = {{"1:init_weigh", "1:ncclDevKer"}, {"1:ncclDevKer", "0:ncclDevKer"},
                                                        {"1:ncclDevKer", "2:ncclDevKer"}, {"1:ncclDevKer", "3:ncclDevKer"},
                                                        {"0:ncclDevKer", "0:void layer"}};
  EXPECT_EQ(edges, want);
}

TEST(Ranks, TextShowsTheArrowAcrossRanks) {
  TempDir dir;
  write_ranks(dir);
  Result r = run(with(rank_files(dir), {"--color", "never"}));
  const std::string& o = r.out;
  EXPECT_NE(o.find("across   reached rank 0, rank 2, rank 3 through all_reduce #12 comm 00000000c0ffee01"),
            std::string::npos) << o;
  EXPECT_NE(o.find("CROSS-RANK ORIGIN"), std::string::npos) << o;
  EXPECT_NE(o.find("all_reduce #12 comm 00000000c0ffee01 (4 ranks): propagated across ranks from rank 1"),
            std::string::npos) << o;
  EXPECT_NE(o.find("rank 1: init_weights_1(float*, int) (introduced, event 2)"), std::string::npos) << o;
  EXPECT_NE(o.find("→ rank 0: ncclDevKernel_AllReduce_Sum_f32_RING_LL(…) (propagated across ranks; logged introduced"),
            std::string::npos) << o;
  EXPECT_NE(o.find("via all_reduce #12 comm 00000000c0ffee01"), std::string::npos) << o;  // the lineage tree
  EXPECT_NE(o.find("rank 1: init_weights_1(float*, int) (introduced, event 2) through all_reduce #12"), std::string::npos) << o;
}

TEST(Ranks, TwoContributors) {
  TempDir dir;
  write_ranks(dir, {.contributors = {1, 2}});
  const json j = report_json(rank_files(dir));
  auto f = by_rank(j);
  EXPECT_EQ(f[1]["verdict"], "contributor");
  EXPECT_EQ(f[2]["verdict"], "contributor");
  for (int rank : {0, 3}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(f[rank]["verdict"], "propagated");
    ASSERT_EQ(f[rank]["parents"].size(), 2u);
    ASSERT_EQ(f[rank]["first_cause"].size(), 2u);  // earliest first
    EXPECT_EQ(f[rank]["first_cause"][0]["kernel"], "init_weights_1(float*, int)");
    EXPECT_EQ(f[rank]["first_cause"][1]["kernel"], "init_weights_2(float*, int)");
  }
  EXPECT_EQ(j["first_cause"]["kernel"], "init_weights_1(float*, int)");
  EXPECT_EQ(j["cross_rank"]["collectives"][0]["summary"], "propagated across ranks from rank 1, rank 2");
}

TEST(Ranks, NoContributorMeansTheCollectiveIntroducedIt) {
  TempDir dir;
  write_ranks(dir, {.contributors = {}});
  Result r;
  const json j = report_json(rank_files(dir), &r);
  for (auto& [rank, f] : by_rank(j)) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(f["verdict"], "introduced_by_collective");
    EXPECT_EQ(f["origin"], "introduced");
    EXPECT_TRUE(f["parents"].empty());
    EXPECT_EQ(f["first_cause"][0]["rank"], rank);  // the collective on that rank
  }
  EXPECT_EQ(j["first_cause"]["kernel"], kNcclKernel);
  EXPECT_EQ(j["first_cause"]["rank"], 0);  // the earliest of them
  EXPECT_EQ(j["cross_rank"]["dependents"][0]["first_cause"][0]["kernel"], kNcclKernel);
  Result t = run(with(rank_files(dir), {"--color", "never"}));
  EXPECT_NE(t.out.find("introduced by the collective: no rank's data was non-finite going in"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("across   introduced by all_reduce #12 comm 00000000c0ffee01"), std::string::npos) << t.out;
}

TEST(Ranks, AMissingRankLogLeavesTheOriginUnknown) {
  TempDir dir;
  write_ranks(dir, {.omit = {1}});
  Result r;
  const json j = report_json(rank_files(dir, {1}), &r);
  auto f = by_rank(j);
  ASSERT_EQ(f.size(), 3u);
  for (auto& [rank, x] : f) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(x["verdict"], "unknown");
    EXPECT_EQ(x["origin"], "unknown");
    EXPECT_EQ(x["unaccounted_peers"], json::array({1}));
  }
  EXPECT_EQ(j["first_cause"]["label"], "earliest finding (no finding is marked introduced)");
  Result t = run(with(rank_files(dir, {1}), {"--color", "never"}));
  EXPECT_NE(t.out.find("no event at this call from comm rank 1 (its log missing, or it logged nothing there)"),
            std::string::npos) << t.out;
  EXPECT_EQ(t.rc, 1);  // the gate still sees layer_norm's real rows
}

TEST(Ranks, UnknownSendStateIsStated) {
  TempDir dir;
  write_ranks(dir, {.receiver_send_state = "unknown"});
  const json j = report_json(rank_files(dir));
  auto f = by_rank(j);
  EXPECT_EQ(f[0]["verdict"], "propagated");
  EXPECT_EQ(f[0]["send_state"], "unknown");
  Result t = run(with(rank_files(dir), {"--color", "never"}));
  EXPECT_NE(t.out.find("logged introduced, event 2, sendbuff unknown)"), std::string::npos) << t.out;
}

TEST(Ranks, TwoLogsClaimingOneRankAreAnError) {
  TempDir dir;
  write_ranks(dir);
  std::filesystem::copy_file(dir / "rank2.jsonl", dir / "again.jsonl");
  auto files = rank_files(dir);
  files.push_back(dir / "again.jsonl");
  Result r = run(with(files, {"--format", "json"}));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("rank 2 is claimed by two logs: " + dir / "rank2.jsonl" + " and " + dir / "again.jsonl"),
            std::string::npos) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["cross_rank"]["joined"], false);
  EXPECT_EQ(j["cross_rank"]["refused"], "two logs claim the same rank");
}

TEST(Ranks, ARanklessLogAmongRankedOnesIsNamed) {
  TempDir dir;
  write_ranks(dir);
  Log single(77);
  single.start(0);
  single.nonfinite(10, "k(float*)", 1, {{"region", "real"}, {"origin", "introduced"}});
  single.write(dir / "single.jsonl");
  auto files = rank_files(dir);
  files.push_back(dir / "single.jsonl");
  Result r = run(files);
  EXPECT_NE(r.err.find(dir / "single.jsonl" + ": its events carry no rank, unlike the other logs"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.rc, 1);
  // Alone, a rank-less log says nothing of ranks.
  Result alone = run({dir / "single.jsonl", "--format", "json"});
  EXPECT_TRUE(alone.err.empty()) << alone.err;
  EXPECT_FALSE(json::parse(alone.out).contains("cross_rank"));
}

TEST(Ranks, GateWorksAcrossRanks) {
  TempDir dir;
  write_ranks(dir, {.later_kernel_on_rank0 = false});
  EXPECT_EQ(run(rank_files(dir)).rc, 1);  // only unknown-region findings: not proven to be padding
  EXPECT_EQ(run(with(rank_files(dir), {"--fail-on", "any"})).rc, 1);
  EXPECT_EQ(run(with(rank_files(dir), {"--fail-on", "never"})).rc, 0);
  write_ranks(dir);
  EXPECT_EQ(run(rank_files(dir)).rc, 1);
  EXPECT_EQ(run(with(rank_files(dir), {"--fail-on", "never"})).rc, 0);
}

TEST(Ranks, TraceDrawsTheArrowBetweenRankTracks) {
  TempDir dir;
  write_ranks(dir);
  Result r = run(with(rank_files(dir), {"--trace", dir / "t.json"}));
  ASSERT_NE(r.rc, 2) << r.err;
  const json t = json::parse(slurp(dir / "t.json"));
  std::map<std::int64_t, std::string> names;
  std::map<std::int64_t, json> starts, finishes;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
    if (e.value("cat", "") != "cross_rank") continue;
    (e["ph"] == "s" ? starts : finishes)[e["id"]] = e;
  }
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(finishes.size(), 3u);
  std::set<std::string> to;
  for (auto& [id, s] : starts) {
    EXPECT_EQ(names[s["pid"]].rfind("rank 1 ", 0), 0u) << names[s["pid"]];
    const json& f = finishes[id];
    EXPECT_NE(f["pid"], s["pid"]);
    EXPECT_EQ(f["args"]["op"], "all_reduce");
    EXPECT_EQ(f["args"]["seq"], 12);
    EXPECT_EQ(f["args"]["comm"], kComm);
    to.insert(names[f["pid"]].substr(0, 6));
  }
  EXPECT_EQ(to, (std::set<std::string>{"rank 0", "rank 2", "rank 3"}));
}

TEST(Ranks, HtmlListsRanksAndTheChain) {
  TempDir dir;
  write_ranks(dir);
  Result r = run(with(rank_files(dir), {"--html", dir / "p.html"}));
  ASSERT_NE(r.rc, 2) << r.err;
  const std::string page = slurp(dir / "p.html");
  EXPECT_NE(page.find("<section id=\"cross-rank\">"), std::string::npos);
  EXPECT_NE(page.find("<table id=\"ranks\">"), std::string::npos);
  EXPECT_NE(page.find("propagated across ranks from rank 1"), std::string::npos);
  EXPECT_NE(page.find("rank 1: init_weights_1(float*, int) (introduced, event 2)"), std::string::npos);
  EXPECT_NE(page.find("<span class=\"cross-rank\">via all_reduce #12 comm 00000000c0ffee01</span>"), std::string::npos);
}

// A collective's later call on a rank that received the NaN: that rank now contributes, and its
// contribution's first cause is rank 1's K1, followed through the first call.
TEST(Ranks, ChainedCollectivesFollowTheFirstCall) {
  TempDir dir;
  Log r0(3000, 0), r1(3001, 1);
  r0.start(0), r1.start(0);
  const std::int64_t k = r1.nonfinite(10, "K1(float*)", 1, {{"origin", "introduced"}});
  const std::int64_t s1 = r1.nonfinite(20, kNcclKernel, 1,
                                       {{"origin", "propagated"}, {"parents", {k}}, {"root", {k}},
                                        {"collective", collective(1, "nonfinite", 1, 2)}});
  const std::int64_t a0 = r0.nonfinite(21, kNcclKernel, 1, {{"origin", "introduced"}, {"collective", collective(0, "finite", 1, 2)}});
  const std::int64_t b0 = r0.nonfinite(30, "K2(float*)", 1, {{"origin", "propagated"}, {"parents", {a0}}, {"root", {a0}},
                                                             {"buffer", {{"arg", 0}, {"ptr", "0x1000"}}}});
  r0.nonfinite(40, kNcclKernel, 1, {{"origin", "propagated"}, {"parents", {b0}}, {"root", {a0}},
                                    {"buffer", {{"arg", 1}, {"ptr", "0x2000"}}},
                                    {"collective", collective(0, "nonfinite", 2, 2)}});
  r1.nonfinite(41, kNcclKernel, 1, {{"origin", "propagated"}, {"parents", {s1}}, {"root", {k}},
                                    {"buffer", {{"arg", 1}, {"ptr", "0x3000"}}},
                                    {"collective", collective(1, "unknown", 2, 2)}});
  r0.write(dir / "a.jsonl"), r1.write(dir / "b.jsonl");
  const json j = report_json({dir / "a.jsonl", dir / "b.jsonl"});
  ASSERT_EQ(j["cross_rank"]["collectives"].size(), 2u);
  const json& second = j["cross_rank"]["collectives"][1];
  EXPECT_EQ(second["seq"], 2);
  for (const json& f : second["findings"]) {
    SCOPED_TRACE(f.dump());
    EXPECT_EQ(f["first_cause"][0]["kernel"], "K1(float*)");
    EXPECT_EQ(f["first_cause"][0]["rank"], 1);
  }
}

// ncclSend of a non-finite buffer from rank 1, ncclRecv on rank 0: the send-only side is the
// contributor (role send), the receiver's peers name it.
TEST(Ranks, SendToRecvCrossesRanks) {
  TempDir dir;
  Log r0(4000, 0), r1(4001, 1);
  r0.start(0), r1.start(0);
  const std::int64_t k = r1.nonfinite(10, "K1(float*)", 1, {{"origin", "introduced"}});
  json send = collective(1, "nonfinite", 5, 2, "send", "send");
  send["peers"] = json::array({0});  // a send names its receiver (the library: collective_peers)
  r1.nonfinite(20, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 1,
               {{"origin", "propagated"}, {"parents", {k}}, {"root", {k}}, {"collective", send},
                {"buffer", {{"arg", 1}, {"ptr", "0x9000"}}}});
  json recv = collective(0, "unknown", 5, 2, "recv", "recv");
  recv["peers"] = json::array({1});
  r0.nonfinite(21, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 1,
               {{"origin", "introduced"}, {"collective", recv}});
  r0.write(dir / "a.jsonl"), r1.write(dir / "b.jsonl");
  const json j = report_json({dir / "a.jsonl", dir / "b.jsonl"});
  auto f = by_rank(j);
  EXPECT_EQ(f[1]["verdict"], "contributor");
  EXPECT_EQ(f[1]["role"], "send");
  EXPECT_EQ(f[0]["verdict"], "propagated");
  EXPECT_EQ(f[0]["first_cause"][0]["kernel"], "K1(float*)");
  EXPECT_EQ(j["first_cause"]["kernel"], "K1(float*)");
}

// Sends and receives are numbered per peer and direction: rank 1's non-finite send #5 to rank 2
// is not the message rank 0 received as its recv #5 from rank 1.
TEST(Ranks, SendToAnotherRankIsNotThisRecv) {
  TempDir dir;
  Log r0(4000, 0), r1(4001, 1);
  r0.start(0), r1.start(0);
  const std::int64_t k = r1.nonfinite(10, "K1(float*)", 1, {{"origin", "introduced"}});
  json send = collective(1, "nonfinite", 5, 3, "send", "send");
  send["peers"] = json::array({2});
  r1.nonfinite(20, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 1,
               {{"origin", "propagated"}, {"parents", {k}}, {"root", {k}}, {"collective", send},
                {"buffer", {{"arg", 1}, {"ptr", "0x9000"}}}});
  json recv = collective(0, "unknown", 5, 3, "recv", "recv");
  recv["peers"] = json::array({1});
  r0.nonfinite(21, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 1,
               {{"origin", "introduced"}, {"collective", recv}});
  r0.write(dir / "a.jsonl"), r1.write(dir / "b.jsonl");
  const json j = report_json({dir / "a.jsonl", dir / "b.jsonl"});
  json r0_recv;
  for (const json& c : j["cross_rank"]["collectives"])
    for (const json& f : c["findings"])
      if (f["rank"] == 0) r0_recv = f;
  ASSERT_FALSE(r0_recv.is_null());
  EXPECT_NE(r0_recv["verdict"], "propagated") << r0_recv.dump();
  EXPECT_TRUE(r0_recv["parents"].empty()) << r0_recv.dump();
}

TEST(Ranks, HostileCollectivesAreBadLinesNamedByFileAndLine) {
  TempDir dir;
  Log log(5, 0);
  log.start(0);
  auto line = [&](json c) { log.nonfinite(10, kNcclKernel, 1, {{"collective", std::move(c)}}); };
  json c = collective(0, "finite");
  line("all_reduce");                                         // 2: not an object
  json bad = c;
  bad.erase("comm");
  line(bad);                                                  // 3: missing comm
  bad = c, bad["comm"] = "zzzzzzzzzzzzzzzz";
  line(bad);                                                  // 4: not hex
  bad = c, bad["comm"] = "c0ffee";
  line(bad);                                                  // 5: too short
  bad = c, bad["rank"] = 4;
  line(bad);                                                  // 6: rank >= nranks
  bad = c, bad["send_state"] = "maybe";
  line(bad);                                                  // 7
  bad = c, bad["seq"] = -1;
  line(bad);                                                  // 8
  bad = c;
  bad["peers"] = json::array();
  for (int i = 0; i < 1000000; ++i) bad["peers"].push_back(i % 4);
  line(bad);                                                  // 9: a million peers, 4 ranks
  bad = c, bad["nranks"] = 1u << 21;
  line(bad);                                                  // 10: more ranks than any job
  log.raw(R"({"schema":"nanscope/1","event":"nonfinite","id":90,"ts_ns":1764513600000000000,"pid":5,"rank":0,)"
          R"("kernel":"k","counts":{"nan":1,"pos_inf":0,"neg_inf":0},"collective":{"op":"all_reduce",)"
          R"("comm":"00000000c0ffee01","seq":18446744073709551616,"rank":0,"nranks":4,"send_state":"finite","role":"recv"}})");
  bad = c, bad["seq"] = UINT64_MAX;
  line(bad);                                                  // 12: the largest seq is fine
  bad = c, bad["peers"] = json::array({0, 1, 1});
  line(bad);                                                  // 13: a rank twice
  log.write(dir / "h.jsonl");
  Result r = run({dir / "h.jsonl", "--format", "json"});
  const std::string p = dir / "h.jsonl";
  for (const char* want : {":2: field 'collective': expected an object",
                           ":3: field 'collective.comm': missing",
                           ":4: field 'collective.comm': expected a string of 16 hex digits",
                           ":5: field 'collective.comm': expected a string of 16 hex digits",
                           ":6: field 'collective.rank': expected an integer in 0..3",
                           ":7: field 'collective.send_state': expected one of finite, nonfinite, unknown",
                           ":8: field 'collective.seq': expected an integer in 0..18446744073709551615",
                           ":9: field 'collective.peers': expected at most nranks (4) ranks, got 1000000",
                           ":10: field 'collective.nranks': expected an integer in 0..1048576",
                           ":11: field 'collective.seq': expected an integer in 0..18446744073709551615",
                           ":13: field 'collective.peers': expected distinct ranks"})
    EXPECT_NE(r.err.find(p + want), std::string::npos) << want << "\n" << r.err.substr(0, 2000);
  const json j = json::parse(r.out);
  EXPECT_EQ(j["totals"]["bad_lines"], 11);
  ASSERT_EQ(j["cross_rank"]["collectives"].size(), 1u);
  EXPECT_EQ(j["cross_rank"]["collectives"][0]["seq"], UINT64_MAX);
  EXPECT_EQ(j["cross_rank"]["collectives"][0]["findings"].size(), 1u);
}

}  // namespace

namespace {

// Mutated collective lines: the parser never crashes, and what it accepts is in range.
TEST(Ranks, MutatedCollectivesAreRejectedOrInRange) {
  using namespace nanscope::report;
  std::vector<std::string> seeds;
  for (const char* name : {"seed5", "seed6"})
    seeds.push_back(synth::slurp(std::string(NANSCOPE_REPORT_TEST_DATA) + "/../../fuzz/corpus/log_line/" + name));
  ASSERT_FALSE(seeds[0].empty());
  std::mt19937_64 rng(21);
  const std::string alphabet = "0123456789abcdefxz-\",[]{}: e.";
  Event ev;
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    const std::size_t at = s.find("\"collective\"") + rng() % 160;
    for (int m = 0, n = 1 + int(rng() % 3); m < n && at < s.size(); ++m) {
      if (rng() % 2) s[at] = alphabet[rng() % alphabet.size()];
      else s.insert(at, 1, alphabet[rng() % alphabet.size()]);
    }
    if (parse_line(s, ev) || !ev.collective.present) continue;
    ++accepted;
    const Collective& c = ev.collective;
    ASSERT_GT(c.nranks, 0u) << s;
    ASSERT_LE(c.nranks, kMaxCommRanks) << s;
    ASSERT_LT(c.rank, c.nranks) << s;
    for (std::uint32_t p : c.peers) ASSERT_LT(p, c.nranks) << s;
    ASSERT_TRUE(std::is_sorted(c.peers.begin(), c.peers.end())) << s;
    ASSERT_EQ(comm_hex(c.comm).size(), 16u);
  }
  EXPECT_GT(accepted, 100);
}

}  // namespace

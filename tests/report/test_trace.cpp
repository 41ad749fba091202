// --trace: valid Chrome trace-event JSON with per-process / per-stream tracks and flows.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scenarios.hpp"

namespace {

using namespace synth;

TEST(Trace, StructureAndFlows) {
  TempDir dir;
  write_training(dir);
  Result r = run({dir.path.string(), "--trace", dir / "out.json", "--format", "json"});
  ASSERT_EQ(r.rc, 1) << r.err;
  nlohmann::json t = nlohmann::json::parse(slurp(dir / "out.json"));  // throws if not JSON
  ASSERT_TRUE(t["traceEvents"].is_array());
  EXPECT_EQ(t["displayTimeUnit"], "ns");

  std::map<std::int64_t, std::string> process_names;
  std::set<std::pair<std::int64_t, std::int64_t>> named_threads;
  struct Slice {
    double ts, dur;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Slice>> slices;
  std::map<std::int64_t, nlohmann::json> starts, finishes;
  int instants = 0;
  for (auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid")) << e;
    std::string ph = e["ph"];
    auto track = std::make_pair(e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>());
    if (ph == "M") {
      if (e["name"] == "process_name") process_names[track.first] = e["args"]["name"];
      if (e["name"] == "thread_name") named_threads.insert(track);
    } else if (ph == "X") {
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e;
      EXPECT_GT(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e["args"].contains("kernel"));
      EXPECT_TRUE(named_threads.count(track)) << "slice on an unnamed track " << e;
      slices[track].push_back({e["ts"], e["dur"]});
    } else if (ph == "i") {
      ++instants;
      EXPECT_EQ(e["cat"], "repeat");
    } else if (ph == "s") {
      starts[e["id"]] = e;
    } else if (ph == "f") {
      EXPECT_EQ(e["bp"], "e");
      finishes[e["id"]] = e;
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  // One process per rank, named with its rank and pid; real pids are kept.
  ASSERT_EQ(process_names.size(), 3u);
  EXPECT_EQ(process_names[1000], "rank 0 pid 1000 train.py");
  // Rank 0 uses two streams: two tracks.
  EXPECT_TRUE(slices.count({1000, 1}) && slices.count({1000, 2}));
  std::size_t n = 0;
  for (auto& [k, v] : slices) n += v.size();
  EXPECT_EQ(n, 5u);  // every nonfinite event (the truncated line is not one)
  EXPECT_EQ(instants, 3);
  // Two lineage links (layer_norm -> gemm -> softmax); each flow starts and ends inside a slice.
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(finishes.size(), 2u);
  auto inside = [&](const nlohmann::json& ev) {
    auto track = std::make_pair(ev["pid"].get<std::int64_t>(), ev["tid"].get<std::int64_t>());
    double ts = ev["ts"];
    for (auto& s : slices[track])
      if (ts >= s.ts && ts <= s.ts + s.dur) return true;
    return false;
  };
  for (auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id));
    EXPECT_TRUE(inside(s)) << s;
    EXPECT_TRUE(inside(finishes[id])) << finishes[id];
    EXPECT_LE(s["ts"].get<double>(), finishes[id]["ts"].get<double>());
  }
  // Slices on one track never overlap (Perfetto needs proper nesting).
  for (auto& [k, v] : slices) {
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
    for (std::size_t i = 1; i < v.size(); ++i) EXPECT_LE(v[i - 1].ts + v[i - 1].dur, v[i].ts);
  }
}

}  // namespace

// Tests for src/candidate.cpp and the candidate origin end to end on synthetic launch sequences:
// opaque launches noted against buffers (OpaqueWriters), a reader's initial scan or a captured
// reader whose input no scan judged (its candidates filed in LaunchFactsStore), the drained
// finding (attach_candidates), the lineage's classification and the `nonfinite` event's fields.
#include <gtest/gtest.h>

#include "buffer_slots.hpp"
#include "candidate.hpp"
#include "finding_event.hpp"
#include "launch_facts.hpp"
#include "lineage.hpp"
#include "log_schema.hpp"
#include "opaque_writers.hpp"

namespace nanscope {
namespace {

using lineage::Origin;

constexpr uint64_t kOut = 0x7f0000100000, kX = 0x7f0000200000;

OpaqueWrite kernel(uint32_t id, uint64_t launch, uint64_t stream = 0) { return {id, launch, false, stream, 0}; }

TEST(CandidateList, KeepsTheLastFewDistinctWritersOldestFirst) {
  CandidateList c;
  EXPECT_TRUE(c.empty());
  EXPECT_FALSE(c.last().has_value());
  c.add(kernel(1, 10));
  c.add(kernel(2, 11));
  c.add(kernel(1, 10));  // the same launch again (a view of the same buffer): one candidate, now the newest
  ASSERT_EQ(c.n, 2u);
  EXPECT_EQ(c.w[0].launch_id, 11u);
  EXPECT_EQ(c.last()->launch_id, 10u);
  for (uint64_t l = 12; l < 16; ++l) c.add(kernel(3, l));
  EXPECT_EQ(c.n, CandidateList::kMax);
  EXPECT_EQ(c.dropped, 2u);
  EXPECT_EQ(c.w[0].launch_id, 12u);
  EXPECT_EQ(c.last()->launch_id, 15u);
}

TEST(CandidateList, HostWritesAreNoCandidates) {
  CandidateList c;
  c.add(kernel(1, 10));
  c.add({7, 0, true, 0, 0});  // a memset
  const CandidateList k = c.kernels();
  ASSERT_EQ(k.n, 1u);
  EXPECT_EQ(k.w[0].kernel_id, 1u);
  EXPECT_TRUE(c.last()->host);
}

// What a scan files for its findings (src/launch_facts.hpp), and what its finding's record finds.
uint32_t file(LaunchFactsStore& store, uint64_t launch, const CandidateList& c, bool captured = false) {
  return store.file({launch, 0, c, std::nullopt}, captured);
}
std::optional<CandidateList> filed(const LaunchFactsStore& store, uint32_t slot, uint64_t launch) {
  const auto facts = store.find(slot, launch);
  return facts ? facts->candidates : std::nullopt;
}

// The drained finding of a scan, as the device reports it (src/finding_event.cpp: device_finding).
lineage::DeviceFinding finding(uint64_t seq, uint64_t launch, uint32_t kernel_id, uint64_t ptr) {
  lineage::DeviceFinding d;
  d.seq = seq;
  d.event_id = seq;
  d.buffer = {ptr};
  d.site = {launch, kernel_id, 0, false, 0, 0, 0};
  return d;
}

// An extension kernel (id 5, launch 40) hides its output pointer in a params struct: nanscope
// notes it as a possible writer of the output and of its input. The next decoded reader (a
// predicate writing bool: no scan of its own) reads the output: its initial scan is named after
// the extension launch, whose candidates it files. The scan finds NaN.
TEST(CandidateOrigin, AnInitialScanAfterAnOpaqueWriterNamesItAsTheCandidate) {
  OpaqueWriters writers;
  LaunchFactsStore store;
  writers.note(kX, kernel(5, 40, 0x10));
  writers.note(kOut, kernel(5, 40, 0x10));
  // The reader's initial scan: named after the last writer, its writers are the candidates.
  const auto history = writers.history(kOut);
  ASSERT_TRUE(history.has_value());
  const auto named = history->last();
  ASSERT_TRUE(named && !named->host);
  const uint32_t slot = file(store, named->launch_id, history->kernels());
  writers.forget(kOut);  // judged by that scan

  lineage::DeviceFinding d = finding(1, named->launch_id, named->kernel_id, kOut);
  d.reads_untracked = true;  // the initial scan of an opaque write
  const auto found = attach_candidates(filed(store, slot, 40), d);
  ASSERT_TRUE(found.has_value());
  lineage::Tracker tracker;
  const lineage::Verdict v = tracker.on_device_finding(d);
  EXPECT_EQ(v.origin, Origin::candidate);
  EXPECT_EQ(v.why, lineage::Unknown::none);
  EXPECT_EQ(v.candidates, std::vector<uint32_t>{5});
  EXPECT_EQ(v.roots, std::vector<uint64_t>{1});
  const lineage::Summary s = tracker.summary();
  EXPECT_EQ(s.candidate, 1u);
  EXPECT_EQ(s.unknown, 0u);
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].origin, Origin::candidate);
  EXPECT_EQ(s.roots[0].candidates, std::vector<uint32_t>{5});

  // Its child (a reader of the NaN) is propagated from it, never a candidate itself.
  lineage::DeviceFinding child = finding(2, 41, 6, 0x7f0000300000);
  child.parent_seqs = {1};
  child.parent_count = 1;
  const uint32_t child_slot = file(store, 41, history->kernels());  // even with candidates on file
  attach_candidates(filed(store, child_slot, 41), child);
  const lineage::Verdict vc = tracker.on_device_finding(child);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.parents, std::vector<uint64_t>{1});
}

// Inside a capture there are no initial scans: two opaque launches reference buffer B, then a
// decoded reader (launch 52) reads B, whose state is unknown on every replay. Each replay's
// finding names both opaque launches, not the reader.
TEST(CandidateOrigin, ACapturedReaderOfAnUnjudgedInputNamesItsOpaqueWriters) {
  OpaqueWriters writers;
  LaunchFactsStore store;
  writers.note(kX, kernel(7, 50));
  writers.note(kX, kernel(8, 51));
  CandidateList plan;  // TaskBuilder::add_origin: an unjudged input no initial scan covers
  plan.merge(writers.history(kX)->kernels());
  const uint32_t slot = file(store, 52, plan, /*captured=*/true);
  for (int i = 0; i < 200; ++i) file(store, 1000 + i, plan);  // eager traffic meanwhile

  lineage::Tracker tracker;
  for (uint32_t replay = 0; replay < 3; ++replay) {
    lineage::DeviceFinding d = finding(10 + replay, 52, 9, kOut);
    d.input_unknown = true;
    d.site.captured = true;
    d.site.replay = replay;
    attach_candidates(filed(store, slot, 52), d);
    const lineage::Verdict v = tracker.on_device_finding(d);
    EXPECT_EQ(v.origin, Origin::candidate) << "replay " << replay;
    EXPECT_EQ(v.candidates, (std::vector<uint32_t>{7, 8}));
  }
}

// A buffer judged clean since the opaque launch, or last written by the host, has no candidates.
TEST(CandidateOrigin, NoCandidatesAfterAScanJudgedTheBufferOrAHostWrite) {
  OpaqueWriters writers;
  LaunchFactsStore store;
  writers.note(kOut, kernel(5, 40));
  writers.forget(kOut);  // a scan judged it
  EXPECT_FALSE(writers.history(kOut).has_value());
  lineage::DeviceFinding d = finding(1, 60, 9, kOut);
  EXPECT_FALSE(attach_candidates(filed(store, 0, 60), d).has_value());  // launch 60 filed none
  lineage::Tracker tracker;
  EXPECT_EQ(tracker.on_device_finding(d).origin, Origin::introduced);

  writers.note(kX, kernel(5, 41));
  writers.note(kX, {3, 0, true, 0, 0});  // then a memset: the host's write is the last
  const auto history = writers.history(kX);
  EXPECT_TRUE(history->last()->host);     // the initial scan is host origin, it files no candidates
  lineage::DeviceFinding h = finding(2, 0, 3, kX);
  h.host = true;
  const uint32_t slot = file(store, 0, history->kernels());
  EXPECT_FALSE(attach_candidates(filed(store, slot, 0), h).has_value());
  EXPECT_EQ(tracker.on_device_finding(h).origin, Origin::host);
}

TEST(CandidateOrigin, TheEventListsTheCandidatesWithTheirPythonLines) {
  Finding f;
  f.launch_id = 40;
  f.ptr = kOut;
  f.elements = 16;
  f.nan = 4;
  f.dtype = DType::f32;
  f.origin_tracked = true;
  FindingFacts facts{f, 0, "scale_rows_params(ScaleRowsParams)"};
  facts.python = PythonLine{"/app/run.py", 12, "main"};
  facts.candidates.push_back({"scale_rows_params(ScaleRowsParams)", 40, 0x10, PythonLine{"/app/run.py", 12, "main"}});
  lineage::Verdict v;
  v.event_id = 1;
  v.origin = Origin::candidate;
  v.roots = {1};
  const Json j = finding_event(facts, v);
  EXPECT_EQ(j[schema::key::origin], "candidate");
  EXPECT_FALSE(j.contains(schema::key::origin_why));
  ASSERT_EQ(j[schema::key::candidates].size(), 1u);
  const Json& c = j[schema::key::candidates][0];
  EXPECT_EQ(c[schema::key::kernel], "scale_rows_params(ScaleRowsParams)");
  EXPECT_EQ(c[schema::key::launch_id], 40);
  EXPECT_EQ(c[schema::key::stream], "0x10");
  EXPECT_EQ(c[schema::key::python][schema::python_key::line], 12);
  EXPECT_EQ(j[schema::key::python][schema::python_key::file], "/app/run.py");
  EXPECT_EQ(j[schema::key::python][schema::python_key::function], "main");
  EXPECT_FALSE(j[schema::key::python].contains(schema::python_key::generated));
  EXPECT_FALSE(j[schema::key::python].contains(schema::python_key::op));

  // torch.compile: the model's line mapped from Inductor's output code keeps the generated line.
  facts.python->generated_file = "/tmp/torchinductor_u/ab/cab.py";
  facts.python->generated_line = 112;
  const Json g = finding_event(facts, v)[schema::key::python][schema::python_key::generated];
  EXPECT_EQ(g[schema::python_key::file], "/tmp/torchinductor_u/ab/cab.py");
  EXPECT_EQ(g[schema::python_key::line], 112);
  // An XLA kernel's line carries the op its HLO metadata names.
  facts.python->op = "jit(step)/log";
  EXPECT_EQ(finding_event(facts, v)[schema::key::python][schema::python_key::op], "jit(step)/log");

  v.origin = Origin::introduced;  // candidates only with the candidate origin
  facts.python.reset();
  const Json k = finding_event(facts, v);
  EXPECT_FALSE(k.contains(schema::key::candidates));
  EXPECT_TRUE(k[schema::key::python].is_null());
}

// The host side of a candidate given NaN, as the engine runs it: a softmax's scan (launch 60)
// judges kX and finds NaN there; a CuPy kernel (id 9, launch 61) then reads kX and writes kOut.
// Before its launch makes them unknown, its words are looked up in the slots: kX as judged by
// launch 60. The initial scan of kOut, named after it, drains a finding that the tracker makes
// propagated from the softmax's, through the candidate.
TEST(CandidateOrigin, ACandidateWhoseWordsHitAJudgedNaNBufferPropagatesIt) {
  BufferSlots slots(8);
  slots.ref_for_output(kX, DType::f32, 4096, 60);
  OpaqueWrite cupy = kernel(9, 61);
  for (uint64_t w : {kX + 256, kOut})
    if (const auto judged = slots.containing(w); judged && judged->state_known) cupy.add_input({judged->judged_by, judged->ptr});
  ASSERT_EQ(cupy.input_count, 1u);
  EXPECT_EQ(cupy.inputs[0], (lineage::JudgedWrite{60, kX}));
  OpaqueWriters writers;
  writers.note(kOut, cupy);
  LaunchFactsStore store;
  const uint32_t slot = file(store, 61, writers.history(kOut)->kernels());

  lineage::Tracker tracker;
  tracker.on_device_finding(finding(1, 60, 3, kX));  // the softmax's NaN
  lineage::DeviceFinding d = finding(2, 61, 9, kOut);
  d.reads_untracked = true;
  ASSERT_TRUE(attach_candidates(filed(store, slot, 61), d).has_value());
  EXPECT_EQ(d.candidate_inputs, std::vector<lineage::JudgedWrite>{(lineage::JudgedWrite{60, kX})});
  const lineage::Verdict v = tracker.on_device_finding(d);
  EXPECT_EQ(v.origin, Origin::propagated);
  EXPECT_TRUE(v.through_candidate);
  EXPECT_EQ(v.parents, std::vector<uint64_t>{1});
  EXPECT_EQ(v.candidates, std::vector<uint32_t>{9});
  // Its event says so: propagated, origin_why through_candidate, the candidate listed.
  Finding f;
  f.launch_id = 61;
  f.ptr = kOut;
  f.elements = 1024;
  f.nan = 256;
  f.dtype = DType::f32;
  f.origin_tracked = true;
  FindingFacts facts{f, 0, "rms_scale"};
  facts.candidates.push_back({"rms_scale", 61, 0, PythonLine{"/app/run.py", 20, "main"}});
  const Json j = finding_event(facts, v);
  EXPECT_EQ(j[schema::key::origin], schema::origin_str::propagated);
  EXPECT_EQ(j[schema::key::origin_why], schema::origin_why_str::through_candidate);
  ASSERT_EQ(j[schema::key::candidates].size(), 1u);
  EXPECT_EQ(j[schema::key::candidates][0][schema::key::kernel], "rms_scale");
  EXPECT_EQ(j[schema::key::parents], std::vector<uint64_t>{1});
}

}  // namespace
}  // namespace nanscope

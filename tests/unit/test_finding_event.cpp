// Tests for src/finding_event.cpp: a drained finding as the log tells it. The pinned event
// bodies and console lines are what the engine wrote before the finding -> event code moved
// out of hooks/engine.cpp (byte for byte), so `nanscope report` keeps reading the same log.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "finding_event.hpp"
#include "finding_samples.hpp"

namespace nanscope {
namespace {

using namespace samples;

FindingFacts facts(const Finding& f, WatchMeta registered = {}, int device = 0) {
  FindingFacts x{f, device};
  x.kernel = "void add_kernel<float>(float*, float const*, int)";
  x.kernel_mangled = "_Z10add_kernelIfEvPfPKfi";
  x.watch = finding_watch(f, registered);
  return x;
}

TEST(FindingEvent, TypedOutput) {
  const Finding f = typed_output();
  EXPECT_EQ(finding_event(facts(f), std::nullopt).dump(),
            R"j({"device":0,"stream":"0x5000","kernel":"void add_kernel<float>(float*, float const*, int)","kernel_mangled":"_Z10add_kernelIfEvPfPKfi","launch_id":7,"correlation_id":41,"buffer":{"arg":1,"ptr":"0x7f0000001000","dtype":"f32","elements":1024},"counts":{"nan":3,"pos_inf":1,"neg_inf":0},"first_index":17,"last_index":900,"region":"unknown","python":null})j");
  EXPECT_EQ(finding_line(facts(f)),
            R"j(non-finite output: void add_kernel<float>(float*, float const*, int) arg 1 (f32 x1024 at 0x7f0000001000): 3 NaN, 1 +Inf, 0 -Inf, first at 17 (launch 7, stream 0x5000))j");
}

// A collective's recv scan: send_state follows the origin (its only input is this rank's
// sendbuff); a send-only rank's scan of its sendbuff is non-finite by being logged at all.
TEST(FindingEvent, CollectiveFieldsAndSendState) {
  const Finding f = typed_output();
  FindingFacts x = facts(f);
  CollectiveFacts c;
  c.op = CollectiveOp::all_reduce;
  c.where = {0x9f2c41d07a5be3c1ull, 0, 2, 17, true};
  c.peers = {0, 1};
  c.send_read = true;
  x.collective = c;
  lineage::Verdict v;
  v.origin = lineage::Origin::introduced;
  EXPECT_EQ(finding_event(x, v)["collective"].dump(),
            R"j({"op":"all_reduce","comm":"9f2c41d07a5be3c1","seq":17,"rank":0,"nranks":2,"peers":[0,1],"send_state":"finite","role":"recv"})j");
  v.origin = lineage::Origin::propagated;
  EXPECT_EQ(finding_event(x, v)["collective"]["send_state"], "nonfinite");
  v.origin = lineage::Origin::unknown;
  EXPECT_EQ(finding_event(x, v)["collective"]["send_state"], "unknown");
  EXPECT_EQ(finding_event(x, std::nullopt)["collective"]["send_state"], "unknown");  // NANSCOPE_ORIGIN=0
  x.collective->send_read = false;  // recv, broadcast off the root: no sendbuff here
  v.origin = lineage::Origin::introduced;
  EXPECT_EQ(finding_event(x, v)["collective"]["send_state"], "unknown");
  x.collective->op = CollectiveOp::send;
  x.collective->role = CollectiveRole::send;
  x.collective->peers = {1};
  const Json j = finding_event(x, std::nullopt)["collective"];
  EXPECT_EQ(j["role"], "send");
  EXPECT_EQ(j["send_state"], "nonfinite");
  EXPECT_FALSE(finding_event(facts(f), std::nullopt).contains("collective"));
}

TEST(FindingEvent, UnknownKernelKeepsItsPlaces) {
  const Finding f = typed_output();
  FindingFacts x{f, 1};
  EXPECT_EQ(finding_event(x, std::nullopt).dump(),
            R"j({"device":1,"stream":"0x5000","kernel":"?","kernel_mangled":"","launch_id":7,"correlation_id":41,"buffer":{"arg":1,"ptr":"0x7f0000001000","dtype":"f32","elements":1024},"counts":{"nan":3,"pos_inf":1,"neg_inf":0},"first_index":17,"last_index":900,"region":"unknown","python":null})j");
  EXPECT_EQ(finding_line(x),
            R"j(non-finite output: ? arg 1 (f32 x1024 at 0x7f0000001000): 3 NaN, 1 +Inf, 0 -Inf, first at 17 (launch 7, stream 0x5000))j");
}

TEST(FindingEvent, CapturedTakesTheGraphsStreamInPlace) {
  const Finding f = captured();
  FindingFacts x = facts(f);
  x.graph_stream = 0x9000;
  EXPECT_EQ(finding_event(x, introduced(2)).dump(),
            R"j({"device":0,"stream":"0x9000","kernel":"void add_kernel<float>(float*, float const*, int)","kernel_mangled":"_Z10add_kernelIfEvPfPKfi","launch_id":7,"correlation_id":41,"buffer":{"arg":1,"ptr":"0x7f0000001000","dtype":"f32","elements":1024},"counts":{"nan":3,"pos_inf":1,"neg_inf":0},"first_index":17,"last_index":900,"graph_id":1099511627776,"graph_node":4,"replay":9,"region":"unknown","origin":"introduced","root":[2],"python":null})j");
  EXPECT_EQ(finding_line(x),  // the console keeps the stream the record names
            R"j(non-finite output: void add_kernel<float>(float*, float const*, int) arg 1 (f32 x1024 at 0x7f0000001000): 3 NaN, 1 +Inf, 0 -Inf, first at 17 (launch 7, stream 0x5000, graph 1099511627776 node 4 replay 9))j");
}

TEST(FindingEvent, WatchRowsFixedAndLeaking) {
  const Finding f = watch_rows();
  const FindingFacts x = facts(f, WatchMeta{"logits", Action::fix});
  EXPECT_EQ(finding_event(x, leaking(3)).dump(),
            R"j({"device":0,"stream":"0x5000","kernel":"void add_kernel<float>(float*, float const*, int)","kernel_mangled":"_Z10add_kernelIfEvPfPKfi","launch_id":7,"correlation_id":41,"buffer":{"arg":1,"ptr":"0x7f0000001000","dtype":"bf16","elements":1024,"name":"logits"},"counts":{"nan":3,"pos_inf":1,"neg_inf":0},"first_index":17,"last_index":900,"region":"mixed","counts_padding":5,"counts_real":2,"rows":{"padding":[[6,7]],"real":[[0,1]],"truncated":false},"rows_total":8,"watch":"logits","padding_source":"seq_lens","action":"zeroed","origin":"propagated","parents":[5],"root":[5],"origin_incomplete":true,"leak":true,"rows_before":{"padding":[[6,7]],"real":[],"truncated":false},"rows_after":{"padding":[[6,7]],"real":[[0,1]],"truncated":false},"python":null})j");
  EXPECT_EQ(leak_line(x, 3, leaking(3)),
            R"j(leak: non-finite values crossed from padding rows into real rows in void add_kernel<float>(float*, float const*, int) ('logits', event 3, from event 5))j");
  EXPECT_EQ(finding_line(x),
            R"j(non-finite output: void add_kernel<float>(float*, float const*, int) arg 1 (bf16 x1024 at 0x7f0000001000): 3 NaN, 1 +Inf, 0 -Inf, first at 17 (launch 7, stream 0x5000) [mixed 'logits': 5 in padding rows, 2 in real rows; rows 0-1r,6-7p; padding rows zeroed])j");
}

TEST(FindingEvent, RowsInferredFromTheGlobalSpec) {
  const Finding f = inferred_rows();
  const FindingFacts x = facts(f, WatchMeta{"never looked up", Action::abort});
  EXPECT_EQ(x.watch.name, "(global padding spec)");
  EXPECT_EQ(x.watch.action, Action::detect);
  EXPECT_EQ(finding_event(x, unknown(4)).dump(),
            R"j({"device":0,"stream":"0x5000","kernel":"void add_kernel<float>(float*, float const*, int)","kernel_mangled":"_Z10add_kernelIfEvPfPKfi","launch_id":7,"correlation_id":41,"buffer":{"arg":1,"ptr":"0x7f0000001000","dtype":"f32","elements":1024,"name":"(global padding spec)"},"counts":{"nan":3,"pos_inf":1,"neg_inf":0},"first_index":17,"last_index":900,"region":"unknown","counts_padding":0,"counts_real":0,"rows":{"padding":[],"real":[],"unknown":[[2,2]],"truncated":true},"rows_total":4,"watch":"(global padding spec)","padding_source":"none","rows_inferred":true,"origin":"unknown","origin_why":"untracked_read","root":[4],"python":null})j");
  EXPECT_EQ(finding_line(x),
            R"j(non-finite output: void add_kernel<float>(float*, float const*, int) arg 1 (f32 x1024 at 0x7f0000001000): 3 NaN, 1 +Inf, 0 -Inf, first at 17 (launch 7, stream 0x5000) [unknown '(global padding spec)': 0 in padding rows, 0 in real rows; rows 2,...])j");
}

TEST(FindingEvent, WatchLookupAndVerdict) {
  EXPECT_FALSE(needs_watch_lookup(typed_output()));
  EXPECT_TRUE(needs_watch_lookup(watch_rows()));
  EXPECT_FALSE(needs_watch_lookup(inferred_rows()));
  EXPECT_TRUE(rows_inferred(inferred_rows()));
  EXPECT_FALSE(rows_inferred(watch_rows()));
  Finding rule = watch_rows();
  rule.watch_id = kRuleWatchBit | kGlobalWatchBit | 2;  // a rule's id is never inferred
  EXPECT_FALSE(rows_inferred(rule));
  EXPECT_EQ(finding_watch(typed_output(), WatchMeta{"x", Action::fix}).name, "");
  EXPECT_STREQ(region_of(typed_output()), "unknown");
  EXPECT_STREQ(region_of(watch_rows()), "mixed");
  EXPECT_STREQ(region_of(inferred_rows()), "unknown");  // no padding source
  EXPECT_EQ(ranges_text(watch_rows()), "0-1r,6-7p");
  EXPECT_EQ(ranges_text(inferred_rows()), "2,...");
}

TEST(FindingEvent, StaleRescansOfApiWatchesOnly) {
  Finding f = watch_rows();
  f.unchanged = true;
  EXPECT_TRUE(stale_rescan(f, /*known_writer=*/false));
  EXPECT_FALSE(stale_rescan(f, /*known_writer=*/true));
  Finding rule = f;
  rule.watch_id = kRuleWatchBit | 1;
  EXPECT_FALSE(stale_rescan(rule, false));
  Finding inferred = inferred_rows();
  inferred.unchanged = true;
  EXPECT_FALSE(stale_rescan(inferred, false));
  EXPECT_TRUE(writes_arg({ParamRole::input, ParamRole::output}, 1));
  EXPECT_FALSE(writes_arg({ParamRole::input, ParamRole::output}, 0));
  EXPECT_FALSE(writes_arg({ParamRole::output}, 5));
}

TEST(FindingEvent, AbortsOnRealRowsOfDeclaredWatches) {
  EXPECT_TRUE(aborts(watch_rows(), Action::abort));
  EXPECT_FALSE(aborts(watch_rows(), Action::fix));
  Finding padding_only = watch_rows();
  padding_only.verdict.counts_real = 0;
  EXPECT_FALSE(aborts(padding_only, Action::abort));
  Finding inferred = inferred_rows();
  inferred.verdict.counts_real = 3;
  EXPECT_FALSE(aborts(inferred, Action::abort));
  EXPECT_FALSE(aborts(typed_output(), Action::abort));
  EXPECT_EQ(abort_reason(watch_rows(), "k", "logits"),
            "nanscope: abort: 2 non-finite value(s) in real rows of 'logits' written by k (launch 7)");
  EXPECT_EQ(abort_reason(captured(), "k", "w"),
            "nanscope: abort: 0 non-finite value(s) in real rows of 'w' written by k (launch 7, graph 1099511627776 "
            "replay 9)");
  EXPECT_EQ(abort_event(watch_rows(), "why", "logits").dump(), R"j({"reason":"why","launch_id":7,"watch":"logits"})j");
}

TEST(FindingEvent, DeviceFindingSeparatesContexts) {
  EXPECT_FALSE(device_finding(typed_output(), 0));
  const auto d = device_finding(watch_rows(), 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->seq, (uint64_t{2} << 48) | 13);
  EXPECT_EQ(d->parent_seqs, (std::vector<uint64_t>{(uint64_t{2} << 48) | 12, 0}));
  EXPECT_EQ(d->parent_count, 2u);
  EXPECT_TRUE(d->fixed);
  EXPECT_EQ(d->rows.counts_real, 2u);
  EXPECT_TRUE(device_finding(inferred_rows(), 0)->rows.ranges.empty());  // rows without a source are not known
  EXPECT_STREQ(origin_kind(std::nullopt), "");
  EXPECT_STREQ(origin_kind(device_finding(inferred_rows(), 0)), "unknown");
}

TEST(FindingEvent, SiteKeys) {
  const SiteKey a = site_key(watch_rows(), "propagated");
  EXPECT_EQ(std::get<4>(a), "mixed");
  EXPECT_EQ(std::get<7>(a), "0-1r,6-7p|propagated");
  EXPECT_EQ(std::get<7>(site_key(typed_output(), "")), "|");
  EXPECT_EQ(std::get<7>(site_key(inferred_rows(), "unknown")), "2,...|unknown");
  Finding other_rows = watch_rows();
  other_rows.verdict.ranges.pop_back();
  EXPECT_NE(site_key(other_rows, "propagated"), a);     // rows changed: a new event
  EXPECT_NE(site_key(watch_rows(), "introduced"), a);   // origin kind changed: a new event
  Finding replay = captured();
  replay.replay = 10;
  EXPECT_EQ(site_key(replay, ""), site_key(captured(), ""));  // replays fold
}

TEST(FindingEvent, SiteKeysHoldTheCounts) {
  const SiteKey a = site_key(typed_output(), "");
  EXPECT_EQ(std::get<8>(a), (CountsKey{3, 1, 0, 0, 0}));
  Finding more = typed_output();
  more.nan = 4;  // one more NaN: not the same finding
  EXPECT_NE(site_key(more, ""), a);
  Finding neg = typed_output();
  neg.pos_inf = 0, neg.neg_inf = 1;  // as many values, of another kind
  EXPECT_NE(site_key(neg, ""), a);
  Finding moved = watch_rows();  // the same values, split differently between padding and real rows
  moved.verdict.counts_real = 3, moved.verdict.counts_padding = 4;
  EXPECT_NE(site_key(moved, "propagated"), site_key(watch_rows(), "propagated"));
  Finding later = typed_output();
  later.launch_id = 99, later.first_index = 18;  // another launch, same counts and rows: folds
  EXPECT_EQ(site_key(later, ""), a);
}

// Folds `n` copies of `f` into `sites` the way the finding reporter does; returns the repeats.
std::vector<Json> fold_copies(Sites& sites, const Finding& f, uint32_t n, uint64_t first_event) {
  std::vector<Json> repeats;
  for (uint32_t replay = 1; replay <= n; ++replay) {
    Site* s = sites.record(site_key(f, ""), replay);
    if (s->total == 1) {
      s->first_event = first_event;
      s->identity = site_identity(f, "k");
      s->row_aware = f.row_aware;
      continue;
    }
    if (auto r = sites.fold(*s, f, f.captured)) repeats.push_back(*r);
  }
  return repeats;
}

TEST(FindingEvent, RepeatsAtPowersOfFour) {
  Sites sites;
  const std::vector<Json> repeats = fold_copies(sites, captured(), 20, 42);
  ASSERT_EQ(repeats.size(), 2u);
  constexpr const char* kWhere = R"j("kernel":"k","buffer":{"arg":1,"ptr":"0x7f0000001000","elements":1024},"region":"unknown")j";
  EXPECT_EQ(repeats[0].dump(), std::string(R"j({"of":42,"count":3,"total":4,"final":false,"first_replay":1,"last_replay":4,"counts":{"nan":9,"pos_inf":3,"neg_inf":0},)j") + kWhere + "}");
  EXPECT_EQ(repeats[1].dump(), std::string(R"j({"of":42,"count":12,"total":16,"final":false,"first_replay":1,"last_replay":16,"counts":{"nan":36,"pos_inf":12,"neg_inf":0},)j") + kWhere + "}");
  const std::vector<Json> closing = sites.closing();
  ASSERT_EQ(closing.size(), 1u);
  EXPECT_EQ(closing[0].dump(), std::string(R"j({"of":42,"count":4,"total":20,"final":true,"first_replay":1,"last_replay":20,"counts":{"nan":12,"pos_inf":4,"neg_inf":0},)j") + kWhere + "}");
  EXPECT_EQ(sites.closing()[0]["count"], 0);  // the remainder was taken: a second closing adds nothing
  Sites once;
  once.record(site_key(typed_output(), ""), 0);
  EXPECT_TRUE(once.closing().empty());  // seen once: nothing to close
  Sites plain;
  Site* p = plain.record(site_key(typed_output(), ""), 0);
  plain.record(site_key(typed_output(), ""), 0);
  EXPECT_FALSE(plain.fold(*p, typed_output(), false));
  EXPECT_EQ(plain.closing()[0].dump(), R"j({"of":0,"count":1,"total":2,"final":true,"counts":{"nan":3,"pos_inf":1,"neg_inf":0}})j");  // no graph: no replays
}

// The issue's case: many identical findings folded. The first event plus every repeat add up
// to the summary's totals exactly, findings and values alike.
TEST(FindingEvent, FirstEventPlusRepeatsEqualTheTotals) {
  for (uint32_t n : {1u, 2u, 3u, 4u, 5u, 16u, 17u, 20u, 1000u}) {
    Sites sites;
    const Finding f = watch_rows();
    std::vector<Json> repeats = fold_copies(sites, f, n, 7);
    for (Json& r : sites.closing()) repeats.push_back(r);
    uint64_t findings = 1, nan = f.nan, pos_inf = f.pos_inf, padding = f.verdict.counts_padding,
             real = f.verdict.counts_real;
    for (const Json& r : repeats) {
      findings += r["count"].get<uint64_t>();
      nan += r["counts"]["nan"].get<uint64_t>();
      pos_inf += r["counts"]["pos_inf"].get<uint64_t>();
      padding += r["counts_padding"].get<uint64_t>();
      real += r["counts_real"].get<uint64_t>();
      EXPECT_EQ(r["rows"], Json::parse(R"j({"padding":[[6,7]],"real":[[0,1]],"truncated":false})j"));
    }
    EXPECT_EQ(findings, n) << n;
    EXPECT_EQ(nan, f.nan * n) << n;
    EXPECT_EQ(pos_inf, f.pos_inf * n) << n;
    EXPECT_EQ(padding, f.verdict.counts_padding * n) << n;
    EXPECT_EQ(real, f.verdict.counts_real * n) << n;
  }
}

TEST(FindingEvent, DifferingCountsAreTheirOwnSites) {
  Sites sites;
  Finding a = typed_output(), b = typed_output();
  b.nan = 5;
  EXPECT_EQ(sites.record(site_key(a, ""), 0)->total, 1u);
  EXPECT_EQ(sites.record(site_key(b, ""), 0)->total, 1u);  // not folded into a: its own event
  EXPECT_EQ(sites.record(site_key(a, ""), 0)->total, 2u);  // a again: folds into a
}

TEST(FindingEvent, SitesBeyondTheCapAreNotRemembered) {
  Sites sites;
  Finding f = typed_output();
  for (std::size_t i = 0; i < Sites::kMaxSites; ++i) {
    f.nan = i + 1;
    ASSERT_NE(sites.record(site_key(f, ""), 0), nullptr);
  }
  f.nan = 0;
  EXPECT_EQ(sites.record(site_key(f, ""), 0), nullptr);  // a new site: the caller logs it as its own event
  f.nan = 1;
  EXPECT_EQ(sites.record(site_key(f, ""), 0)->total, 2u);  // a known site still folds
}

TEST(FindingEvent, DumpSidecar) {
  const Finding f = watch_rows();
  const std::vector<uint64_t> shape = dump_shape(f);
  EXPECT_EQ(shape, (std::vector<uint64_t>{8, 128}));
  EXPECT_EQ(dump_shape(typed_output()), (std::vector<uint64_t>{1024}));
  const Json event = finding_event(facts(f, WatchMeta{"logits", Action::fix}), std::nullopt);
  EXPECT_EQ(dump_sidecar(f, 3, 77, event, shape).dump(),
            R"j({"schema":"nanscope-dump/1","event_id":3,"pid":77,"kernel":"void add_kernel<float>(float*, float const*, int)",)j"
            R"j("buffer":{"arg":1,"ptr":"0x7f0000001000","dtype":"bf16","elements":1024,"name":"logits"},"dtype":"bf16",)j"
            R"j("storage":"<u2","shape":[8,128],"counts":{"nan":3,"pos_inf":1,"neg_inf":0},"padding_source":"seq_lens",)j"
            R"j("row_verdicts":[{"rows":[0,1],"kind":"real","verdict":"nonfinite","fixed":false},)j"
            R"j({"rows":[6,7],"kind":"padding","verdict":"nonfinite","fixed":true}],)j"
            R"j("note":"copied when the finding was drained: later writes to the buffer may show"})j");
}

TEST(FindingEvent, Summary) {
  SummaryFigures s;
  s.launches = 10, s.scans = 8, s.findings = 3, s.kernels_inspected = 2, s.kernels_not_inspected = 1;
  s.scans_dropped = 1, s.scans_overlapped = 4, s.scans_merged = 2, s.edges_programmatic = 9, s.overflow = 5, s.corrupt = 6, s.unchanged = 7;
  s.nan = 11, s.pos_inf = 12, s.neg_inf = 13, s.duration_ns = 99, s.python_captures = 14, s.python_ns = 15;
  EXPECT_EQ(summary_event(s, std::nullopt).dump(),
            R"j({"launches":10,"scans":8,"findings":3,"kernels_inspected":2,"kernels_not_inspected":1,)j"
            R"j("scans_dropped":1,"graph_scans_overlapped":4,"graph_scans_merged":2,"graph_edges_programmatic":9,"eager_scans_batched":0,"eager_batch_launches":0,"overflow":5,"corrupt_records":6,)j"
            R"j("rescans_unchanged":7,"python_line_captures":14,"python_line_ns":15,"counts":{"nan":11,"pos_inf":12,"neg_inf":13},"duration_ns":99})j");
  EXPECT_EQ(summary_line(s),
            "summary: 10 launches, 8 scans, 3 findings (11 NaN, 12 +Inf, 13 -Inf), 2 kernels inspected, 1 not "
            "inspected, 1 scans dropped");
}

TEST(FindingEvent, OriginsAndFirstCauses) {
  lineage::Summary o;
  lineage::RootSummary r;
  r.event_id = 3;
  r.origin = lineage::Origin::introduced;
  r.site = {7, 2, 0x5000, true, 1, 4, 9};
  r.buffer = {0x1000};
  r.findings = 2;
  r.kernels = {2, 5};
  r.buffers = {0x1000};
  r.last_event_id = 8;
  lineage::RootSummary::Leak leak;
  leak.event_id = 6;
  leak.site.kernel_id = 5;
  leak.site.launch_id = 9;
  leak.buffer = {0x2000};
  r.first_leak = leak;
  r.nan_cause = true;  // a NaN names it as its cause
  o.roots = {r};
  o.introduced = 1, o.propagated = 2, o.leaks = 1;
  const KernelName name = [](uint32_t id) { return id == 2 ? std::string("k2") : std::string("?"); };
  EXPECT_EQ(origins_json(o, name).dump(),
            R"j({"roots":[{"event":3,"kernel":"k2","origin":"introduced","launch_id":7,"stream":"0x5000",)j"
            R"j("buffer":"0x1000","rows":{"padding":[],"real":[],"truncated":false},"findings":2,"leaks":0,)j"
            R"j("kernels_reached":2,"buffers_reached":1,"last_event":8,"fault":true,"graph_id":1,"graph_node":4,"replay":9,)j"
            R"j("first_leak":{"event":6,"kernel":"?","launch_id":9,"buffer":"0x2000",)j"
            R"j("rows_before":{"padding":[],"real":[],"truncated":false},"rows_after":{"padding":[],"real":[],"truncated":false}}}],)j"
            R"j("roots_not_listed":0,"introduced":1,"propagated":2,"host":0,"unknown":0,"candidate":0,"preexisting":0,"leaks":1,)j"
            R"j("evictions":0})j");
  const std::vector<std::string> lines = cause_lines(o, name);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "first cause: introduced k2 (event 3, launch 7, graph 1 node 4 replay 9) in 0x1000; leaked into real rows "
            "at ? (event 6); reached 2 kernel(s), 1 buffer(s)");
}

// NaN-first: an infinity-only root no NaN names is no cause; one line counts the infinities that
// are not faults; under NANSCOPE_INF=fault every root is listed.
TEST(FindingEvent, CauseLinesAreNanFirst) {
  lineage::Summary o;
  lineage::RootSummary mask;
  mask.event_id = 1;
  mask.inf = lineage::InfKind::intended;
  mask.site.kernel_id = 2;
  lineage::RootSummary softmax;
  softmax.event_id = 4;
  softmax.origin = lineage::Origin::propagated;
  softmax.nan_cause = true;
  softmax.intended_from = {1};
  softmax.site.kernel_id = 3;
  o.roots = {mask, softmax};
  o.inf_intended = 2;
  o.faults = 3;
  const KernelName name = [](uint32_t id) { return id == 2 ? std::string("fill") : std::string("softmax"); };
  const std::vector<std::string> lines = cause_lines(o, name);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "first cause: propagated softmax (event 4, launch 0) in 0x0; made NaN from the intended infinities of "
            "event 1; reached 0 kernel(s), 0 buffer(s)");
  EXPECT_EQ(lines[1], "2 infinity-only finding(s) are not faults (2 intended, 0 arithmetic); NANSCOPE_INF=fault counts them");
  const std::vector<std::string> all = cause_lines(o, name, /*inf_faults=*/true);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].substr(0, 33), "first cause: introduced fill (eve");
  Json summary;
  add_verdict_totals(summary, o);
  EXPECT_EQ(summary.dump(), R"j({"faults":3,"infinities":{"intended":2,"arithmetic":0}})j");
}

}  // namespace
}  // namespace nanscope

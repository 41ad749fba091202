// Tests for Tracker::on_device_finding (src/lineage.cpp): findings whose inputs were judged on the
// device and name their parents by sequence number. Chains, leaks from padding into real rows,
// host and unknown roots, lost parents, repeats (graph replays), the fix, diamonds and the summary.
// Sequence numbers (101, 102, ...) and event ids (1, 2, ...) are kept apart so a mix-up shows.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lineage.hpp"
#include "lineage_rows.hpp"

namespace nanscope::lineage {
namespace {

using Ids = std::vector<uint64_t>;

constexpr BufferId a{0xa000}, b{0xb000}, c{0xc000}, d{0xd000}, e{0xe000};

using namespace testing_rows;
// Real row 0 and padding rows 6-7.
RowSet mixed() {
  RowSet r = padding(6, 7);
  r.ranges.insert(r.ranges.begin(), RowRange{0, 0, false});
  r.counts_real = 1;
  return r;
}


class DeviceLineage : public ::testing::Test {
 protected:
  explicit DeviceLineage(Limits limits = {}) : t(limits) {}

  // A new finding of kernel `kernel` on `buf`: the next sequence number and event id, with one
  // non-finite input per parent sequence number.
  DeviceFinding make(BufferId buf, RowSet r = {}, Ids parent_seqs = {}, uint32_t kernel = 0) {
    DeviceFinding f;
    f.seq = next_seq++;
    f.event_id = next_event++;
    f.buffer = buf;
    f.rows = std::move(r);
    f.site.launch_id = next_launch++;
    f.site.kernel_id = kernel;
    f.parent_count = static_cast<uint32_t>(parent_seqs.size());
    f.parent_seqs = std::move(parent_seqs);
    return f;
  }

  Tracker t;
  uint64_t next_seq = 101, next_event = 1, next_launch = 1;
};

TEST_F(DeviceLineage, ChainIntroducedThenPropagated) {
  const DeviceFinding fa = make(a, {}, {}, 1);
  const Verdict va = t.on_device_finding(fa);
  EXPECT_EQ(va.event_id, fa.event_id);
  EXPECT_EQ(va.buffer, a);
  EXPECT_EQ(va.origin, Origin::introduced);
  EXPECT_EQ(va.why, Unknown::none);
  EXPECT_EQ(va.roots, Ids{fa.event_id});
  EXPECT_TRUE(va.parents.empty());
  EXPECT_FALSE(va.incomplete);
  EXPECT_FALSE(va.leak);

  const DeviceFinding fb = make(b, {}, {fa.seq}, 2);
  const Verdict vb = t.on_device_finding(fb);
  EXPECT_EQ(vb.event_id, fb.event_id);
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_EQ(vb.parents, Ids{fa.event_id});
  EXPECT_EQ(vb.roots, Ids{fa.event_id});
  EXPECT_FALSE(vb.incomplete);
  EXPECT_FALSE(vb.leak);

  const DeviceFinding fc = make(c, {}, {fb.seq}, 3);
  const Verdict vc = t.on_device_finding(fc);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.parents, Ids{fb.event_id});
  EXPECT_EQ(vc.roots, Ids{fa.event_id});

  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  const RootSummary& r = s.roots[0];
  EXPECT_EQ(r.event_id, fa.event_id);
  EXPECT_EQ(r.origin, Origin::introduced);
  EXPECT_EQ(r.site.kernel_id, 1u);
  EXPECT_EQ(r.site.launch_id, fa.site.launch_id);
  EXPECT_EQ(r.buffer, a);
  EXPECT_EQ(r.findings, 2u);
  EXPECT_EQ(r.kernels, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(r.buffers, (Ids{b.ptr, c.ptr}));
  EXPECT_EQ(r.last_event_id, fc.event_id);
  EXPECT_FALSE(r.first_leak);
  EXPECT_EQ(s.findings, 3u);
  EXPECT_EQ(s.introduced, 1u);
  EXPECT_EQ(s.propagated, 2u);
  EXPECT_EQ(s.leaks, 0u);
}

TEST_F(DeviceLineage, LeakFromPaddingIntoRealRows) {
  const DeviceFinding fa = make(a, padding(6, 7), {}, 1);
  const Verdict va = t.on_device_finding(fa);
  EXPECT_EQ(va.origin, Origin::introduced);
  EXPECT_FALSE(va.leak);
  const DeviceFinding fb = make(b, padding(6, 7), {fa.seq}, 2);  // row-wise: stays in padding
  EXPECT_FALSE(t.on_device_finding(fb).leak);
  const DeviceFinding fc = make(c, real(0, 5), {fb.seq}, 3);    // per-tensor amax: leaks
  const Verdict vc = t.on_device_finding(fc);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_TRUE(vc.leak);
  EXPECT_FALSE(vc.incomplete);
  EXPECT_EQ(show(vc.rows_before), "6-7:p");
  EXPECT_EQ(vc.rows_before.counts_padding, 2u);
  EXPECT_EQ(vc.rows_before.counts_real, 0u);
  EXPECT_EQ(show(vc.rows_after), "0-5:r");
  EXPECT_EQ(vc.rows_after.counts_real, 6u);
  EXPECT_EQ(vc.roots, Ids{fa.event_id});
  const DeviceFinding fd = make(d, real(0, 5), {fc.seq}, 4);    // real upstream already
  const Verdict vd = t.on_device_finding(fd);
  EXPECT_FALSE(vd.leak);
  EXPECT_EQ(show(vd.rows_before), "0-5:r");

  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  const RootSummary& r = s.roots[0];
  EXPECT_EQ(show(r.rows), "6-7:p");
  ASSERT_TRUE(r.first_leak);
  EXPECT_EQ(r.first_leak->event_id, fc.event_id);
  EXPECT_EQ(r.first_leak->site.kernel_id, 3u);
  EXPECT_EQ(r.first_leak->buffer, c);
  EXPECT_EQ(show(r.first_leak->rows_before), "6-7:p");
  EXPECT_EQ(show(r.first_leak->rows_after), "0-5:r");
  EXPECT_EQ(r.leaks, 1u);
  EXPECT_EQ(s.leaks, 1u);
  EXPECT_EQ(s.propagated, 3u);
}

TEST_F(DeviceLineage, DirectLeakFromAPaddingOnlyRoot) {
  const DeviceFinding fa = make(a, padding(6, 7));
  t.on_device_finding(fa);
  const DeviceFinding fb = make(b, real(0, 3), {fa.seq});
  const Verdict vb = t.on_device_finding(fb);
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_TRUE(vb.leak);
  EXPECT_EQ(show(vb.rows_before), show(fa.rows));
  EXPECT_EQ(show(vb.rows_after), show(fb.rows));
  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  ASSERT_TRUE(s.roots[0].first_leak);
  EXPECT_EQ(s.roots[0].first_leak->event_id, fb.event_id);
  EXPECT_EQ(s.roots[0].first_leak->buffer, b);
}

TEST_F(DeviceLineage, NoLeakWhenAParentHadRealRowsOrRowsAreUnknown) {
  const DeviceFinding pad = make(a, padding(6, 7));
  const DeviceFinding realrow = make(b, real(0, 0));
  const DeviceFinding both = make(c, mixed());
  const DeviceFinding unknown = make(d);  // no padding spec: counts 0
  for (const DeviceFinding& f : {pad, realrow, both, unknown}) t.on_device_finding(f);

  EXPECT_FALSE(t.on_device_finding(make(e, real(0, 5), {pad.seq, realrow.seq})).leak);
  EXPECT_FALSE(t.on_device_finding(make(e, real(0, 5), {both.seq})).leak);
  EXPECT_FALSE(t.on_device_finding(make(e, real(0, 5), {unknown.seq})).leak);
  EXPECT_FALSE(t.on_device_finding(make(e, {}, {pad.seq})).leak);             // child rows unknown
  EXPECT_FALSE(t.on_device_finding(make(e, padding(6, 7), {pad.seq})).leak);  // still padding
  EXPECT_EQ(t.summary().leaks, 0u);
  EXPECT_TRUE(t.on_device_finding(make(e, real(1, 1), {pad.seq})).leak);     // the control
  EXPECT_EQ(t.summary().leaks, 1u);
}

// An initial scan of memory no write nanscope saw filled is no host write: unknown, unwritten.
TEST_F(DeviceLineage, UnwrittenMemoryIsNoHostRoot) {
  DeviceFinding unwritten = make(e);
  unwritten.unwritten = true;
  const Verdict v = t.on_device_finding(unwritten);
  EXPECT_EQ(v.origin, Origin::unknown);
  EXPECT_EQ(v.why, Unknown::unwritten);
  EXPECT_STREQ(unknown_name(v.why), "unwritten");
  EXPECT_EQ(t.summary().host, 0u);
}

TEST_F(DeviceLineage, HostAndUnknownRoots) {
  DeviceFinding host = make(a, real(0, 3));
  host.host = true;
  const Verdict vh = t.on_device_finding(host);
  EXPECT_EQ(vh.origin, Origin::host);
  EXPECT_EQ(vh.why, Unknown::none);
  EXPECT_EQ(vh.roots, Ids{host.event_id});
  EXPECT_TRUE(vh.parents.empty());

  DeviceFinding lost = make(b);
  lost.input_unknown = true;
  const Verdict vl = t.on_device_finding(lost);
  EXPECT_EQ(vl.origin, Origin::unknown);
  EXPECT_EQ(vl.why, Unknown::state_lost);
  EXPECT_EQ(vl.roots, Ids{lost.event_id});

  DeviceFinding untracked = make(c);
  untracked.reads_untracked = true;
  const Verdict vu = t.on_device_finding(untracked);
  EXPECT_EQ(vu.origin, Origin::unknown);
  EXPECT_EQ(vu.why, Unknown::untracked_read);
  EXPECT_EQ(vu.roots, Ids{untracked.event_id});

  // A child of an unknown root still has a root to point at.
  const DeviceFinding child = make(d, {}, {untracked.seq});
  const Verdict vc = t.on_device_finding(child);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.roots, Ids{untracked.event_id});
  // A non-finite tracked input decides it, untracked reads or not.
  DeviceFinding both = make(e, {}, {host.seq});
  both.reads_untracked = true;
  const Verdict vb = t.on_device_finding(both);
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_EQ(vb.roots, Ids{host.event_id});

  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 3u);
  EXPECT_EQ(s.roots[0].origin, Origin::host);
  EXPECT_EQ(s.roots[1].origin, Origin::unknown);
  EXPECT_EQ(s.roots[1].why, Unknown::state_lost);
  EXPECT_EQ(s.roots[2].origin, Origin::unknown);
  EXPECT_EQ(s.roots[2].why, Unknown::untracked_read);
  EXPECT_EQ(s.roots[2].findings, 1u);
  EXPECT_EQ(s.host, 1u);
  EXPECT_EQ(s.unknown, 2u);
  EXPECT_EQ(s.introduced, 0u);
  EXPECT_EQ(s.propagated, 2u);
  EXPECT_EQ(s.findings, 5u);
}

TEST_F(DeviceLineage, RootReasonPrecedence) {
  // A lost input state is named before an untracked read, as on_launch does.
  DeviceFinding both = make(a);
  both.input_unknown = true;
  both.reads_untracked = true;
  const Verdict vb = t.on_device_finding(both);
  EXPECT_EQ(vb.origin, Origin::unknown);
  EXPECT_EQ(vb.why, Unknown::state_lost);
  // Host values decide it whatever else is set.
  DeviceFinding host = make(b);
  host.host = true;
  host.input_unknown = true;
  host.reads_untracked = true;
  const Verdict vh = t.on_device_finding(host);
  EXPECT_EQ(vh.origin, Origin::host);
  EXPECT_EQ(vh.why, Unknown::none);
  const Summary s = t.summary();
  EXPECT_EQ(s.unknown, 1u);
  EXPECT_EQ(s.host, 1u);
}

TEST_F(DeviceLineage, MissingParentsMakeItIncompleteNeverALeak) {
  const DeviceFinding pad = make(a, padding(6, 7));
  t.on_device_finding(pad);

  // A parent never fed (dropped on the device) or never posted (0).
  for (uint64_t missing : {uint64_t{999}, uint64_t{0}}) {
    const Verdict v = t.on_device_finding(make(b, real(0, 5), {missing}));
    EXPECT_EQ(v.origin, Origin::propagated) << missing;
    EXPECT_TRUE(v.incomplete) << missing;
    EXPECT_FALSE(v.leak) << missing;
    EXPECT_TRUE(v.parents.empty()) << missing;
    EXPECT_TRUE(v.roots.empty()) << missing;
  }

  // One known padding-only parent and one missing: the missing one could have had real rows.
  const Verdict one_missing = t.on_device_finding(make(c, real(0, 5), {pad.seq, 999}));
  EXPECT_EQ(one_missing.origin, Origin::propagated);
  EXPECT_TRUE(one_missing.incomplete);
  EXPECT_FALSE(one_missing.leak);
  EXPECT_EQ(one_missing.parents, Ids{pad.event_id});
  EXPECT_EQ(one_missing.roots, Ids{pad.event_id});

  // More non-finite inputs than named parents.
  DeviceFinding more = make(d, real(0, 5), {pad.seq});
  more.parent_count = 2;
  const Verdict vm = t.on_device_finding(more);
  EXPECT_EQ(vm.origin, Origin::propagated);
  EXPECT_TRUE(vm.incomplete);
  EXPECT_FALSE(vm.leak);
  EXPECT_EQ(vm.parents, Ids{pad.event_id});
  EXPECT_EQ(vm.roots, Ids{pad.event_id});

  DeviceFinding none_named = make(e, real(0, 5));
  none_named.parent_count = 1;  // a non-finite input, no sequence number at all
  const Verdict vn = t.on_device_finding(none_named);
  EXPECT_EQ(vn.origin, Origin::propagated);
  EXPECT_TRUE(vn.incomplete);
  EXPECT_FALSE(vn.leak);

  const Summary s = t.summary();
  EXPECT_EQ(s.leaks, 0u);
  EXPECT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.propagated, 5u);
}

TEST_F(DeviceLineage, RepeatIsRememberedButNotCounted) {
  const DeviceFinding fa = make(a, {}, {}, 1);
  t.on_device_finding(fa);
  const DeviceFinding fb = make(b, {}, {fa.seq}, 2);
  t.on_device_finding(fb);
  const Summary before = t.summary();

  // A graph replay finds the same again: new sequence numbers, the earlier events.
  DeviceFinding ra = make(a, {}, {}, 1);
  ra.event_id = fa.event_id;
  ra.repeat = true;
  const Verdict vra = t.on_device_finding(ra);
  EXPECT_EQ(vra.event_id, fa.event_id);
  EXPECT_EQ(vra.origin, Origin::introduced);
  EXPECT_EQ(vra.roots, Ids{fa.event_id});
  DeviceFinding rb = make(b, {}, {ra.seq}, 2);
  rb.event_id = fb.event_id;
  rb.repeat = true;
  const Verdict vrb = t.on_device_finding(rb);
  EXPECT_EQ(vrb.origin, Origin::propagated);
  EXPECT_EQ(vrb.parents, Ids{fa.event_id});
  EXPECT_EQ(vrb.roots, Ids{fa.event_id});

  Summary s = t.summary();
  EXPECT_EQ(s.findings, before.findings);
  EXPECT_EQ(s.introduced, before.introduced);
  EXPECT_EQ(s.propagated, before.propagated);
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].findings, before.roots[0].findings);

  // A new finding downstream of the repeat names the repeated event as its parent.
  const DeviceFinding fc = make(c, {}, {rb.seq}, 3);
  const Verdict vc = t.on_device_finding(fc);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.parents, Ids{fb.event_id});
  EXPECT_EQ(vc.roots, Ids{fa.event_id});
  EXPECT_FALSE(vc.incomplete);
  s = t.summary();
  EXPECT_EQ(s.findings, before.findings + 1);
  EXPECT_EQ(s.propagated, before.propagated + 1);
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].findings, before.roots[0].findings + 1);
  EXPECT_EQ(s.roots[0].last_event_id, fc.event_id);
}

TEST_F(DeviceLineage, RepeatOfAnUnseenRootAddsNoRoot) {
  // A repeat names an event that is not a root here (e.g. one logged before the tracker saw it).
  DeviceFinding r = make(a);
  r.repeat = true;
  const Verdict v = t.on_device_finding(r);
  EXPECT_EQ(v.roots, Ids{r.event_id});
  const Summary s = t.summary();
  EXPECT_TRUE(s.roots.empty());
  EXPECT_EQ(s.findings, 0u);
  EXPECT_EQ(s.introduced, 0u);
  // Its child still links to it.
  const Verdict child = t.on_device_finding(make(b, {}, {r.seq}));
  EXPECT_EQ(child.parents, Ids{r.event_id});
  EXPECT_FALSE(child.incomplete);
}

TEST_F(DeviceLineage, FixDropsThePaddingRowsItZeroed) {
  DeviceFinding fa = make(a, padding(6, 7), {}, 1);
  fa.fixed = true;
  const Verdict va = t.on_device_finding(fa);
  EXPECT_EQ(va.origin, Origin::introduced);  // still reported, with what was zeroed
  EXPECT_EQ(show(va.rows_after), "6-7:p");
  // A child that still names it (its state word was posted before the fix) is not a leak:
  // the rows left behind hold no padding, so nothing is known to come from padding.
  const Verdict vb = t.on_device_finding(make(b, real(0, 5), {fa.seq}, 2));
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_EQ(vb.parents, Ids{fa.event_id});
  EXPECT_FALSE(vb.leak);
  EXPECT_EQ(vb.rows_before.counts_padding, 0u);
  EXPECT_EQ(vb.rows_before.counts_real, 0u);
  EXPECT_TRUE(vb.rows_before.ranges.empty());

  // Mixed rows: the fix leaves the real ones.
  DeviceFinding fm = make(c, mixed(), {}, 1);
  fm.fixed = true;
  EXPECT_EQ(show(t.on_device_finding(fm).rows_after), "0-0:r 6-7:p");
  const Verdict vd = t.on_device_finding(make(d, real(0, 5), {fm.seq}, 2));
  EXPECT_EQ(vd.parents, Ids{fm.event_id});
  EXPECT_EQ(show(vd.rows_before), "0-0:r");
  EXPECT_EQ(vd.rows_before.counts_padding, 0u);
  EXPECT_EQ(vd.rows_before.counts_real, 1u);
  EXPECT_FALSE(vd.leak);
  EXPECT_EQ(t.summary().leaks, 0u);
}

TEST_F(DeviceLineage, DiamondOfIndependentRoots) {
  const DeviceFinding fa = make(a, {}, {}, 1);
  const DeviceFinding fb = make(b, {}, {}, 2);
  t.on_device_finding(fa);
  t.on_device_finding(fb);
  const DeviceFinding fc = make(c, {}, {fb.seq, fa.seq}, 3);  // named in no particular order
  const Verdict vc = t.on_device_finding(fc);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.parents, (Ids{fa.event_id, fb.event_id}));
  EXPECT_EQ(vc.roots, (Ids{fa.event_id, fb.event_id}));
  EXPECT_FALSE(vc.incomplete);

  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 2u);
  EXPECT_EQ(s.roots[0].event_id, fa.event_id);
  EXPECT_EQ(s.roots[1].event_id, fb.event_id);
  for (const RootSummary& r : s.roots) {
    EXPECT_EQ(r.findings, 1u);
    EXPECT_EQ(r.buffers, Ids{c.ptr});
    EXPECT_EQ(r.kernels, std::vector<uint32_t>{3});
  }
}

TEST_F(DeviceLineage, DiamondOfOneRoot) {
  const DeviceFinding fa = make(a, {}, {}, 1);
  t.on_device_finding(fa);
  const DeviceFinding fb = make(b, {}, {fa.seq}, 2);
  const DeviceFinding fc = make(c, {}, {fa.seq}, 3);
  t.on_device_finding(fb);
  t.on_device_finding(fc);
  const Verdict vd = t.on_device_finding(make(d, {}, {fc.seq, fb.seq, fc.seq}, 4));
  EXPECT_EQ(vd.parents, (Ids{fb.event_id, fc.event_id}));  // sorted, once each
  EXPECT_EQ(vd.roots, Ids{fa.event_id});
  EXPECT_FALSE(vd.incomplete);
  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].findings, 3u);
  EXPECT_EQ(s.roots[0].kernels, (std::vector<uint32_t>{2, 3, 4}));
}

TEST_F(DeviceLineage, SummaryListsRootsInEventOrderAndCounts) {
  // Streams drain in their own order: a later event can be fed first.
  DeviceFinding late = make(a);
  late.event_id = 50;
  DeviceFinding early = make(b);
  early.event_id = 30;
  early.host = true;
  DeviceFinding middle = make(c);
  middle.event_id = 40;
  middle.reads_untracked = true;
  t.on_device_finding(late);
  t.on_device_finding(early);
  t.on_device_finding(middle);
  DeviceFinding pad = make(d, padding(2, 2), {});
  pad.event_id = 60;
  t.on_device_finding(pad);
  DeviceFinding leak = make(e, real(0, 1), {pad.seq});
  leak.event_id = 70;
  t.on_device_finding(leak);
  DeviceFinding prop = make(e, real(0, 1), {late.seq});
  prop.event_id = 80;
  t.on_device_finding(prop);

  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 4u);
  EXPECT_EQ(s.roots[0].event_id, 30u);
  EXPECT_EQ(s.roots[0].origin, Origin::host);
  EXPECT_EQ(s.roots[1].event_id, 40u);
  EXPECT_EQ(s.roots[1].origin, Origin::unknown);
  EXPECT_EQ(s.roots[2].event_id, 50u);
  EXPECT_EQ(s.roots[2].origin, Origin::introduced);
  EXPECT_EQ(s.roots[3].event_id, 60u);
  ASSERT_TRUE(s.roots[3].first_leak);
  EXPECT_EQ(s.roots[3].first_leak->event_id, 70u);
  EXPECT_FALSE(s.roots[2].first_leak);
  EXPECT_EQ(s.findings, 6u);
  EXPECT_EQ(s.introduced, 2u);
  EXPECT_EQ(s.propagated, 2u);
  EXPECT_EQ(s.host, 1u);
  EXPECT_EQ(s.unknown, 1u);
  EXPECT_EQ(s.leaks, 1u);
  EXPECT_EQ(s.roots_not_listed, 0u);
}

class DeviceLineageSmall : public DeviceLineage {
 protected:
  // max_buffers 2 (sequence numbers remembered), max_roots 2, max_roots_per_finding 2.
  DeviceLineageSmall() : DeviceLineage(Limits{2, 2, 2, 8, 8}) {}
};

TEST_F(DeviceLineageSmall, EvictedParentMakesItIncomplete) {
  const DeviceFinding fa = make(a, padding(1, 1));
  const DeviceFinding fb = make(b);
  t.on_device_finding(fa);
  t.on_device_finding(fb);
  const DeviceFinding fc = make(c);  // a third remembered finding: a's goes
  t.on_device_finding(fc);
  EXPECT_EQ(t.summary().evictions, 1u);
  const Verdict from_a = t.on_device_finding(make(d, real(0, 0), {fa.seq}));
  EXPECT_EQ(from_a.origin, Origin::propagated);
  EXPECT_TRUE(from_a.incomplete);
  EXPECT_FALSE(from_a.leak);
  EXPECT_TRUE(from_a.roots.empty());
}

TEST_F(DeviceLineageSmall, RootsPerFindingAndListedRootsAreBounded) {
  const DeviceFinding fa = make(a), fb = make(b), fc = make(c);
  t.on_device_finding(fa);
  t.on_device_finding(fb);
  t.on_device_finding(fc);  // past max_roots: counted, not listed
  // Only two sequence numbers are remembered now (fb's and fc's).
  const Verdict v = t.on_device_finding(make(d, {}, {fb.seq, fc.seq}));
  EXPECT_EQ(v.roots, (Ids{fb.event_id, fc.event_id}));
  EXPECT_FALSE(v.roots_truncated);
  const Summary s = t.summary();
  EXPECT_EQ(s.roots.size(), 2u);
  EXPECT_EQ(s.roots_not_listed, 1u);
  EXPECT_EQ(s.introduced, 3u);
}

class DeviceLineageNarrow : public DeviceLineage {
 protected:
  DeviceLineageNarrow() : DeviceLineage(Limits{64, 64, 2, 8, 8}) {}
};

TEST_F(DeviceLineageNarrow, RootsPerFindingKeepTheEarliest) {
  const DeviceFinding fa = make(a), fb = make(b), fc = make(c);
  for (const DeviceFinding& f : {fa, fb, fc}) t.on_device_finding(f);
  const DeviceFinding fd = make(d, {}, {fc.seq, fb.seq, fa.seq});
  const Verdict vd = t.on_device_finding(fd);
  EXPECT_EQ(vd.roots, (Ids{fa.event_id, fb.event_id}));
  EXPECT_TRUE(vd.roots_truncated);
  EXPECT_EQ(vd.parents, (Ids{fa.event_id, fb.event_id, fc.event_id}));
  const Verdict ve = t.on_device_finding(make(e, {}, {fd.seq}));
  EXPECT_EQ(ve.roots, (Ids{fa.event_id, fb.event_id}));
  EXPECT_TRUE(ve.roots_truncated);  // inherited
}

}  // namespace
}  // namespace nanscope::lineage

// Tests for the host lineage model (lineage_host_model.hpp, on lineage::Tracker's roots and
// reach): the reference state machine driven by synthetic records
// (chains, diamonds, independent origins, clean-up, host writes, device copies, leaks, unknown
// origins, the fix, graph replays and the memory bounds).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lineage_host_model.hpp"
#include "lineage_rows.hpp"

namespace nanscope::lineage {
namespace {

using Ids = std::vector<uint64_t>;

constexpr BufferId a{0xa000}, b{0xb000}, c{0xc000}, d{0xd000}, e{0xe000};

using namespace testing_rows;


class Lineage : public ::testing::Test {
 protected:
  explicit Lineage(Limits limits = {}, std::size_t lost_filter_bits = 1 << 16) : t(limits, lost_filter_bits) {}

  // A scan that found non-finite values; takes the next event id.
  ScanResult nan(BufferId buf, RowSet r = {}, bool fixed = false) {
    return ScanResult{buf, true, std::move(r), next_event++, fixed};
  }
  static ScanResult ok(BufferId buf) { return ScanResult{buf, false, {}, 0, false}; }

  // One launch of kernel `kernel` reading `in` and writing the scanned buffers.
  std::vector<Verdict> launch(uint32_t kernel, std::vector<BufferId> in,
                              std::vector<ScanResult> scans, bool untracked = false,
                              Site site = {}) {
    KernelLaunch k;
    k.site = site;
    k.site.launch_id = next_launch++;
    k.site.kernel_id = kernel;
    k.inputs = std::move(in);
    for (const auto& s : scans) k.outputs.push_back(s.buffer);
    k.reads_untracked = untracked;
    return t.on_launch(k, scans);
  }
  // The verdict of a launch with exactly one non-finite output.
  Verdict one(uint32_t kernel, std::vector<BufferId> in, ScanResult scan, bool untracked = false,
              Site site = {}) {
    auto v = launch(kernel, std::move(in), {std::move(scan)}, untracked, site);
    EXPECT_EQ(v.size(), 1u);
    return v.empty() ? Verdict{} : v.front();
  }
  // A launch that must report nothing.
  void clean(uint32_t kernel, std::vector<BufferId> in, BufferId out) {
    EXPECT_TRUE(launch(kernel, std::move(in), {ok(out)}).empty());
  }

  HostTracker t;
  uint64_t next_event = 1, next_launch = 1;
};

TEST(LineageNames, OriginsAndReasons) {
  EXPECT_STREQ(origin_name(Origin::introduced), "introduced");
  EXPECT_STREQ(origin_name(Origin::propagated), "propagated");
  EXPECT_STREQ(origin_name(Origin::host), "host");
  EXPECT_STREQ(origin_name(Origin::unknown), "unknown");
  EXPECT_STREQ(unknown_name(Unknown::untracked_read), "untracked_read");
  EXPECT_STREQ(unknown_name(Unknown::state_lost), "state_lost");
}

TEST(LineageRows, MergeJoinsPerStatusAndCaps) {
  RowSet x = padding(4, 7), y = padding(8, 9), z = real(0, 1);
  y.ranges.push_back(RowRange{5, 6, true});
  RowSet m = merge_rows({&x, &y, &z}, 8);
  EXPECT_EQ(show(m), "0-1:r 4-9:p");
  EXPECT_EQ(m.counts_padding, 6u);
  EXPECT_EQ(m.counts_real, 2u);
  EXPECT_FALSE(m.truncated);
  RowSet cut = merge_rows({&x, &z}, 1);
  EXPECT_EQ(show(cut), "0-1:r");
  EXPECT_TRUE(cut.truncated);
  EXPECT_FALSE(rows_known(RowSet{}));
  EXPECT_TRUE(padding_only(x));
  EXPECT_FALSE(padding_only(merge_rows({&x, &z}, 8)));
}

TEST_F(Lineage, ChainNamesTheFirstKernel) {
  Verdict va = one(1, {}, nan(a));
  EXPECT_EQ(va.origin, Origin::introduced);
  EXPECT_EQ(va.roots, Ids{1});
  EXPECT_TRUE(va.parents.empty());
  Verdict vb = one(2, {a}, nan(b));
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_EQ(vb.parents, Ids{1});
  EXPECT_EQ(vb.roots, Ids{1});
  Verdict vc = one(3, {b}, nan(c));
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.parents, Ids{2});
  EXPECT_EQ(vc.roots, Ids{1});

  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  const RootSummary& r = s.roots[0];
  EXPECT_EQ(r.event_id, 1u);
  EXPECT_EQ(r.origin, Origin::introduced);
  EXPECT_EQ(r.site.launch_id, 1u);
  EXPECT_EQ(r.buffer, a);
  EXPECT_EQ(r.findings, 2u);
  EXPECT_EQ(r.kernels, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(r.buffers, (Ids{b.ptr, c.ptr}));
  EXPECT_EQ(r.last_event_id, 3u);
  EXPECT_FALSE(r.first_leak);
  EXPECT_EQ(s.findings, 3u);
  EXPECT_EQ(s.introduced, 1u);
  EXPECT_EQ(s.propagated, 2u);
}

TEST_F(Lineage, DiamondHasBothParentsAndOneRoot) {
  one(1, {}, nan(a));          // 1
  one(2, {a}, nan(b));         // 2
  one(3, {a}, nan(c));         // 3
  Verdict vd = one(4, {b, c, b}, nan(d));
  EXPECT_EQ(vd.origin, Origin::propagated);
  EXPECT_EQ(vd.parents, (Ids{2, 3}));
  EXPECT_EQ(vd.roots, Ids{1});
  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].findings, 3u);
  EXPECT_EQ(s.roots[0].kernels, (std::vector<uint32_t>{2, 3, 4}));
}

TEST_F(Lineage, IndependentOriginsInTimeOrder) {
  one(7, {}, nan(a));                       // 1: first origin
  one(9, {}, nan(b));                       // 2: second, independent
  Verdict vc = one(10, {b}, nan(c));        // 3: from the second only
  EXPECT_EQ(vc.roots, Ids{2});
  Verdict vd = one(11, {a, c}, nan(d));     // 4: both lineages meet
  EXPECT_EQ(vd.parents, (Ids{1, 3}));
  EXPECT_EQ(vd.roots, (Ids{1, 2}));

  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 2u);
  EXPECT_EQ(s.roots[0].event_id, 1u);
  EXPECT_EQ(s.roots[0].site.kernel_id, 7u);
  EXPECT_EQ(s.roots[0].findings, 1u);
  EXPECT_EQ(s.roots[0].buffers, Ids{d.ptr});
  EXPECT_EQ(s.roots[1].event_id, 2u);
  EXPECT_EQ(s.roots[1].site.kernel_id, 9u);
  EXPECT_EQ(s.roots[1].findings, 2u);
  EXPECT_EQ(s.roots[1].buffers, (Ids{c.ptr, d.ptr}));
}

TEST_F(Lineage, CleanScanClosesLineageThenANewOrigin) {
  one(1, {}, nan(a));            // 1
  one(2, {a}, nan(b));           // 2
  clean(1, {}, a);               // a overwritten with finite values
  clean(2, {a}, b);              // b too: nothing left
  Verdict again = one(3, {a}, nan(c));  // 3: a is clean, so this is a new origin
  EXPECT_EQ(again.origin, Origin::introduced);
  EXPECT_EQ(again.roots, Ids{3});
  Verdict va = one(1, {}, nan(a));      // 4: a goes bad again: new root, not a continuation
  EXPECT_EQ(va.origin, Origin::introduced);
  EXPECT_EQ(va.roots, Ids{4});
  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 3u);
  EXPECT_EQ(s.roots[0].findings, 1u);
  EXPECT_EQ(s.buffers, 2u);      // a and c hold state; b is clean and needs none
}

TEST_F(Lineage, InPlaceInputCountsWithItsStateBefore) {
  Verdict first = one(1, {a}, nan(a));   // a clean before: introduced
  EXPECT_EQ(first.origin, Origin::introduced);
  Verdict second = one(1, {a}, nan(a));  // a non-finite before: propagated from itself
  EXPECT_EQ(second.origin, Origin::propagated);
  EXPECT_EQ(second.parents, Ids{1});
  EXPECT_EQ(second.roots, Ids{1});
  clean(1, {a}, a);
  EXPECT_EQ(one(1, {a}, nan(a)).origin, Origin::introduced);
}

TEST_F(Lineage, HostCopiesAreHostOrigins) {
  Site copy_site;
  copy_site.stream = 0x42;
  std::optional<Verdict> h = t.on_host_write(nan(a, real(0, 3)), copy_site);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->origin, Origin::host);
  EXPECT_EQ(h->roots, Ids{1});
  Verdict vb = one(2, {a}, nan(b));
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_EQ(vb.roots, Ids{1});

  EXPECT_FALSE(t.on_host_write(ok(a)));  // a finite copy closes the lineage
  EXPECT_EQ(one(3, {a}, nan(c)).origin, Origin::introduced);

  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 2u);
  EXPECT_EQ(s.roots[0].origin, Origin::host);
  EXPECT_EQ(s.roots[0].site.stream, 0x42u);
  EXPECT_EQ(show(s.roots[0].rows), "0-3:r");
  EXPECT_EQ(s.host, 1u);
  EXPECT_EQ(s.introduced, 1u);
}

TEST_F(Lineage, MemsetToZeroClosesAndNanPatternIsHost) {
  one(1, {}, nan(a));                    // 1
  EXPECT_FALSE(t.on_host_write(ok(a)));  // cuMemset(a, 0)
  clean(2, {a}, b);
  std::optional<Verdict> ff = t.on_host_write(nan(a));  // cuMemsetD8(a, 0xFF): all NaN
  ASSERT_TRUE(ff);
  EXPECT_EQ(ff->origin, Origin::host);
  EXPECT_EQ(one(2, {a}, nan(b)).roots, Ids{2});
}

TEST_F(Lineage, DeviceCopyCarriesLineage) {
  one(1, {}, nan(a, padding(6, 7)));  // 1
  t.on_copy_device(b, a);
  Verdict vc = one(2, {b}, nan(c));
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.parents, Ids{1});     // the event that made the source non-finite
  EXPECT_EQ(vc.roots, Ids{1});
  EXPECT_EQ(show(vc.rows_before), "6-7:p");
  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].buffers, (Ids{b.ptr, c.ptr}));
  EXPECT_EQ(s.roots[0].findings, 1u);  // the copy reaches a buffer, it is not a finding

  t.on_copy_device(b, d);  // a clean source makes the destination clean
  clean(3, {b}, e);
  t.on_copy_device(a, a);  // self copy: nothing changes
  EXPECT_EQ(one(4, {a}, nan(e)).origin, Origin::propagated);
}

TEST_F(Lineage, LeakFromPaddingIntoRealRows) {
  Verdict va = one(1, {}, nan(a, padding(6, 7)));            // A: padding rows
  EXPECT_EQ(va.origin, Origin::introduced);
  EXPECT_FALSE(va.leak);
  Verdict vb = one(2, {a}, nan(b, padding(6, 7)));           // B: row-wise, stays in padding
  EXPECT_EQ(vb.origin, Origin::propagated);
  EXPECT_FALSE(vb.leak);
  Verdict vc = one(3, {b}, nan(c, real(0, 5)));              // C: per-tensor amax
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_TRUE(vc.leak);
  EXPECT_EQ(show(vc.rows_before), "6-7:p");
  EXPECT_EQ(show(vc.rows_after), "0-5:r");
  Verdict vd = one(4, {c}, nan(d, real(0, 5)));              // D: already real upstream
  EXPECT_EQ(vd.origin, Origin::propagated);
  EXPECT_FALSE(vd.leak);
  EXPECT_EQ(vd.roots, Ids{1});

  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  const RootSummary& r = s.roots[0];
  EXPECT_EQ(r.site.kernel_id, 1u);
  EXPECT_EQ(show(r.rows), "6-7:p");
  ASSERT_TRUE(r.first_leak);
  EXPECT_EQ(r.first_leak->event_id, 3u);
  EXPECT_EQ(r.first_leak->site.kernel_id, 3u);
  EXPECT_EQ(r.first_leak->buffer, c);
  EXPECT_EQ(show(r.first_leak->rows_before), "6-7:p");
  EXPECT_EQ(show(r.first_leak->rows_after), "0-5:r");
  EXPECT_EQ(r.leaks, 1u);
  EXPECT_EQ(r.kernels, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(s.leaks, 1u);
}

TEST_F(Lineage, NoLeakWhenAParentIsRealOrRowsAreUnknown) {
  one(1, {}, nan(a, padding(6, 7)));                 // 1
  one(2, {}, nan(b, real(0, 0)));                    // 2
  EXPECT_FALSE(one(3, {a, b}, nan(c, real(0, 5))).leak);  // real rows were already bad
  EXPECT_FALSE(one(4, {a}, nan(d)).leak);            // output without a padding spec
  one(5, {}, nan(e));                                // 5: no rows known
  EXPECT_FALSE(one(6, {e}, nan(d, real(0, 5))).leak);  // parent region unknown: no claim
}

TEST_F(Lineage, UntrackedReadIsUnknownNeverAGuess) {
  Verdict v = one(1, {a}, nan(b), /*untracked=*/true);
  EXPECT_EQ(v.origin, Origin::unknown);
  EXPECT_EQ(v.why, Unknown::untracked_read);
  EXPECT_EQ(v.roots, Ids{1});  // its descendants still have a root to point at
  Verdict vc = one(2, {b}, nan(c));
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_EQ(vc.roots, Ids{1});
  // A non-finite tracked input decides it, untracked reads or not.
  EXPECT_EQ(one(3, {c}, nan(d), true).origin, Origin::propagated);
  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].origin, Origin::unknown);
  EXPECT_EQ(s.roots[0].why, Unknown::untracked_read);
  EXPECT_EQ(s.unknown, 1u);
}

TEST_F(Lineage, FixZeroingPaddingKeepsLaterKernelsClean) {
  Verdict va = one(1, {}, nan(a, padding(6, 7), /*fixed=*/true));
  EXPECT_EQ(va.origin, Origin::introduced);  // still reported, with what was zeroed
  clean(2, {a}, b);
  clean(3, {b}, c);
  clean(4, {c}, d);
  EXPECT_EQ(t.summary().buffers, 0u);

  // Mixed rows: the fix leaves the real ones, so the lineage stays open with those.
  RowSet mixed = padding(6, 7);
  mixed.ranges.insert(mixed.ranges.begin(), RowRange{0, 0, false});
  mixed.counts_real = 1;
  one(1, {}, nan(a, mixed, true));  // 2
  Verdict vb = one(2, {a}, nan(b, real(0, 5)));
  EXPECT_EQ(vb.parents, Ids{2});
  EXPECT_EQ(show(vb.rows_before), "0-0:r");
  EXPECT_EQ(vb.rows_before.counts_padding, 0u);
  EXPECT_EQ(vb.rows_before.counts_real, 1u);
  EXPECT_FALSE(vb.leak);
}

TEST_F(Lineage, GraphReplaysWithNanInSomeReplays) {
  // Graph 5: node 0 (kernel 1) writes a, node 1 (kernel 2) reads a and writes b.
  const bool bad[] = {false, true, false, true};
  std::vector<Verdict> seen;
  for (uint32_t replay = 0; replay < 4; ++replay) {
    Site n0{0, 0, 0x7, true, 5, 0, replay}, n1{0, 0, 0x7, true, 5, 1, replay};
    auto v0 = launch(1, {}, {bad[replay] ? nan(a, padding(3, 3)) : ok(a)}, false, n0);
    auto v1 = launch(2, {a}, {bad[replay] ? nan(b, padding(3, 3)) : ok(b)}, false, n1);
    ASSERT_EQ(v0.size(), bad[replay] ? 1u : 0u);
    ASSERT_EQ(v1.size(), bad[replay] ? 1u : 0u);
    if (!bad[replay]) continue;
    EXPECT_EQ(v0[0].origin, Origin::introduced);
    EXPECT_EQ(v1[0].origin, Origin::propagated);
    EXPECT_EQ(v1[0].parents, Ids{v0[0].event_id});
    EXPECT_EQ(v1[0].roots, Ids{v0[0].event_id});
  }
  // The clean replay in between closed the lineage: replay 3 is a new origin.
  HostSummary s = t.summary();
  ASSERT_EQ(s.roots.size(), 2u);
  EXPECT_EQ(s.roots[0].event_id, 1u);
  EXPECT_EQ(s.roots[0].site.replay, 1u);
  EXPECT_EQ(s.roots[1].site.replay, 3u);
  for (const auto& r : s.roots) {
    EXPECT_TRUE(r.site.captured);
    EXPECT_EQ(r.site.graph_id, 5u);
    EXPECT_EQ(r.site.graph_node, 0u);
    EXPECT_EQ(r.buffer, a);
    EXPECT_EQ(r.findings, 1u);
  }
}

TEST_F(Lineage, UnscannedOutputLosesItsState) {
  one(1, {}, nan(a));  // 1
  KernelLaunch k;
  k.site.launch_id = 99;
  k.outputs = {a, b};
  EXPECT_TRUE(t.on_launch(k, {ok(b)}).empty());  // a's scan was dropped
  Verdict v = one(2, {a}, nan(c));
  EXPECT_EQ(v.origin, Origin::unknown);
  EXPECT_EQ(v.why, Unknown::state_lost);
  EXPECT_EQ(t.summary().outputs_unscanned, 1u);
  clean(1, {}, a);  // rescanned clean: known again
  EXPECT_EQ(one(2, {a}, nan(c)).origin, Origin::introduced);
}

TEST_F(Lineage, FreeForgetsTheBuffer) {
  one(1, {}, nan(a));
  t.on_free(a);
  EXPECT_EQ(one(2, {a}, nan(b)).origin, Origin::introduced);
}

class LineageSmall : public Lineage {
 protected:
  LineageSmall() : Lineage(Limits{2, 2, 2, 2, 8}, 1 << 12) {}
};

TEST_F(LineageSmall, LruBoundEvictsAndNeverGuesses) {
  one(1, {}, nan(a));  // 1
  one(2, {}, nan(b));  // 2
  one(3, {a}, nan(c));  // 3: touches a, so b is the least recently used and goes
  HostSummary s = t.summary();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.buffers, 2u);
  Verdict vb = one(4, {b}, nan(d));  // b's state is gone: say so
  EXPECT_EQ(vb.origin, Origin::unknown);
  EXPECT_EQ(vb.why, Unknown::state_lost);
  Verdict mixed = one(5, {b, c}, nan(e));  // propagated from c, but b is unknown
  EXPECT_EQ(mixed.origin, Origin::propagated);
  EXPECT_TRUE(mixed.incomplete);
  EXPECT_EQ(one(6, {BufferId{0x9000}}, nan(e)).origin, Origin::introduced);  // never seen: clean
  one(7, {}, nan(a, padding(1, 1)));
  Verdict no_leak = one(8, {a, b}, nan(c, real(0, 5)));  // b's rows could have been real
  EXPECT_TRUE(no_leak.incomplete);
  EXPECT_FALSE(no_leak.leak);
  EXPECT_LE(t.summary().buffers, 2u);
}

class LineageFewRoots : public Lineage {
 protected:
  LineageFewRoots() : Lineage(Limits{64, 2, 2, 2, 8}, 1 << 12) {}
};

TEST_F(LineageFewRoots, RootsAndReachAreBounded) {
  one(1, {}, nan(a));  // 1
  one(2, {}, nan(b));  // 2
  one(3, {}, nan(c));  // 3: past max_roots
  Verdict v = one(4, {a, b, c}, nan(d));
  EXPECT_EQ(v.roots, (Ids{1, 2}));  // the earliest max_roots_per_finding
  EXPECT_TRUE(v.roots_truncated);
  one(5, {d}, nan(e));
  one(6, {e}, nan(a));
  HostSummary s = t.summary();
  EXPECT_EQ(s.roots.size(), 2u);
  EXPECT_EQ(s.roots_not_listed, 1u);
  EXPECT_EQ(s.roots[0].findings, 3u);
  EXPECT_EQ(s.roots[0].kernels.size(), 2u);
  EXPECT_TRUE(s.roots[0].kernels_capped);
  EXPECT_TRUE(s.roots[0].buffers_capped);
}

}  // namespace
}  // namespace nanscope::lineage

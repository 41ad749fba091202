// NaN-first verdicts (src/lineage_verdict.cpp, docs/origin.md#nan-first-verdicts): intended and
// arithmetic infinities, the first cause of a NaN, preexisting values, spread and leak points.
// Each sequence is the shape of a run on the H200 the issue describes: a mask fill and its
// softmax, log(0) in a hand-written cross entropy, an fp16 GEMM overflow and its GELU, an
// attention kernel's logsumexp padding, a kernel that skips padded rows, a per-tensor amax.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "lineage.hpp"
#include "lineage_rows.hpp"

namespace nanscope::lineage {
namespace {

using Ids = std::vector<uint64_t>;
using namespace testing_rows;

// Kernel ids, as the engine's kernel table would number them.
enum Kernel : uint32_t { kFill = 1, kWhere, kSoftmax, kGemm, kLog, kMul, kGelu, kLse, kSkipRows, kAttn, kAbs, kAmax, kQuant };

class Verdicts : public ::testing::Test {
 protected:
  explicit Verdicts(Policy policy = {}) : t({}, policy) {}

  // A finding of `kernel` on `buf` with these values, one non-finite input per parent.
  DeviceFinding make(uint32_t kernel, uint64_t buf, Values values, Ids parent_seqs = {}, RowSet rows = {}) {
    DeviceFinding f;
    f.seq = next_seq++;
    f.event_id = next_event++;
    f.buffer = {buf};
    f.values = values;
    f.rows = std::move(rows);
    f.site.launch_id = next_launch++;
    f.site.kernel_id = kernel;
    f.parent_count = static_cast<uint32_t>(parent_seqs.size());
    f.parent_seqs = std::move(parent_seqs);
    return f;
  }
  static Values nan(uint64_t n, uint64_t elements) { return {n, 0, 0, elements}; }
  static Values neg_inf(uint64_t n, uint64_t elements) { return {0, 0, n, elements}; }
  static Values pos_inf(uint64_t n, uint64_t elements) { return {0, n, 0, elements}; }

  Tracker t;
  uint64_t next_seq = 101, next_event = 1, next_launch = 1;
};

// transformers' SDPA mask: FillFunctor writes -inf (the decoder read the value), a `where` copies
// it into the mask. No NaN anywhere: nothing is a fault and nothing is a cause.
TEST_F(Verdicts, AnIntendedMaskIsNoFault) {
  DeviceFinding fill = make(kFill, 0xa0, neg_inf(1, 1));
  fill.intent = kIntendNegInf;
  const Verdict vf = t.on_device_finding(fill);
  EXPECT_EQ(vf.origin, Origin::introduced);
  EXPECT_EQ(vf.inf, InfKind::intended);
  EXPECT_FALSE(vf.fault);
  EXPECT_EQ(vf.causes, Ids{fill.event_id});
  const Verdict vw = t.on_device_finding(make(kWhere, 0xb0, neg_inf(96, 256), {fill.seq}));
  EXPECT_EQ(vw.origin, Origin::propagated);
  EXPECT_EQ(vw.inf, InfKind::intended);
  EXPECT_FALSE(vw.fault);
  const Summary s = t.summary();
  EXPECT_EQ(s.faults, 0u);
  EXPECT_EQ(s.inf_intended, 2u);
  EXPECT_EQ(s.inf_arithmetic, 0u);
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_FALSE(s.roots[0].nan_cause);
}

// A fill of +inf where the launch wrote -inf on purpose is not covered: the sign must match.
TEST_F(Verdicts, IntentCoversOnlyItsSigns) {
  EXPECT_TRUE(intended_signs({0, 0, 4, 8}, kIntendNegInf));
  EXPECT_FALSE(intended_signs({0, 1, 4, 8}, kIntendNegInf));
  EXPECT_TRUE(intended_signs({0, 1, 4, 8}, kIntendNegInf | kIntendPosInf));
  EXPECT_FALSE(intended_signs({1, 0, 0, 8}, kIntendNegInf | kIntendPosInf));  // NaN is never intended
  DeviceFinding fill = make(kFill, 0xa0, pos_inf(1, 1));
  fill.intent = kIntendNegInf;
  EXPECT_EQ(t.on_device_finding(fill).inf, InfKind::arithmetic);
}

// Left padding under a user's -inf mask: query rows that see no key make 0/0 in the softmax;
// P @ V carries it on. The softmax is the cause; its inputs held the mask's -inf.
TEST_F(Verdicts, SoftmaxOfAFullyMaskedRowIsTheCause) {
  DeviceFinding fill = make(kFill, 0xa0, neg_inf(64, 256));
  fill.intent = kIntendNegInf;
  t.on_device_finding(fill);
  const DeviceFinding scores = make(kWhere, 0xb0, neg_inf(64, 256), {fill.seq});
  t.on_device_finding(scores);
  const DeviceFinding softmax = make(kSoftmax, 0xc0, nan(32, 256), {scores.seq});
  const Verdict vs = t.on_device_finding(softmax);
  EXPECT_EQ(vs.origin, Origin::propagated);
  EXPECT_EQ(vs.inf, InfKind::none);
  EXPECT_TRUE(vs.fault);
  EXPECT_EQ(vs.causes, Ids{softmax.event_id});
  EXPECT_EQ(vs.intended_from, Ids{fill.event_id});
  const Verdict vg = t.on_device_finding(make(kGemm, 0xd0, nan(64, 512), {softmax.seq}));
  EXPECT_EQ(vg.causes, Ids{softmax.event_id});
  EXPECT_EQ(vg.intended_from, Ids{fill.event_id});
  EXPECT_EQ(vg.roots, Ids{fill.event_id});  // the lineage root stays the mask

  const Summary s = t.summary();
  EXPECT_EQ(s.faults, 2u);
  ASSERT_EQ(s.roots.size(), 2u);  // the mask (a lineage root) and the softmax (the NaN's cause)
  EXPECT_FALSE(s.roots[0].nan_cause);
  EXPECT_EQ(s.roots[1].event_id, softmax.event_id);
  EXPECT_TRUE(s.roots[1].nan_cause);
  EXPECT_EQ(s.roots[1].intended_from, Ids{fill.event_id});
  EXPECT_EQ(s.roots[1].findings, 1u);  // the GEMM it reached
}

// A hand-written cross entropy: log(softmax(x / 0.005)) underflows to log(0) = -inf; one_hot * -inf
// is NaN. An earlier attention kernel's logsumexp padding is intended and never becomes NaN.
TEST_F(Verdicts, LogOfZeroIsTheCauseNotTheLogsumexpPadding) {
  DeviceFinding lse = make(kLse, 0xe0, pos_inf(32, 2048));
  lse.intent = kIntendNegInf | kIntendPosInf;
  const Verdict vl = t.on_device_finding(lse);
  EXPECT_EQ(vl.inf, InfKind::intended);
  EXPECT_FALSE(vl.fault);
  const DeviceFinding log = make(kLog, 0xf0, neg_inf(7, 4000));
  const Verdict vlog = t.on_device_finding(log);
  EXPECT_EQ(vlog.origin, Origin::introduced);
  EXPECT_EQ(vlog.inf, InfKind::arithmetic);
  EXPECT_FALSE(vlog.fault);  // an infinity alone is not a fault by default
  const DeviceFinding mul = make(kMul, 0xf8, nan(3993, 4000), {log.seq});
  const Verdict vm = t.on_device_finding(mul);
  EXPECT_EQ(vm.causes, Ids{log.event_id});
  EXPECT_TRUE(vm.intended_from.empty());
  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 2u);
  EXPECT_FALSE(s.roots[0].nan_cause);  // the logsumexp
  EXPECT_TRUE(s.roots[1].nan_cause);   // the log
  EXPECT_EQ(s.faults, 1u);
  EXPECT_EQ(s.inf_intended, 1u);
  EXPECT_EQ(s.inf_arithmetic, 1u);
}

// GPT-2 in fp16: a GEMM overflows to +inf, GELU makes inf - inf = NaN. The GEMM is the cause.
TEST_F(Verdicts, OverflowThenGeluNanNamesTheGemm) {
  const DeviceFinding gemm = make(kGemm, 0x10, pos_inf(5, 1 << 20));
  t.on_device_finding(gemm);
  const DeviceFinding gelu = make(kGelu, 0x20, nan(5, 1 << 20), {gemm.seq});
  EXPECT_EQ(t.on_device_finding(gelu).causes, Ids{gemm.event_id});
  EXPECT_TRUE(t.summary().roots[0].nan_cause);
}

// A NaN parent wins over an infinity parent: the NaN's own cause is followed.
TEST_F(Verdicts, NanParentsComeBeforeInfinities) {
  const DeviceFinding a = make(kSoftmax, 0x10, nan(1, 16));
  const DeviceFinding b = make(kLog, 0x20, neg_inf(1, 16));
  t.on_device_finding(a);
  t.on_device_finding(b);
  EXPECT_EQ(t.on_device_finding(make(kMul, 0x30, nan(2, 16), {a.seq, b.seq})).causes, Ids{a.event_id});
  // An infinity-only finding from an arithmetic parent stays arithmetic.
  EXPECT_EQ(t.on_device_finding(make(kAbs, 0x40, pos_inf(1, 16), {b.seq})).inf, InfKind::arithmetic);
}

// NANSCOPE_INF=fault: every infinity is a fault, as TensorFlow's check_numerics.
class VerdictsInfFaults : public Verdicts {
 protected:
  VerdictsInfFaults() : Verdicts(Policy{true}) {}
};

TEST_F(VerdictsInfFaults, EveryInfinityIsAFault) {
  DeviceFinding fill = make(kFill, 0xa0, neg_inf(1, 1));
  fill.intent = kIntendNegInf;
  const Verdict v = t.on_device_finding(fill);
  EXPECT_EQ(v.inf, InfKind::intended);
  EXPECT_TRUE(v.fault);
  EXPECT_EQ(t.summary().faults, 1u);
}

// The vLLM review's concern: a kernel returns early for rows with seq_lens == 0, so those rows of
// its output keep what a recycled block held. The values are preexisting on every replay, and
// they name the kernel that left them, with its Python line (kept with its finding: the launch's
// own facts may be long evicted).
TEST_F(Verdicts, ValuesAKernelNeverWroteArePreexisting) {
  DeviceFinding stale = make(kSoftmax, 0x100, nan(256, 4096));
  stale.python = 0x5e;
  t.on_device_finding(stale);
  DeviceFinding skip = make(kSkipRows, 0x100, nan(256, 4096));
  skip.prior_seq = stale.seq;
  const Verdict v1 = t.on_device_finding(skip);
  EXPECT_EQ(v1.origin, Origin::preexisting);
  ASSERT_TRUE(v1.last_writer);
  EXPECT_EQ(v1.last_writer->event_id, stale.event_id);
  EXPECT_EQ(v1.last_writer->kernel_id, uint32_t(kSoftmax));
  EXPECT_EQ(v1.last_writer->python, 0x5eu);
  EXPECT_EQ(v1.parents, Ids{stale.event_id});
  EXPECT_EQ(v1.causes, Ids{stale.event_id});
  // The next replay: the word now names the kernel's own finding; it still never wrote them.
  DeviceFinding again = make(kSkipRows, 0x100, nan(256, 4096));
  again.prior_seq = skip.seq;
  const Verdict v2 = t.on_device_finding(again);
  EXPECT_EQ(v2.origin, Origin::preexisting);
  ASSERT_TRUE(v2.last_writer);
  EXPECT_EQ(v2.last_writer->event_id, stale.event_id);
  EXPECT_EQ(v2.last_writer->python, 0x5eu);
  EXPECT_EQ(v2.causes, Ids{stale.event_id});
  EXPECT_EQ(t.summary().preexisting, 2u);
}

// A softmax that makes 0/0 in the same buffer on every replay wrote them each time: introduced.
TEST_F(Verdicts, TheSameKernelMakingNanAgainStaysIntroduced) {
  const DeviceFinding first = make(kSoftmax, 0x100, nan(256, 4096));
  t.on_device_finding(first);
  DeviceFinding replay = make(kSoftmax, 0x100, nan(256, 4096));
  replay.prior_seq = first.seq;
  EXPECT_EQ(t.on_device_finding(replay).origin, Origin::introduced);
  // More than the buffer held, or NaN where it held only infinities: the launch wrote some.
  DeviceFinding more = make(kSkipRows, 0x100, nan(300, 4096));
  more.prior_seq = replay.seq;
  EXPECT_EQ(t.on_device_finding(more).origin, Origin::introduced);
  const DeviceFinding inf = make(kLog, 0x200, neg_inf(4, 4096));
  t.on_device_finding(inf);
  DeviceFinding nan_now = make(kSkipRows, 0x200, nan(4, 4096));
  nan_now.prior_seq = inf.seq;
  EXPECT_EQ(t.on_device_finding(nan_now).origin, Origin::introduced);
}

// GPT-2's c_fc GEMM under the sentinel tier (session 22, H200): an initial scan found the
// buffer NaN everywhere (a left-out launch's), then the GEMM overflowed into it. Fewer values than
// the buffer held, but of kinds it held none of: the GEMM wrote them.
TEST_F(Verdicts, InfinitiesWhereTheBufferHeldOnlyNanWereWritten) {
  const DeviceFinding seen = make(kSoftmax, 0x300, nan(4096, 4096));
  t.on_device_finding(seen);
  DeviceFinding gemm = make(kGemm, 0x300, {0, 120, 130, 4096});
  gemm.prior_seq = seen.seq;
  const Verdict v = t.on_device_finding(gemm);
  EXPECT_EQ(v.origin, Origin::introduced);
  EXPECT_FALSE(v.last_writer);
  // Fewer of each kind it held: left in place.
  const DeviceFinding mixed = make(kLog, 0x400, {64, 8, 8, 4096});
  t.on_device_finding(mixed);
  DeviceFinding skip = make(kSkipRows, 0x400, {32, 8, 0, 4096});
  skip.prior_seq = mixed.seq;
  EXPECT_EQ(t.on_device_finding(skip).origin, Origin::preexisting);
}

// The FP8 decode step: the attention writes NaN in padding rows 14-15 of 16 (a watch with
// seq_lens proves it), abs keeps it there (no spec on its buffer: same share), the per-tensor amax
// spreads it to its one element, and the quantised logits are NaN in every row.
TEST_F(Verdicts, PerTensorAmaxIsTheSpreadAndLeakPoint) {
  const DeviceFinding attn = make(kAttn, 0x10, nan(2 * 512, 16 * 512), {}, padding(14, 15));
  const Verdict va = t.on_device_finding(attn);
  EXPECT_FALSE(va.leak);
  const DeviceFinding abs = make(kAbs, 0x20, nan(2 * 512, 16 * 512), {attn.seq});
  const Verdict vabs = t.on_device_finding(abs);
  EXPECT_FALSE(vabs.leak);
  EXPECT_FALSE(vabs.spread);
  const DeviceFinding amax = make(kAmax, 0x30, nan(1, 1), {abs.seq});
  const Verdict vamax = t.on_device_finding(amax);
  ASSERT_TRUE(vamax.spread);
  EXPECT_DOUBLE_EQ(vamax.spread->before, 0.125);
  EXPECT_DOUBLE_EQ(vamax.spread->after, 1.0);
  EXPECT_TRUE(vamax.leak);  // the NaN left the padding rows here
  const Verdict vq = t.on_device_finding(make(kQuant, 0x40, nan(16 * 4096, 16 * 4096), {amax.seq}));
  EXPECT_FALSE(vq.leak);   // already everywhere upstream
  EXPECT_FALSE(vq.spread);
  EXPECT_EQ(vq.causes, Ids{attn.event_id});
  const Summary s = t.summary();
  ASSERT_TRUE(s.roots[0].first_leak);
  EXPECT_EQ(s.roots[0].first_leak->event_id, amax.event_id);
}

// Without any padding spec there are no leaks, but the spread point is still named; a row-wise
// op that keeps NaN in its rows is no spread.
TEST_F(Verdicts, SpreadWithoutASpec) {
  const DeviceFinding a = make(kSoftmax, 0x10, nan(2 * 64, 16 * 64));
  t.on_device_finding(a);
  const DeviceFinding rowwise = make(kMul, 0x20, nan(2 * 64, 16 * 64), {a.seq});
  const Verdict vr = t.on_device_finding(rowwise);
  EXPECT_FALSE(vr.spread);
  EXPECT_FALSE(vr.leak);
  const Verdict vg = t.on_device_finding(make(kGemm, 0x30, nan(16 * 128, 16 * 128), {rowwise.seq}));
  ASSERT_TRUE(vg.spread);
  EXPECT_FALSE(vg.leak);
  // Unknown elements: no share, no spread.
  EXPECT_FALSE(t.on_device_finding(make(kGemm, 0x40, {1, 0, 0, 0}, {a.seq})).spread);
}

// With a spec on both sides the leak stays what it was: parents in padding rows, real rows after.
TEST_F(Verdicts, LeakWithASpecOnBothSides) {
  const DeviceFinding a = make(kAttn, 0x10, nan(2, 16), {}, padding(14, 15));
  t.on_device_finding(a);
  const Verdict v = t.on_device_finding(make(kGemm, 0x20, nan(4, 16), {a.seq}, real(0, 3)));
  EXPECT_TRUE(v.leak);
  EXPECT_FALSE(v.spread);
}

}  // namespace
}  // namespace nanscope::lineage

namespace nanscope::lineage {
namespace {

// A kernel nanscope could not see into (CuPy's `extern "C"`, a float8 cast it could not decode)
// read a buffer a softmax had left NaN and wrote its own output: its pointer words hit that
// buffer as last judged by the softmax's scan. Its output's finding is propagated from the
// softmax's, the kernel kept as its candidate; not a new root, not the first cause.
TEST_F(Verdicts, ACandidateGivenNaNPropagatesIt) {
  const DeviceFinding softmax = make(kSoftmax, 0xa0, nan(128, 1024));
  const Verdict vs = t.on_device_finding(softmax);
  ASSERT_EQ(vs.origin, Origin::introduced);
  DeviceFinding cast = make(kQuant, 0xb0, nan(128, 1024));
  cast.reads_untracked = true;  // an initial scan named after the opaque writer
  cast.candidates = {kQuant};
  cast.candidate_inputs = {{softmax.site.launch_id, 0xa0}, {softmax.site.launch_id + 7, 0xc0}};
  const Verdict vc = t.on_device_finding(cast);
  EXPECT_EQ(vc.origin, Origin::propagated);
  EXPECT_TRUE(vc.through_candidate);
  EXPECT_EQ(vc.candidates, std::vector<uint32_t>{kQuant});
  EXPECT_EQ(vc.parents, Ids{softmax.event_id});
  EXPECT_EQ(vc.causes, Ids{softmax.event_id});
  EXPECT_EQ(vc.roots, Ids{softmax.event_id});
  const Summary s = t.summary();
  ASSERT_EQ(s.roots.size(), 1u);
  EXPECT_EQ(s.roots[0].event_id, softmax.event_id);
  EXPECT_EQ(s.candidate, 0u);
  EXPECT_EQ(s.propagated, 1u);
}

// The same kernel whose inputs were judged clean (no finding of that judgement), or judged by a
// scan whose finding was in another buffer: the candidate stays a root, as before.
TEST_F(Verdicts, ACandidateWithCleanInputsStaysACandidate) {
  const DeviceFinding softmax = make(kSoftmax, 0xa0, nan(128, 1024));
  t.on_device_finding(softmax);
  DeviceFinding raw = make(kQuant, 0xb0, nan(256, 4096));
  raw.reads_untracked = true;
  raw.candidates = {kQuant};
  raw.candidate_inputs = {{softmax.site.launch_id, 0xd0}, {999, 0xa0}};
  const Verdict v = t.on_device_finding(raw);
  EXPECT_EQ(v.origin, Origin::candidate);
  EXPECT_FALSE(v.through_candidate);
  EXPECT_EQ(v.causes, Ids{raw.event_id});
  EXPECT_EQ(t.summary().roots.size(), 2u);
}

// Its own output judged NaN by an earlier scan (the buffer is among its pointer words): the NaN
// may be the one it found there; it is that finding's, not a new root.
TEST_F(Verdicts, ACandidateOverAnEarlierFindingOfItsOwnBuffer) {
  const DeviceFinding before = make(kGemm, 0xb0, nan(4, 1024));
  t.on_device_finding(before);
  DeviceFinding after = make(kQuant, 0xb0, nan(4, 1024));
  after.reads_untracked = true;
  after.candidates = {kQuant};
  after.candidate_inputs = {{before.site.launch_id, 0xb0}};
  const Verdict v = t.on_device_finding(after);
  EXPECT_EQ(v.origin, Origin::propagated);
  EXPECT_EQ(v.parents, Ids{before.event_id});
}

}  // namespace
}  // namespace nanscope::lineage

namespace nanscope::lineage {
namespace {

// The sentinel tier (docs/sentinel.md): a replay that ran only the sentinel scans never claims an
// origin. Its inputs' states are older replays' (the scans upstream were disabled), so neither a
// NaN made here (introduced) nor one carried from a stale parent (propagated) is shown.
class SentinelVerdicts : public Verdicts {};

TEST_F(SentinelVerdicts, ASentinelOnlyReplayIsUnknownNeverIntroduced) {
  DeviceFinding f = make(kSoftmax, 0xc0, nan(8, 256));
  f.sentinel_only = true;
  const Verdict v = t.on_device_finding(f);
  EXPECT_EQ(v.origin, Origin::unknown);
  EXPECT_EQ(v.why, Unknown::sentinel);
  EXPECT_STREQ(unknown_name(v.why), "sentinel");
  EXPECT_TRUE(v.parents.empty());
}

TEST_F(SentinelVerdicts, AStaleParentIsNoEvidenceEither) {
  const DeviceFinding older = make(kLog, 0xa0, nan(8, 256));
  t.on_device_finding(older);
  DeviceFinding f = make(kGemm, 0xd0, nan(64, 256), {older.seq});
  f.sentinel_only = true;
  const Verdict v = t.on_device_finding(f);
  EXPECT_EQ(v.origin, Origin::unknown);
  EXPECT_EQ(v.why, Unknown::sentinel);
  EXPECT_TRUE(v.parents.empty());
}

}  // namespace
}  // namespace nanscope::lineage

// NaN-first verdicts (docs/origin.md#nan-first-verdicts): how one finding's lineage follows from
// the findings behind its inputs. A NaN is always a fault; an infinity is intended (a constant
// written on purpose, such as a mask, or carried from one) or arithmetic (made from finite values,
// or carried from such). A NaN's first cause is followed back through arithmetic infinities and
// stops at intended ones: there the kernel that turned them into NaN is the cause.
#include <algorithm>

#include "lineage.hpp"

namespace nanscope::lineage {

const char* inf_kind_name(InfKind k) {
  switch (k) {
    case InfKind::intended: return schema::inf_str::intended;
    case InfKind::arithmetic: return schema::inf_str::arithmetic;
    case InfKind::none: break;
  }
  return "";
}

bool intended_signs(const Values& v, uint8_t intent) {
  if (v.pos_inf + v.neg_inf == 0) return false;
  return (v.pos_inf == 0 || (intent & kIntendPosInf)) && (v.neg_inf == 0 || (intent & kIntendNegInf));
}

namespace {

void add_ids(std::vector<uint64_t>& into, const std::vector<uint64_t>& add, std::size_t cap) {
  bool truncated = false;
  union_roots(into, add, cap, &truncated);
}

}  // namespace

// What the findings behind the inputs held, sorted into NaN, arithmetic and intended infinities.
struct ParentKinds {
  std::vector<uint64_t> nan_causes, arithmetic_causes, intended_causes, carried_intended;
  bool nan = false, arithmetic = false;
};

// The cause of a finding with parents: a NaN follows its NaN parents, else the arithmetic
// infinities it was made from, else (only intended infinities in) it is its own cause.
static void cause_from_parents(const Values& values, const ParentKinds& k, bool any_found, std::size_t cap,
                               Verdict& v) {
  if (values.has_nan()) {
    v.inf = InfKind::none;
    if (k.nan) {
      v.causes = k.nan_causes;
      v.intended_from = k.carried_intended;
    } else if (k.arithmetic) {
      v.causes = k.arithmetic_causes;
    } else if (any_found) {
      v.causes = {v.event_id};
      v.intended_from = k.intended_causes;
    }
    return;
  }
  // Infinity-only: intended when every input carried only intended infinities.
  v.inf = !any_found || k.nan || k.arithmetic ? InfKind::arithmetic : InfKind::intended;
  add_ids(v.causes, k.nan_causes, cap);
  add_ids(v.causes, k.arithmetic_causes, cap);
  add_ids(v.causes, k.intended_causes, cap);
}

namespace {

// Sorts one parent's causes by what it held: NaN, arithmetic or intended infinities.
void sort_causes(bool has_nan, InfKind inf, const std::vector<uint64_t>& causes,
                 const std::vector<uint64_t>& intended_from, std::size_t cap, ParentKinds& k) {
  if (has_nan) {
    k.nan = true;
    add_ids(k.nan_causes, causes, cap);
    add_ids(k.carried_intended, intended_from, cap);
  } else if (inf == InfKind::arithmetic) {
    k.arithmetic = true;
    add_ids(k.arithmetic_causes, causes, cap);
  } else {
    add_ids(k.intended_causes, causes, cap);
  }
}

}  // namespace

// What the findings behind the inputs add up to: every one's facts gathered once.
struct Tracker::ParentFacts {
  std::vector<const RowSet*> rows;
  ParentKinds kinds;
  bool lost = false, confined = true, before_known = true, any_found = false;
  double before = 0;  // the largest parent share
};

Tracker::ParentFacts Tracker::gather_parents(const std::vector<uint64_t>& seqs, uint32_t count, Verdict& v) {
  ParentFacts pf;
  pf.lost = count > seqs.size();
  const std::size_t cap = limits_.max_roots_per_finding;
  for (uint64_t seq : seqs) {
    const SeqInfo* p = seq ? find_seq(seq) : nullptr;
    if (!p) {  // dropped on the device (channel full) or evicted here
      pf.lost = true;
      continue;
    }
    pf.any_found = true;
    v.parents.push_back(p->event_id);
    pf.rows.push_back(&p->rows);
    pf.confined = pf.confined && p->confined;
    v.roots_truncated = v.roots_truncated || p->roots_truncated;
    union_roots(v.roots, p->roots, cap, &v.roots_truncated);
    pf.before_known = pf.before_known && p->share >= 0;
    pf.before = std::max(pf.before, p->share);
    sort_causes(p->has_nan, p->inf, p->causes, p->intended_from, cap, pf.kinds);
  }
  std::sort(v.parents.begin(), v.parents.end());
  v.parents.erase(std::unique(v.parents.begin(), v.parents.end()), v.parents.end());
  return pf;
}

void Tracker::from_parents(const DeviceFinding& f, const std::vector<uint64_t>& seqs, uint32_t count, Verdict& v,
                           SeqInfo& info) {
  const ParentFacts pf = gather_parents(seqs, count, v);
  v.incomplete = pf.lost;
  v.rows_before = merge_rows(pf.rows, limits_.max_row_ranges);
  cause_from_parents(f.values, pf.kinds, pf.any_found, limits_.max_roots_per_finding, v);

  const double after = f.values.share();
  const bool shares_known = pf.any_found && pf.before_known && after >= 0;
  if (shares_known && pf.before <= kSpreadBefore && after >= kSpreadAfter)
    v.spread = Verdict::Spread{pf.before, after};
  // Confined to padding rows: proven by its own rows, or carried there without growing.
  const bool grew = v.spread || (shares_known && after > 2 * pf.before);
  const bool parents_confined = pf.any_found && !pf.lost && pf.confined;
  info.confined = rows_known(f.rows) ? padding_only(f.rows) : parents_confined && !grew;
  v.leak = parents_confined && !info.confined && (!rows_known(f.rows) || f.rows.counts_real > 0);
  info.has_nan = v.inf == InfKind::none;
  info.inf = v.inf;
  info.causes = v.causes;
  info.intended_from = v.intended_from;
  info.share = after;
}

void Tracker::as_root(const DeviceFinding& f, Verdict& v, SeqInfo& info) {
  if (v.origin == Origin::candidate) v.candidates = f.candidates;
  v.why = v.origin != Origin::unknown ? Unknown::none
          : f.sentinel_only           ? Unknown::sentinel
          : f.input_unknown           ? Unknown::state_lost
          : f.reads_untracked         ? Unknown::untracked_read
          : f.unwritten               ? Unknown::unwritten
                                      : Unknown::none;
  v.roots = {f.event_id};
  v.causes = {f.event_id};
  // An infinity copied from the host is data the program supplied, not arithmetic on the device.
  if (!f.values.has_nan())
    v.inf = v.origin == Origin::host || intended_signs(f.values, f.intent) ? InfKind::intended : InfKind::arithmetic;
  info.has_nan = v.inf == InfKind::none;
  info.inf = v.inf;
  info.causes = v.causes;
  info.share = f.values.share();
  info.confined = rows_known(f.rows) && padding_only(f.rows);
}

// Whether values `now` can be what the buffer held (`before`) left in place: a value a launch did
// not write keeps its kind, so each kind may only have shrunk. More of a kind than the buffer
// held, or a kind it held none of (+inf where it held only NaN: GPT-2's c_fc GEMM overflowing
// into a buffer an initial scan had found NaN in), means the launch wrote them. Without counts
// (older callers), NaN where the buffer held none.
static bool left_in_place(const Values& before, bool before_has_nan, const Values& now) {
  if (now.has_nan() && !before_has_nan) return false;
  if (before.nan + before.pos_inf + before.neg_inf == 0) return true;
  return now.nan <= before.nan && now.pos_inf <= before.pos_inf && now.neg_inf <= before.neg_inf;
}

bool Tracker::preexisting(const DeviceFinding& f, Verdict& v) {
  const SeqInfo* prior = f.prior_seq ? find_seq(f.prior_seq) : nullptr;
  if (!prior) return false;
  if (!left_in_place(prior->values, prior->has_nan, f.values)) return false;
  const bool same_kernel = prior->kernel_id == f.site.kernel_id;
  // The same kernel left them the last time: whatever it did then, it does now (a softmax that
  // makes 0/0 on every replay stays introduced; a kernel that skips rows stays preexisting).
  if (same_kernel && prior->origin != Origin::preexisting) return false;
  v.origin = Origin::preexisting;
  v.last_writer = same_kernel && prior->last_writer
                      ? *prior->last_writer
                      : Verdict::LastWriter{prior->event_id, prior->launch_id, prior->kernel_id, prior->python};
  return true;
}

void Tracker::mark_nan_causes(const Verdict& v) {
  if (v.inf != InfKind::none) return;
  for (uint64_t id : v.causes)
    if (auto it = root_index_.find(id); it != root_index_.end()) roots_[it->second].nan_cause = true;
}

}  // namespace nanscope::lineage

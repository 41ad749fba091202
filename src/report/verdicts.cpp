// NaN-first verdicts (docs/report.md, "Faults and the first cause"): which findings are faults,
// what the gate counts, and which event FIRST CAUSE shows. A NaN is a fault; an infinity is one
// only when the log or --inf-faults says so, or when it made a NaN (a fault names it in `cause`).
// Logs without `inf` and `cause` (older nanscope) keep the selection of earlier reports.
#include <algorithm>

#include "model.hpp"

namespace nanscope::report {

namespace {

// Events kept per process for `cause` and `intended_from` to name: the roots a log has are few
// (repeats fold the rest); past this, the card says the event was not kept.
constexpr std::size_t kMaxKept = 4096;
// A kept event's raw texts beyond these are dropped: only the card shows them.
constexpr std::size_t kMaxKeptPython = 4096, kMaxKeptCandidates = 64 * 1024;
constexpr std::size_t kMaxIntended = 4;  // intended writes named on the card

bool snapshot_earlier(const Event& e, const Snapshot& s) {
  if (!s.valid) return true;
  const Event& o = s.ev;
  if (e.ts_ns != o.ts_ns) return e.ts_ns < o.ts_ns;
  if (e.rank != o.rank) return e.rank < o.rank;
  if (e.pid != o.pid) return e.pid < o.pid;
  return e.id < o.id;
}

void take(Snapshot& s, const Event& e, std::uint32_t file, std::uint32_t proc, std::uint32_t site, std::int64_t line) {
  s.valid = true;
  s.file = file;
  s.proc = proc;
  s.site = site;
  s.line = line;
  s.ev = e;
}

void take_earlier(Snapshot& s, const Event& e, std::uint32_t file, std::uint32_t proc, std::uint32_t site,
                  std::int64_t line) {
  if (snapshot_earlier(e, s)) take(s, e, file, proc, site, line);
}

const char* kHostLabel = "from host memory (no kernel introduced a non-finite value)";
const char* kCandidateLabel = "candidate (written, as far as nanscope can tell, by a kernel it could not inspect)";

// How the card names a cause found through `cause`.
std::string cause_label(const Event& e) {
  if (e.self_caused() && !e.intended_from.empty()) return "made NaN from intended infinities";
  switch (e.origin) {
    case Origin::introduced: return "introduced";
    case Origin::host: return kHostLabel;
    case Origin::candidate: return kCandidateLabel;
    case Origin::unknown: return "origin unknown (nanscope could not follow where its inputs came from)";
    case Origin::propagated: return "made NaN from the infinities its inputs held";
    case Origin::preexisting: return "preexisting (its buffer already held non-finite values)";
    case Origin::none: break;
  }
  return "first cause (the log records no origin for it)";
}

}  // namespace

bool Analysis::is_fault(const Event& e) const {
  if (e.counts.nan > 0 || e.fault || opt.inf_faults) return true;
  // No `inf` (an older log cannot tell intent), or a kind this reader does not know: a fault.
  return e.inf != InfKind::intended && e.inf != InfKind::arithmetic;
}

void Analysis::count_verdict(Site& s, bool fault, InfKind kind, std::int64_t n, const Counts& c) {
  if (fault) {
    totals.faults = sat_add(totals.faults, n);
    // --fail-on real: every fault nobody proved to be in padding rows only.
    if (s.region != Region::padding) totals.faults_not_padding = sat_add(totals.faults_not_padding, n);
    if (s.region == Region::real || s.region == Region::mixed) totals.faults_real = sat_add(totals.faults_real, n);
    return;
  }
  s.quiet_findings = sat_add(s.quiet_findings, n);
  s.quiet_counts += c;
  std::int64_t& by_kind = kind == InfKind::intended ? totals.quiet_intended : totals.quiet_arithmetic;
  by_kind = sat_add(by_kind, n);
}

// A counted finding's spread point, and the sites its `cause` names (their infinities made NaN).
void Analysis::note_verdicts(const Event& e, bool fault, Site& s, std::uint32_t pi) {
  if (e.has_field(h_spread)) {
    totals.spreads++;
    if (!s.spread || e.ts_ns < s.spread_ts) {
      s.spread = true;
      s.spread_ts = e.ts_ns;
      s.spread_id = e.id;
      s.spread_before = e.spread.before;
      s.spread_after = e.spread.after;
    }
  }
  if (!fault) return;
  for (std::int64_t id : e.cause) {
    bool found = false;
    const std::uint32_t si = id == e.id ? 0 : site_of_event(pi, id, &found);
    if (found) sites[si].named_as_cause = true;
  }
}

std::uint32_t Analysis::site_of_event(std::uint32_t pi, std::int64_t id, bool* found) const {
  const Proc& p = procs[pi];
  *found = true;
  if (const Snapshot* s = kept_event(pi, id)) return s->site;
  if (!p.recent.empty()) {
    const Proc::Recent& rc = p.recent[std::size_t(id) % p.recent.size()];
    if (rc.id == id) return rc.site;
  }
  if (const auto it = p.site_first.find(id); it != p.site_first.end()) return it->second;
  *found = false;
  return 0;
}

// Keeps the events a later `cause` or `intended_from` may name: those with no parents (any origin
// but propagated; preexisting ones for their last writer) and those that name themselves. Only in
// processes whose log has NaN-first verdicts: an older log names no cause.
void Analysis::keep_for_causes(const Event& e, std::uint32_t file, std::uint32_t pi, std::uint32_t si,
                               std::int64_t line) {
  Proc& p = procs[pi];
  if (e.has_field(h_cause) || e.has_field(h_inf)) p.nan_first = nan_first = true;
  if (!p.nan_first || p.kept.size() >= kMaxKept) return;
  if (e.origin == Origin::propagated && !e.self_caused()) return;
  const auto [it, fresh] = p.kept.try_emplace(e.id);
  if (!fresh) return;  // an id seen twice (a hostile log): the first stays
  take(it->second, e, file, pi, si, line);
  Event& kept = it->second.ev;
  kept.collective_json.clear();  // decoded into kept.collective
  if (kept.python_json.size() > kMaxKeptPython) kept.python_json.clear();
  if (kept.candidates_json.size() > kMaxKeptCandidates) kept.candidates_json.clear();
}

const Snapshot* Analysis::kept_event(std::uint32_t proc, std::int64_t id) const {
  const Proc& p = procs[proc];
  const auto it = p.kept.find(id);
  return it == p.kept.end() ? nullptr : &it->second;
}

// The earliest faults, by kind of origin and of all; non-fault infinities are no first cause.
void Analysis::note_first_causes(const Event& e, std::uint32_t file, std::uint32_t pi, std::uint32_t si,
                                 std::int64_t line) {
  if (!is_fault(e)) return;
  Proc& p = procs[pi];
  if (e.origin_why == schema::origin_why_str::sentinel) {  // seen, its cause not looked for
    if (p.sentinel_ids.size() < Proc::kMaxSentinelIds) p.sentinel_ids.insert(e.id);
    take_earlier(first_sentinel, e, file, pi, si, line);
    return;
  }
  // Carried from sentinel findings only (eager: the rest of the step after a launch the sample
  // left out): no lineage of its own either. A window that scanned everything gives the cause.
  const auto sentinel_cause = [&p](std::int64_t c) { return p.sentinel_ids.count(c) != 0; };
  if (!e.cause.empty() && std::all_of(e.cause.begin(), e.cause.end(), sentinel_cause)) return;
  take_earlier(first_fault, e, file, pi, si, line);
  take_earlier(procs[pi].first_fault, e, file, pi, si, line);
  if (e.origin == Origin::introduced) {
    take_earlier(first_introduced, e, file, pi, si, line);
    take_earlier(procs[pi].first_introduced, e, file, pi, si, line);
  } else if (e.origin == Origin::host) {
    take_earlier(first_host, e, file, pi, si, line);
  } else if (e.origin == Origin::candidate) {
    take_earlier(first_candidate, e, file, pi, si, line);
  }
  // A preexisting finding found values an earlier one left: never a first cause on its own.
  take_earlier(e.origin == Origin::preexisting ? first_preexisting : first_any, e, file, pi, si, line);
}

void Analysis::settle_verdicts() {
  for (Site& s : sites) {
    if (!s.named_as_cause || s.promoted || s.quiet_findings == 0) continue;
    s.promoted = true;
    std::int64_t& by_kind = s.quiet_inf == InfKind::intended ? totals.quiet_intended : totals.quiet_arithmetic;
    by_kind = sat_sub(by_kind, s.quiet_findings);
    count_verdict(s, true, InfKind::none, s.quiet_findings, s.quiet_counts);
  }
}

bool Analysis::gate_triggered() const {
  switch (opt.fail_on) {
    case FailOn::real: return totals.faults_not_padding > 0;
    case FailOn::any: return totals.faults > 0;
    case FailOn::never: return false;
  }
  return false;
}

int Analysis::exit_code() const {
  if (input_error || files.empty()) return 2;
  return gate_triggered() ? 1 : 0;
}

FirstCause Analysis::first_cause() const {
  if (!first_fault.valid) return sentinel_first_cause();
  if (first_fault.ev.cause.empty()) return legacy_first_cause();
  return resolve_cause(first_fault);
}

FirstCause Analysis::first_cause_of(std::uint32_t proc) const {
  const Proc& p = procs[proc];
  FirstCause fc;
  if (!p.first_fault.valid) return fc;
  if (!p.first_fault.ev.cause.empty()) return resolve_cause(p.first_fault);
  if (p.first_introduced.valid) fc.shown = &p.first_introduced, fc.label = "introduced";
  return fc;
}

void Analysis::on_escalation(std::uint32_t proc, const Event& e) {
  constexpr std::size_t kMaxEscalations = 1 << 16;
  if (escalations.size() < kMaxEscalations)
    escalations.push_back({proc, e.graph_id, e.replay, e.window, e.finding, e.phase});
}

namespace {

// What became of a sentinel's escalated window (its last escalation event, or none).
std::string window_text(const Analysis::EscalationSeen* ended) {
  namespace phase = schema::escalation_phase_str;
  if (!ended) return "; no escalated replay after it is in the log";
  const std::string n = std::to_string(ended->window);
  if (ended->phase == phase::did_not_recur) return "; did not recur in the next " + n + " replays";
  if (ended->phase == phase::incomplete) return "; the " + n + " replays after it had not all drained at exit";
  return "; it recurred, but its lineage's findings are not in the log";
}

}  // namespace

// No fault with its lineage: the earliest NaN a sentinel saw, where and when, and what became of
// its escalated window. Its cause was never looked for, so no origin is named (a NaN that
// recurred in the window has its lineage's faults, and first_fault shows them instead).
FirstCause Analysis::sentinel_first_cause() const {
  FirstCause fc;
  if (!first_sentinel.valid) return fc;
  const Event& s = first_sentinel.ev;
  const EscalationSeen* fired = nullptr;
  const EscalationSeen* ended = nullptr;
  for (const EscalationSeen& x : escalations) {
    if (x.proc != first_sentinel.proc) continue;
    if (!fired && x.phase == schema::escalation_phase_str::escalate && x.finding == s.id) fired = &x;
    else if (fired && !ended && x.graph_id == fired->graph_id && x.replay == fired->replay &&
             x.phase != schema::escalation_phase_str::escalate)
      ended = &x;
  }
  const std::int64_t replay = fired ? fired->replay : s.replay;
  fc.shown = &first_sentinel;
  if (!s.has_field(h_graph_id)) {  // eager: a launch the sample left out wrote what it read
    fc.label = "seen after launches the sentinel tier's eager sample left out (not scanned); it did not recur "
               "in a window that scanned every launch; first cause unknown; rerun with --tier full";
    return fc;
  }
  fc.label = "seen by a sentinel in graph " + std::to_string(s.graph_id) + " replay " + std::to_string(replay) +
             window_text(ended) + "; first cause unknown; rerun with --tier full";
  return fc;
}

// Logs without `cause`: the earliest introduced fault, else the earliest host or candidate one,
// else the earliest fault, as reports did before NaN-first verdicts.
FirstCause Analysis::legacy_first_cause() const {
  FirstCause fc;
  const auto show = [&](const Snapshot& s, const char* label) {
    fc.shown = &s;
    fc.label = label;
    return fc;
  };
  if (first_introduced.valid) return show(first_introduced, "introduced");
  if (!any_origin && first_any.valid) return show(first_any, "earliest finding (the log has no origin data)");
  if (first_host.valid) return show(first_host, kHostLabel);
  if (first_candidate.valid) return show(first_candidate, kCandidateLabel);
  if (first_any.valid) return show(first_any, "earliest finding (no finding is marked introduced)");
  fc.preexisting = &first_preexisting;  // every fault found values an earlier finding left
  return show(first_preexisting, "earliest fault, in a buffer that already held non-finite values (its writer was "
                                 "not kept)");
}

// The earliest event the fault's `cause` names in its process (a preexisting one only says who
// wrote the values before), with the intended infinities its inputs held.
FirstCause Analysis::resolve_cause(const Snapshot& fault) const {
  FirstCause fc;
  const Snapshot* best = nullptr;
  for (std::int64_t id : fault.ev.cause) {
    const Snapshot* s = id == fault.ev.id ? &fault : kept_event(fault.proc, id);
    if (!s) {
      fc.not_kept.push_back(id);
    } else if (s->ev.origin == Origin::preexisting) {
      if (!fc.preexisting) fc.preexisting = s;
    } else if (!best || snapshot_earlier(s->ev, *best)) {
      best = s;
    }
  }
  if (fault.ev.origin == Origin::preexisting && !fc.preexisting) fc.preexisting = &fault;
  if (!best && fc.preexisting) {  // the values' writer, when it was kept
    const Snapshot* w = kept_event(fault.proc, fc.preexisting->ev.last_writer.event);
    if (w && w->ev.origin != Origin::preexisting) best = w;
  }
  if (best) {
    fc.label = cause_label(best->ev);
  } else {
    best = &fault;
    fc.label = "earliest fault (the event its cause names was not kept)";
  }
  fc.shown = best;
  if (best->ev.id != fault.ev.id) fc.fault = &fault;
  for (std::int64_t id : best->ev.intended_from) {
    if (fc.intended.size() >= kMaxIntended) break;
    if (const Snapshot* s = kept_event(best->proc, id)) fc.intended.push_back(s);
    else fc.not_kept.push_back(id);
  }
  return fc;
}

}  // namespace nanscope::report

#include "lineage.hpp"

#include <algorithm>

namespace nanscope::lineage {

bool rows_known(const RowSet& rows) { return rows.counts_padding + rows.counts_real > 0; }

bool padding_only(const RowSet& rows) { return rows.counts_padding > 0 && rows.counts_real == 0; }

namespace {

// Sorts ranges by first row and joins overlapping or adjacent ones (all of one status).
void join(std::vector<RowRange>& ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const RowRange& a, const RowRange& b) { return a.first < b.first; });
  std::vector<RowRange> out;
  for (const RowRange& r : ranges) {
    if (!out.empty() && (out.back().last == UINT64_MAX || r.first <= out.back().last + 1)) {
      out.back().last = std::max(out.back().last, r.last);
      continue;
    }
    out.push_back(r);
  }
  ranges = std::move(out);
}

// Adds `v` to a sorted list of at most `cap` distinct values; sets *capped when it is full.
template <typename T>
void add_capped(std::vector<T>& list, T v, std::size_t cap, bool* capped) {
  auto it = std::lower_bound(list.begin(), list.end(), v);
  if (it != list.end() && *it == v) return;
  if (list.size() >= cap) {
    *capped = true;
    return;
  }
  list.insert(it, v);
}

}  // namespace

RowSet merge_rows(const std::vector<const RowSet*>& sets, std::size_t max_ranges) {
  RowSet out;
  std::vector<RowRange> padding, real;
  for (const RowSet* s : sets) {
    out.counts_padding += s->counts_padding;
    out.counts_real += s->counts_real;
    out.truncated = out.truncated || s->truncated;
    for (const RowRange& r : s->ranges) (r.padding ? padding : real).push_back(r);
  }
  join(padding);
  join(real);
  out.ranges = std::move(padding);
  out.ranges.insert(out.ranges.end(), real.begin(), real.end());
  std::sort(out.ranges.begin(), out.ranges.end(), [](const RowRange& a, const RowRange& b) {
    return a.first != b.first ? a.first < b.first : a.padding < b.padding;
  });
  if (out.ranges.size() > max_ranges) {
    out.ranges.resize(max_ranges);
    out.truncated = true;
  }
  return out;
}

const char* unknown_name(Unknown u) {
  switch (u) {
    case Unknown::none: return schema::origin_why_str::none;
    case Unknown::untracked_read: return schema::origin_why_str::untracked_read;
    case Unknown::state_lost: return schema::origin_why_str::state_lost;
    case Unknown::unwritten: return schema::origin_why_str::unwritten;
    case Unknown::sentinel: return schema::origin_why_str::sentinel;
  }
  return schema::origin_why_str::none;
}

void union_roots(std::vector<uint64_t>& into, const std::vector<uint64_t>& add, std::size_t cap,
               bool* truncated) {
  std::vector<uint64_t> out;
  std::set_union(into.begin(), into.end(), add.begin(), add.end(), std::back_inserter(out));
  if (out.size() > cap) {
    out.resize(cap);
    *truncated = true;
  }
  into = std::move(out);
}

Tracker::Tracker(Limits limits, Policy policy) : limits_(limits), policy_(policy) {
  limits_.max_buffers = std::max<std::size_t>(limits_.max_buffers, 1);
  limits_.max_roots_per_finding = std::max<std::size_t>(limits_.max_roots_per_finding, 1);
  limits_.max_row_ranges = std::max<std::size_t>(limits_.max_row_ranges, 1);
}

// --- roots and reach ----------------------------------------------------------------------

void Tracker::count(const Verdict& v) {
  ++totals_.findings;
  switch (v.origin) {
    case Origin::introduced: ++totals_.introduced; break;
    case Origin::propagated: ++totals_.propagated; break;
    case Origin::host: ++totals_.host; break;
    case Origin::unknown: ++totals_.unknown; break;
    case Origin::candidate: ++totals_.candidate; break;
    case Origin::preexisting: ++totals_.preexisting; break;
    case Origin::none: break;  // never classified so
  }
  if (v.leak) ++totals_.leaks;
}

void Tracker::add_root(const Verdict& v, const Site& site) {
  if (root_index_.count(v.event_id)) return;
  if (roots_.size() >= limits_.max_roots) {
    ++totals_.roots_not_listed;
    return;
  }
  RootSummary r;
  r.event_id = r.last_event_id = v.event_id;
  r.origin = v.origin;
  r.why = v.why;
  r.candidates = v.candidates;
  r.site = site;
  r.buffer = v.buffer;
  r.rows = v.rows_after;
  r.inf = v.inf;
  r.intended_from = v.intended_from;
  root_index_.emplace(v.event_id, roots_.size());
  roots_.push_back(std::move(r));
}

void Tracker::reach_buffer(uint64_t root_event, uint64_t ptr, uint64_t event_id) {
  auto it = root_index_.find(root_event);
  if (it == root_index_.end()) return;  // a root past max_roots
  RootSummary& r = roots_[it->second];
  add_capped(r.buffers, ptr, limits_.max_reach, &r.buffers_capped);
  r.last_event_id = std::max(r.last_event_id, event_id);
}

void Tracker::reach(const Verdict& v, const Site& site) {
  std::vector<uint64_t> ids = v.roots;  // and a NaN's causes that are no lineage root (made from intended infinities)
  bool unused = false;
  union_roots(ids, v.causes, limits_.max_roots_per_finding * 2, &unused);
  for (uint64_t id : ids) {
    if (id == v.event_id) continue;
    auto it = root_index_.find(id);
    if (it == root_index_.end()) continue;  // a root past max_roots
    RootSummary& r = roots_[it->second];
    ++r.findings;
    add_capped(r.kernels, site.kernel_id, limits_.max_reach, &r.kernels_capped);
    reach_buffer(id, v.buffer.ptr, v.event_id);
    if (!v.leak) continue;
    ++r.leaks;
    if (!r.first_leak) r.first_leak = RootSummary::Leak{v.event_id, site, v.buffer, v.rows_before, v.rows_after};
  }
}

// --- findings classified on the device ----------------------------------------------------

const Tracker::SeqInfo* Tracker::find_seq(uint64_t seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return nullptr;
  seq_lru_.splice(seq_lru_.begin(), seq_lru_, it->second.lru);
  return &it->second;
}

void Tracker::put_seq(uint64_t seq, SeqInfo info) {
  if (auto it = seqs_.find(seq); it != seqs_.end()) {
    seq_lru_.erase(it->second.lru);
    seqs_.erase(it);
  }
  if (seqs_.size() >= limits_.max_buffers) {  // a child of an evicted finding gets `incomplete`
    seqs_.erase(seq_lru_.back());
    seq_lru_.pop_back();
    ++totals_.evictions;
  }
  seq_lru_.push_front(seq);
  info.lru = seq_lru_.begin();
  seqs_.emplace(seq, std::move(info));
}

Origin device_origin(const DeviceFinding& f) {
  if (f.sentinel_only) return Origin::unknown;  // the evidence of an origin was not gathered
  if (f.parent_count > 0) return Origin::propagated;
  if (f.host) return Origin::host;
  if (!f.candidates.empty()) return Origin::candidate;
  return f.input_unknown || f.reads_untracked || f.unwritten ? Origin::unknown : Origin::introduced;
}

void Tracker::classify(const DeviceFinding& f, Verdict& v, SeqInfo& info) {
  v.origin = device_origin(f);
  if (v.origin == Origin::propagated) return from_parents(f, f.parent_seqs, f.parent_count, v, info);
  if (v.origin == Origin::candidate) {
    if (const std::vector<uint64_t> through = candidate_parents(f); !through.empty()) {
      v.origin = Origin::propagated;
      v.through_candidate = true;
      v.candidates = f.candidates;
      return from_parents(f, through, static_cast<uint32_t>(through.size()), v, info);
    }
  }
  if (v.origin == Origin::introduced && preexisting(f, v))
    return from_parents(f, {f.prior_seq}, 1, v, info);  // the earlier finding is its parent
  as_root(f, v, info);
}

Verdict Tracker::on_device_finding(const DeviceFinding& f) {
  Verdict v;
  v.event_id = f.event_id;
  v.buffer = f.buffer;
  v.rows_after = f.rows;
  SeqInfo info;
  classify(f, v, info);
  v.fault = v.inf == InfKind::none || policy_.infinities_are_faults;
  if (!f.repeat) {
    const bool root = v.origin != Origin::propagated && v.origin != Origin::preexisting;
    const bool converted = v.inf == InfKind::none && v.causes.size() == 1 && v.causes[0] == v.event_id;
    if (root || converted) add_root(v, f.site);  // a NaN made from intended infinities is a cause
    if (!root) reach(v, f.site);
    mark_nan_causes(v);
    count(v);
  }
  // Faults and infinities count every finding, folded repeats too (the summary's findings do).
  if (v.fault) ++totals_.faults;
  if (v.inf == InfKind::intended) ++totals_.inf_intended;
  if (v.inf == InfKind::arithmetic) ++totals_.inf_arithmetic;
  if (f.seq) {
    remember(f, v, std::move(info));
    remember_judged(f);
  }
  return v;
}

void Tracker::remember(const DeviceFinding& f, const Verdict& v, SeqInfo info) {
  info.event_id = v.event_id;
  info.rows = f.rows;
  info.roots = v.roots;
  info.roots_truncated = v.roots_truncated;
  info.origin = v.origin;
  info.kernel_id = f.site.kernel_id;
  info.launch_id = f.site.launch_id;
  info.python = f.python;
  info.last_writer = v.last_writer;
  info.values = f.values;
  if (f.fixed) {  // only the real rows are left
    std::erase_if(info.rows.ranges, [](const RowRange& r) { return r.padding; });
    info.rows.counts_padding = 0;
    info.confined = false;
  }
  put_seq(f.seq, std::move(info));
}

Summary Tracker::summary() const {
  Summary s = totals_;
  s.roots = roots_;
  std::sort(s.roots.begin(), s.roots.end(),
            [](const RootSummary& a, const RootSummary& b) { return a.event_id < b.event_id; });
  return s;
}

}  // namespace nanscope::lineage

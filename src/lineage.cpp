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

Tracker::Tracker(Limits limits) : limits_(limits) {
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
  for (uint64_t id : v.roots) {
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
  if (f.parent_count > 0) return Origin::propagated;
  if (f.host) return Origin::host;
  if (!f.candidates.empty()) return Origin::candidate;
  return f.input_unknown || f.reads_untracked ? Origin::unknown : Origin::introduced;
}

Verdict Tracker::on_device_finding(const DeviceFinding& f) {
  Verdict v;
  v.event_id = f.event_id;
  v.buffer = f.buffer;
  v.rows_after = f.rows;
  v.origin = device_origin(f);
  if (v.origin == Origin::propagated) {
    std::vector<const RowSet*> parent_rows;
    bool lost = f.parent_count > f.parent_seqs.size(), parents_padding_only = true;
    for (uint64_t seq : f.parent_seqs) {
      const SeqInfo* p = seq ? find_seq(seq) : nullptr;
      if (!p) {  // dropped on the device (channel full) or evicted here
        lost = true;
        continue;
      }
      v.parents.push_back(p->event_id);
      parent_rows.push_back(&p->rows);
      parents_padding_only = parents_padding_only && padding_only(p->rows);
      v.roots_truncated = v.roots_truncated || p->roots_truncated;
      union_roots(v.roots, p->roots, limits_.max_roots_per_finding, &v.roots_truncated);
    }
    std::sort(v.parents.begin(), v.parents.end());
    v.parents.erase(std::unique(v.parents.begin(), v.parents.end()), v.parents.end());
    v.incomplete = lost;
    v.rows_before = merge_rows(parent_rows, limits_.max_row_ranges);
    v.leak = !lost && parents_padding_only && rows_known(f.rows) && f.rows.counts_real > 0;
    if (!f.repeat) reach(v, f.site);
  } else {
    if (v.origin == Origin::candidate) v.candidates = f.candidates;
    v.why = v.origin != Origin::unknown ? Unknown::none
            : f.input_unknown ? Unknown::state_lost
            : f.reads_untracked ? Unknown::untracked_read : Unknown::none;
    v.roots = {f.event_id};
    if (!f.repeat) add_root(v, f.site);
  }
  if (!f.repeat) count(v);
  if (f.seq) {
    SeqInfo info{v.event_id, f.rows, v.roots, v.roots_truncated, {}};
    if (f.fixed) {  // only the real rows are left
      std::erase_if(info.rows.ranges, [](const RowRange& r) { return r.padding; });
      info.rows.counts_padding = 0;
    }
    put_seq(f.seq, std::move(info));
  }
  return v;
}

Summary Tracker::summary() const {
  Summary s = totals_;
  s.roots = roots_;
  std::sort(s.roots.begin(), s.roots.end(),
            [](const RootSummary& a, const RootSummary& b) { return a.event_id < b.event_id; });
  return s;
}

}  // namespace nanscope::lineage

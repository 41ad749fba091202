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

// Sorted union of two id lists, at most `cap` kept (the smallest: the earliest events).
void union_ids(std::vector<uint64_t>& into, const std::vector<uint64_t>& add, std::size_t cap,
               bool* truncated) {
  std::vector<uint64_t> out;
  std::set_union(into.begin(), into.end(), add.begin(), add.end(), std::back_inserter(out));
  if (out.size() > cap) {
    out.resize(cap);
    *truncated = true;
  }
  into = std::move(out);
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

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
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

const char* origin_name(Origin o) {
  switch (o) {
    case Origin::introduced: return "introduced";
    case Origin::propagated: return "propagated";
    case Origin::host: return "host";
    case Origin::unknown: return "unknown";
  }
  return "unknown";
}

const char* unknown_name(Unknown u) {
  switch (u) {
    case Unknown::none: return "none";
    case Unknown::untracked_read: return "untracked_read";
    case Unknown::state_lost: return "state_lost";
  }
  return "none";
}

Tracker::Tracker(Limits limits) : limits_(limits) {
  limits_.max_buffers = std::max<std::size_t>(limits_.max_buffers, 1);
  limits_.max_roots_per_finding = std::max<std::size_t>(limits_.max_roots_per_finding, 1);
  limits_.max_row_ranges = std::max<std::size_t>(limits_.max_row_ranges, 1);
  lost_.assign(std::max<std::size_t>(limits_.lost_filter_bits, 64) / 64, 0);
}

// --- per-buffer state ---------------------------------------------------------------------

bool Tracker::maybe_lost(uint64_t ptr) const {
  const uint64_t h = mix(ptr), bits = lost_.size() * 64;
  const uint64_t a = h % bits, b = (h >> 32) % bits;
  return (lost_[a / 64] >> (a % 64) & 1) && (lost_[b / 64] >> (b % 64) & 1);
}

void Tracker::set_lost(uint64_t ptr) {
  if (auto it = states_.find(ptr); it != states_.end()) {
    lru_.erase(it->second.lru);
    states_.erase(it);
  }
  const uint64_t h = mix(ptr), bits = lost_.size() * 64;
  const uint64_t a = h % bits, b = (h >> 32) % bits;
  lost_[a / 64] |= uint64_t{1} << (a % 64);
  lost_[b / 64] |= uint64_t{1} << (b % 64);
}

Tracker::Seen Tracker::look(uint64_t ptr, const State** out) {
  if (auto it = states_.find(ptr); it != states_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    *out = &it->second;
    return it->second.nonfinite ? Seen::nonfinite : Seen::clean;
  }
  return maybe_lost(ptr) ? Seen::lost : Seen::clean;
}

Tracker::State& Tracker::put(uint64_t ptr) {
  if (auto it = states_.find(ptr); it != states_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  if (states_.size() >= limits_.max_buffers) {
    const uint64_t victim = lru_.back();
    const bool was_nonfinite = states_.at(victim).nonfinite;
    lru_.pop_back();
    states_.erase(victim);
    ++totals_.evictions;
    // A clean victim needs no memory (unseen buffers are clean); a non-finite one does.
    if (was_nonfinite) set_lost(victim);
  }
  lru_.push_front(ptr);
  State& s = states_[ptr];
  s.lru = lru_.begin();
  return s;
}

void Tracker::set_clean(uint64_t ptr) {
  if (!maybe_lost(ptr)) {
    if (auto it = states_.find(ptr); it != states_.end()) {
      lru_.erase(it->second.lru);
      states_.erase(it);
    }
    return;
  }
  State& s = put(ptr);  // a known-clean entry overrides the lost filter
  s.nonfinite = false;
  s.event_id = 0;
  s.rows = {};
  s.roots.clear();
  s.roots_truncated = false;
}

// --- roots and reach ----------------------------------------------------------------------

void Tracker::count(const Verdict& v) {
  ++totals_.findings;
  switch (v.origin) {
    case Origin::introduced: ++totals_.introduced; break;
    case Origin::propagated: ++totals_.propagated; break;
    case Origin::host: ++totals_.host; break;
    case Origin::unknown: ++totals_.unknown; break;
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
  r.site = site;
  r.buffer = v.buffer;
  r.rows = v.rows_after;
  root_index_.emplace(v.event_id, roots_.size());
  roots_.push_back(std::move(r));
}

void Tracker::reach_buffer(RootSummary& r, uint64_t ptr, uint64_t event_id) {
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
    reach_buffer(r, v.buffer.ptr, v.event_id);
    if (!v.leak) continue;
    ++r.leaks;
    if (!r.first_leak) r.first_leak = RootSummary::Leak{v.event_id, site, v.buffer, v.rows_before, v.rows_after};
  }
}

// --- records ------------------------------------------------------------------------------

std::vector<Verdict> Tracker::on_launch(const KernelLaunch& launch,
                                        const std::vector<ScanResult>& scans) {
  return record(launch, scans, false);
}

std::vector<Verdict> Tracker::record(const KernelLaunch& launch,
                                     const std::vector<ScanResult>& scans, bool host) {
  // Inputs as they were before the launch. Everything is copied out before any state changes.
  std::vector<uint64_t> parents, roots;
  std::vector<const RowSet*> parent_rows;
  bool lost = false, roots_truncated = false, parents_padding_only = true;
  std::vector<uint64_t> seen_inputs;
  for (BufferId in : launch.inputs) {
    if (std::find(seen_inputs.begin(), seen_inputs.end(), in.ptr) != seen_inputs.end()) continue;
    seen_inputs.push_back(in.ptr);
    const State* s = nullptr;
    switch (look(in.ptr, &s)) {
      case Seen::clean: break;
      case Seen::lost: lost = true; break;
      case Seen::nonfinite:
        parents.push_back(s->event_id);
        parent_rows.push_back(&s->rows);
        parents_padding_only = parents_padding_only && padding_only(s->rows);
        roots_truncated = roots_truncated || s->roots_truncated;
        union_ids(roots, s->roots, limits_.max_roots_per_finding, &roots_truncated);
        break;
    }
  }
  std::sort(parents.begin(), parents.end());
  parents.erase(std::unique(parents.begin(), parents.end()), parents.end());
  const RowSet rows_before = merge_rows(parent_rows, limits_.max_row_ranges);

  std::vector<Verdict> out;
  for (const ScanResult& scan : scans) {
    const uint64_t ptr = scan.buffer.ptr;
    if (!scan.nonfinite) {
      set_clean(ptr);  // returned to finite: its lineage closes
      continue;
    }
    Verdict v;
    v.event_id = scan.event_id;
    v.buffer = scan.buffer;
    v.rows_after = scan.rows;
    if (!parents.empty()) {
      v.origin = Origin::propagated;
      v.parents = parents;
      v.roots = roots;
      v.roots_truncated = roots_truncated;
      v.incomplete = lost;
      v.rows_before = rows_before;
      v.leak = !lost && parents_padding_only && rows_known(scan.rows) && scan.rows.counts_real > 0;
      reach(v, launch.site);
    } else {
      v.origin = host ? Origin::host
                 : lost || launch.reads_untracked ? Origin::unknown : Origin::introduced;
      v.why = lost ? Unknown::state_lost
                   : launch.reads_untracked ? Unknown::untracked_read : Unknown::none;
      v.roots = {scan.event_id};
      add_root(v, launch.site);
    }
    count(v);

    if (scan.fixed && !rows_known(scan.rows)) {
      set_lost(ptr);  // zeroed, but nobody knows what is left
    } else if (scan.fixed && scan.rows.counts_real == 0) {
      set_clean(ptr);  // the fix zeroed every non-finite row
    } else {
      State& s = put(ptr);
      s.nonfinite = true;
      s.event_id = scan.event_id;
      s.rows = scan.rows;
      s.roots = v.roots;
      s.roots_truncated = v.roots_truncated;
      if (scan.fixed) {  // only the real rows are left
        std::erase_if(s.rows.ranges, [](const RowRange& r) { return r.padding; });
        s.rows.counts_padding = 0;
      }
    }
    out.push_back(std::move(v));
  }

  // Written but not scanned (a dropped scan): its state is no longer known.
  for (BufferId o : launch.outputs) {
    const bool scanned = std::any_of(scans.begin(), scans.end(),
                                     [&](const ScanResult& s) { return s.buffer == o; });
    if (scanned) continue;
    set_lost(o.ptr);
    ++totals_.outputs_unscanned;
  }
  return out;
}

std::optional<Verdict> Tracker::on_host_write(const ScanResult& after, const Site& site) {
  KernelLaunch host;
  host.site = site;
  host.outputs = {after.buffer};
  std::vector<Verdict> v = record(host, {after}, true);  // no inputs: a host root or clean
  if (v.empty()) return std::nullopt;
  return std::move(v.front());
}

void Tracker::on_copy_device(BufferId dst, BufferId src) {
  if (dst == src) return;
  const State* s = nullptr;
  switch (look(src.ptr, &s)) {
    case Seen::clean: set_clean(dst.ptr); return;
    case Seen::lost: set_lost(dst.ptr); return;
    case Seen::nonfinite: break;
  }
  State copy = *s;  // put() may evict src
  State& d = put(dst.ptr);
  copy.lru = d.lru;
  d = std::move(copy);
  for (uint64_t id : d.roots)
    if (auto it = root_index_.find(id); it != root_index_.end())
      reach_buffer(roots_[it->second], dst.ptr, d.event_id);
}

void Tracker::on_free(BufferId buffer) { set_clean(buffer.ptr); }

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
      union_ids(v.roots, p->roots, limits_.max_roots_per_finding, &v.roots_truncated);
    }
    std::sort(v.parents.begin(), v.parents.end());
    v.parents.erase(std::unique(v.parents.begin(), v.parents.end()), v.parents.end());
    v.incomplete = lost;
    v.rows_before = merge_rows(parent_rows, limits_.max_row_ranges);
    v.leak = !lost && parents_padding_only && rows_known(f.rows) && f.rows.counts_real > 0;
    if (!f.repeat) reach(v, f.site);
  } else {
    v.why = f.host ? Unknown::none
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
  s.buffers = states_.size();
  return s;
}

}  // namespace nanscope::lineage

// The host lineage model (lineage_host_model.hpp): per-buffer states with an LRU bound and a
// Bloom filter, on top of lineage::Tracker's roots, reach and totals.
#include "lineage_host_model.hpp"

#include <algorithm>

namespace nanscope::lineage {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

HostTracker::HostTracker(Limits limits, std::size_t lost_filter_bits) : Tracker(limits) {
  lost_.assign(std::max<std::size_t>(lost_filter_bits, 64) / 64, 0);
}

// --- per-buffer state ---------------------------------------------------------------------

bool HostTracker::maybe_lost(uint64_t ptr) const {
  const uint64_t h = mix(ptr), bits = lost_.size() * 64;
  const uint64_t a = h % bits, b = (h >> 32) % bits;
  return (lost_[a / 64] >> (a % 64) & 1) && (lost_[b / 64] >> (b % 64) & 1);
}

void HostTracker::set_lost(uint64_t ptr) {
  if (auto it = states_.find(ptr); it != states_.end()) {
    lru_.erase(it->second.lru);
    states_.erase(it);
  }
  const uint64_t h = mix(ptr), bits = lost_.size() * 64;
  const uint64_t a = h % bits, b = (h >> 32) % bits;
  lost_[a / 64] |= uint64_t{1} << (a % 64);
  lost_[b / 64] |= uint64_t{1} << (b % 64);
}

HostTracker::Seen HostTracker::look(uint64_t ptr, const State** out) {
  if (auto it = states_.find(ptr); it != states_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    *out = &it->second;
    return it->second.nonfinite ? Seen::nonfinite : Seen::clean;
  }
  return maybe_lost(ptr) ? Seen::lost : Seen::clean;
}

HostTracker::State& HostTracker::put(uint64_t ptr) {
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

void HostTracker::set_clean(uint64_t ptr) {
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

// --- records ------------------------------------------------------------------------------

std::vector<Verdict> HostTracker::on_launch(const KernelLaunch& launch, const std::vector<ScanResult>& scans) {
  return record(launch, scans, false);
}

// Inputs as they were before the launch. Everything is copied out before any state changes.
HostTracker::Inputs HostTracker::read_inputs(const KernelLaunch& launch) {
  Inputs in;
  std::vector<uint64_t> seen;
  for (BufferId b : launch.inputs) {
    if (std::find(seen.begin(), seen.end(), b.ptr) != seen.end()) continue;
    seen.push_back(b.ptr);
    const State* s = nullptr;
    switch (look(b.ptr, &s)) {
      case Seen::clean: break;
      case Seen::lost: in.lost = true; break;
      case Seen::nonfinite:
        in.parents.push_back(s->event_id);
        in.parent_rows.push_back(&s->rows);
        in.parents_padding_only = in.parents_padding_only && padding_only(s->rows);
        in.roots_truncated = in.roots_truncated || s->roots_truncated;
        union_roots(in.roots, s->roots, limits_.max_roots_per_finding, &in.roots_truncated);
        break;
    }
  }
  std::sort(in.parents.begin(), in.parents.end());
  in.parents.erase(std::unique(in.parents.begin(), in.parents.end()), in.parents.end());
  return in;
}

// The buffer's state after a non-finite scan.
void HostTracker::keep(const ScanResult& scan, const Verdict& v) {
  const uint64_t ptr = scan.buffer.ptr;
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
}

std::vector<Verdict> HostTracker::record(const KernelLaunch& launch, const std::vector<ScanResult>& scans,
                                         bool host) {
  const Inputs in = read_inputs(launch);
  const RowSet rows_before = merge_rows(in.parent_rows, limits_.max_row_ranges);
  std::vector<Verdict> out;
  for (const ScanResult& scan : scans) {
    if (!scan.nonfinite) {
      set_clean(scan.buffer.ptr);  // returned to finite: its lineage closes
      continue;
    }
    Verdict v;
    v.event_id = scan.event_id;
    v.buffer = scan.buffer;
    v.rows_after = scan.rows;
    if (!in.parents.empty()) {
      v.origin = Origin::propagated;
      v.parents = in.parents;
      v.roots = in.roots;
      v.roots_truncated = in.roots_truncated;
      v.incomplete = in.lost;
      v.rows_before = rows_before;
      v.leak = !in.lost && in.parents_padding_only && rows_known(scan.rows) && scan.rows.counts_real > 0;
      reach(v, launch.site);
    } else {
      v.origin = host ? Origin::host : in.lost || launch.reads_untracked ? Origin::unknown : Origin::introduced;
      v.why = in.lost ? Unknown::state_lost : launch.reads_untracked ? Unknown::untracked_read : Unknown::none;
      v.roots = {scan.event_id};
      add_root(v, launch.site);
    }
    count(v);
    keep(scan, v);
    out.push_back(std::move(v));
  }
  // Written but not scanned (a dropped scan): its state is no longer known.
  for (BufferId o : launch.outputs) {
    const bool scanned = std::any_of(scans.begin(), scans.end(), [&](const ScanResult& s) { return s.buffer == o; });
    if (scanned) continue;
    set_lost(o.ptr);
    ++outputs_unscanned_;
  }
  return out;
}

std::optional<Verdict> HostTracker::on_host_write(const ScanResult& after, const Site& site) {
  KernelLaunch host;
  host.site = site;
  host.outputs = {after.buffer};
  std::vector<Verdict> v = record(host, {after}, true);  // no inputs: a host root or clean
  if (v.empty()) return std::nullopt;
  return std::move(v.front());
}

void HostTracker::on_copy_device(BufferId dst, BufferId src) {
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
  for (uint64_t id : d.roots) reach_buffer(id, dst.ptr, d.event_id);
}

void HostTracker::on_free(BufferId buffer) { set_clean(buffer.ptr); }

HostSummary HostTracker::summary() const {
  HostSummary s;
  static_cast<Summary&>(s) = Tracker::summary();
  s.outputs_unscanned = outputs_unscanned_;
  s.buffers = states_.size();
  return s;
}

}  // namespace nanscope::lineage

// Aggregation: each event of the logs folded into processes, sites, kernels and graphs, and
// the questions the renderers ask of the result. Reading the logs is read_log.cpp.
#include <algorithm>

#include <nlohmann/json.hpp>
#include <ostream>

#include "launch_site.hpp"
#include "model.hpp"
#include "ranks.hpp"
#include "trace.hpp"
#include "util.hpp"

namespace nanscope::report {

namespace {
void sat_inc(std::int64_t& x, std::int64_t n) { x = sat_add(x, n); }
constexpr std::size_t kRecent = 4096;             // parents resolvable beyond the site map
constexpr std::size_t kMaxReplays = 256;   // per graph: replays listed one by one
constexpr std::size_t kMaxDumps = 1000;
}  // namespace

// ---- TimeHist ---------------------------------------------------------------------------

void TimeHist::add(std::uint32_t kernel, std::int64_t ts, const RegionCounts& c) {
  if (ts < 0) ts = 0;
  if (k_.size() <= kernel) k_.resize(kernel + 1), last_.resize(kernel + 1);
  std::int64_t idx = ts >> shift_;
  if (last_[kernel].idx == idx && idx >= lo_ && idx <= hi_) {
    *last_[kernel].c += c;
    return;
  }
  lo_ = std::min(lo_, idx);
  hi_ = std::max(hi_, idx);
  while (hi_ - lo_ + 1 > kBuckets) {  // widen the buckets: merge neighbours
    ++shift_;
    lo_ >>= 1;
    hi_ >>= 1;
    idx >>= 1;
    for (auto& m : k_) {
      std::map<std::int64_t, RegionCounts> merged;
      for (auto& [b, v] : m) merged[b >> 1] += v;
      m.swap(merged);
    }
    for (auto& l : last_) l = {};
  }
  RegionCounts& b = k_[kernel][idx];
  b += c;
  last_[kernel] = {idx, &b};
}

// ---- Analysis ---------------------------------------------------------------------------

Analysis::Analysis(const Options& o) : opt(o) {
  if (!opt.kernel_regex.empty()) kernel_re_ = SafeRegex::compile(opt.kernel_regex, nullptr);  // run() checked it
  if (!opt.trace_path.empty()) trace = std::make_unique<TraceSink>(opt.trace_path);
}

Analysis::~Analysis() = default;

bool Analysis::in_window(std::int64_t ts) const {
  if (opt.since && ts < *opt.since) return false;
  if (opt.until && ts > *opt.until) return false;
  return true;
}

std::uint32_t Analysis::proc_of(std::uint32_t file, const Event& e) {
  auto key = std::make_pair(file, e.pid);
  auto it = proc_index_.find(key);
  if (it != proc_index_.end()) {
    Proc& p = procs[it->second];
    if (p.rank < 0 && e.rank >= 0) p.rank = e.rank;
    if (p.local_rank < 0 && e.local_rank >= 0) p.local_rank = e.local_rank;
    return it->second;
  }
  auto idx = static_cast<std::uint32_t>(procs.size());
  Proc p;
  p.pid = e.pid;
  p.rank = e.rank;
  p.local_rank = e.local_rank;
  p.file = file;
  procs.push_back(std::move(p));
  proc_index_.emplace(key, idx);
  return idx;
}

std::uint32_t Analysis::kernel_of(const std::string& name) {
  std::uint64_t h = std::hash<std::string_view>{}(name);
  for (;; ++h) {
    const std::uint32_t* at = kernel_index_.find(h);
    if (!at) break;
    if (kernels[*at].name == name) return *at;
  }
  auto idx = static_cast<std::uint32_t>(kernels.size());
  KernelAgg k;
  k.name = name;
  k.selected = !kernel_re_ || kernel_re_->search(name);
  kernels.push_back(std::move(k));
  kernel_index_.insert(h, idx);
  return idx;
}

std::uint32_t Analysis::stream_of(Proc& p, const std::string& s) {
  for (std::size_t i = 0; i < p.streams.size(); ++i)
    if (p.streams[i] == s) return static_cast<std::uint32_t>(i);
  p.streams.push_back(s);
  return static_cast<std::uint32_t>(p.streams.size() - 1);
}

std::uint32_t Analysis::site_of(std::uint32_t proc, std::uint32_t kernel, const Event& e, std::int64_t line,
                                bool* created) {
  // Same kernel, argument, buffer, region and rows (the `repeat` identity of the schema).
  key_.clear();
  auto num = [&](std::int64_t v) {
    key_.append(reinterpret_cast<const char*>(&v), sizeof v);
  };
  num(proc);
  num(kernel);
  num(e.buffer.arg);
  key_ += e.buffer.ptr;
  key_ += '\0';
  key_ += char(e.region);
  for (auto& r : e.rows_real) num(r.first), num(r.second);
  key_ += '|';
  for (auto& r : e.rows_padding) num(r.first), num(r.second);
  std::uint64_t h = std::hash<std::string_view>{}(key_);
  for (;; ++h) {
    const std::uint32_t* at = site_index_.find(h);
    if (!at) break;
    if (site_keys_[*at] == key_) {
      *created = false;
      return *at;
    }
  }
  *created = true;
  auto idx = static_cast<std::uint32_t>(sites.size());
  Site s;
  s.proc = proc;
  s.kernel = kernel;
  s.stream = stream_of(procs[proc], e.stream.empty() ? std::string("0x0") : e.stream);
  s.first_id = e.id;
  s.first_ts = e.ts_ns;
  s.first_line = line;
  s.region = e.region;
  s.origin = e.origin;
  s.arg = e.buffer.arg;
  s.buffer_name = e.buffer.name;
  s.dtype = e.buffer.dtype;
  if (const auto py = python_site(e.python_json)) s.python = python_site_short(*py);
  s.rows_real = e.rows_real;
  s.rows_padding = e.rows_padding;
  s.has_graph = e.has_field(h_graph_id);
  s.graph_id = e.graph_id;
  s.graph_node = e.graph_node;
  sites.push_back(std::move(s));
  site_index_.insert(h, idx);
  site_keys_.push_back(key_);
  kernels[kernel].sites++;
  return idx;
}

std::uint32_t Analysis::graph_of(std::uint32_t proc, std::int64_t graph_id) {
  auto key = std::make_pair(proc, graph_id);
  auto it = graph_index_.find(key);
  if (it != graph_index_.end()) return it->second;
  auto idx = static_cast<std::uint32_t>(graphs.size());
  GraphAgg g;
  g.proc = proc;
  g.graph_id = graph_id;
  graphs.push_back(std::move(g));
  graph_index_.emplace(key, idx);
  return idx;
}

namespace {

// Splits an event's non-finite values by region (documented in docs/report.md).
RegionCounts split_of(const Event& e) {
  RegionCounts r;
  std::int64_t total = e.counts.total();
  if (e.has_field(h_counts_padding) || e.has_field(h_counts_real)) {
    r.padding = e.counts_padding;
    r.real = e.counts_real;
    r.unknown = std::max<std::int64_t>(0, sat_sub(sat_sub(total, r.padding), r.real));
    return r;
  }
  switch (e.region) {
    case Region::padding: r.padding = total; break;
    case Region::real:
    case Region::mixed: r.real = total; break;
    default: r.unknown = total;
  }
  return r;
}

TraceRec trace_rec(TraceRec::Type type, std::uint32_t proc, std::uint32_t stream, std::uint32_t site, const Event& e) {
  TraceRec r;
  r.type = type;
  r.proc = proc;
  r.stream = stream;
  r.site = site;
  r.ts = e.ts_ns;
  r.id = e.id;
  return r;
}

// A site's leak is its earliest leaking finding.
void note_leak(Site& s, const Event& e) {
  if (!s.leak || e.ts_ns < s.leak_ts) {
    s.leak = true;
    s.leak_ts = e.ts_ns;
    s.leak_id = e.id;
  }
}

TraceRec finding_trace_rec(std::uint32_t proc, std::uint32_t stream, std::uint32_t site, const Event& e) {
  TraceRec r = trace_rec(TraceRec::finding, proc, stream, site, e);
  r.region = std::uint8_t(e.region);
  r.origin = std::uint8_t(e.origin);
  r.leak = e.leak;
  r.a = e.counts.nan;
  r.b = e.counts.pos_inf;
  r.c = e.counts.neg_inf;
  r.launch = e.launch_id;
  r.replay = e.has_field(h_replay) ? e.replay : -1;
  return r;
}

}  // namespace

void Analysis::count(Site& s, std::uint32_t site_idx, Proc& p, std::int64_t ts, std::int64_t n, const Counts& c,
                     const RegionCounts& split, int fixed, bool has_replay, std::int64_t replay_lo,
                     std::int64_t replay_hi) {
  KernelAgg& k = kernels[s.kernel];
  bool real = s.region == Region::real || s.region == Region::mixed;
  sat_inc(k.findings, n);
  k.counts += c;
  k.split += split;
  if (k.first_ts == kNoTime || ts < k.first_ts) k.first_ts = ts;
  if (k.last_ts == kNoTime || ts > k.last_ts) k.last_ts = ts;
  if (fixed > 0) sat_inc(k.fixed_yes, n);
  else if (fixed == 0) sat_inc(k.fixed_no, n);
  if (real) sat_inc(k.real_findings, n);
  std::int64_t who = p.rank >= 0 ? p.rank : -1 - p.pid;
  if (std::find(k.ranks.begin(), k.ranks.end(), who) == k.ranks.end() && k.ranks.size() < 4096)
    k.ranks.push_back(who);
  sat_inc(p.findings, n);
  sat_inc(totals.findings, n);
  totals.counts += c;
  totals.split += split;
  if (real) sat_inc(totals.real_findings, n);
  hist.add(s.kernel, ts, split);
  if (s.has_graph) {
    GraphAgg& g = graphs[graph_of(s.proc, s.graph_id)];
    sat_inc(g.findings, n);
    if (std::find(g.nodes.begin(), g.nodes.end(), s.graph_node) == g.nodes.end() && g.nodes.size() < 1024)
      g.nodes.push_back(s.graph_node);
    if (has_replay) {
      g.replay_min = std::min(g.replay_min, replay_lo);
      g.replay_max = std::max(g.replay_max, replay_hi);
      if (replay_lo == replay_hi) {
        auto it = g.replays.find(replay_lo);
        if (it != g.replays.end()) sat_inc(it->second, n);
        else if (g.replays.size() < kMaxReplays) g.replays.emplace(replay_lo, n);
        else g.replays_capped = true;
      } else {
        g.replays_capped = true;  // a repeat over a replay range: exact per-replay split unknown
      }
    }
  }
  (void)site_idx;
}

void Analysis::on_nonfinite(std::uint32_t file, std::int64_t line) {
  const Event& e = ev_;
  std::uint32_t pi = proc_of(file, e);
  std::uint32_t ki = kernel_of(e.kernel);
  bool created = false;
  std::uint32_t si = site_of(pi, ki, e, line, &created);
  Proc& p = procs[pi];
  Site& s = sites[si];
  if (created) {
    s.first_counts = e.counts;
    s.first_split = split_of(e);
    p.site_first.emplace(e.id, si);
  }
  s.events_unfiltered++;
  sat_inc(p.logged_findings, 1);
  p.logged_counts += e.counts;
  std::uint32_t stream = created ? s.stream : stream_of(p, e.stream.empty() ? std::string("0x0") : e.stream);
  if (p.recent.empty()) p.recent.resize(kRecent);
  p.recent[std::size_t(e.id) % kRecent] = {e.id, e.ts_ns, si, stream};
  if (e.has_field(h_origin)) any_origin = true;
  keep_for_causes(e, file, pi, si, line);
  // The site's kind of infinity, before the filters: its repeats in the window are judged by it.
  const bool fault = is_fault(e);
  if (!fault && s.quiet_inf == InfKind::none) s.quiet_inf = e.inf;
  if (e.has_field(h_dump) && dump_want_id && *dump_want_id == e.id && (!dump_want_pid || *dump_want_pid == e.pid))
    dump_hits.push_back({pi, file, e.id, e.ts_ns, e.kernel, e.dump});

  if (!in_window(e.ts_ns) || !kernels[ki].selected) {
    totals.filtered_out++;
    return;
  }
  RegionCounts split = split_of(e);
  s.events++;
  kernels[ki].events++;
  count(s, si, p, e.ts_ns, 1, e.counts, split, e.has_field(h_fixed) ? (e.fixed ? 1 : 0) : -1,
        e.has_field(h_replay), e.replay, e.replay);
  count_verdict(s, fault, fault ? InfKind::none : e.inf, 1, e.counts);
  note_verdicts(e, fault, s, pi);

  if (e.leak) {
    totals.leaks++;
    note_leak(s, e);
  }
  if (!defer_collective(e, file, pi, si, line, stream)) note_first_causes(e, file, pi, si, line);

  if (e.has_field(h_dump)) {
    if (dumps.size() < kMaxDumps) dumps.push_back({pi, file, e.id, e.ts_ns, e.kernel, e.dump});
    else dumps_more++;
  }

  link_parents(e, pi, si, stream);
  if (trace) trace->put(finding_trace_rec(pi, stream, si, e));
}

// Lineage: resolves each parent of finding `e` (at site si) to its site, through the process's
// recent findings or the first finding of each site, and adds the parent -> child edge (and,
// with a trace, the flow between their slices).
void Analysis::link_parents(const Event& e, std::uint32_t pi, std::uint32_t si, std::uint32_t stream) {
  Proc& p = procs[pi];
  for (std::int64_t parent : e.parents) {
    const Proc::Recent* hit = nullptr;
    Proc::Recent tmp;
    auto& rc = p.recent[std::size_t(parent) % kRecent];
    if (rc.id == parent) {
      hit = &rc;
    } else if (auto it = p.site_first.find(parent); it != p.site_first.end()) {
      const Site& ps = sites[it->second];
      tmp = {parent, ps.first_ts, it->second, ps.stream};
      hit = &tmp;
    }
    if (!hit) {
      totals.unresolved_parents++;
      continue;
    }
    if (hit->site != si) edges[(std::uint64_t(hit->site) << 32) | si]++;
    if (trace) {
      TraceRec r = trace_rec(TraceRec::flow, pi, stream, si, e);
      r.a = parent;
      r.from_ts = hit->ts;
      r.from_stream = hit->stream;
      r.from_site = hit->site;
      trace->put(r);
    }
  }
}

// The site a repeat belongs to: the site of the event it names, else (the engine kept two sites
// that this report sees as one, or the first event is not in the input) the site its identity
// names (kernel, buffer, region, rows: nanscope writes them since repeats carry counts).
bool Analysis::repeat_site(std::uint32_t pi, const Event& e, std::int64_t line, std::uint32_t* si) {
  Proc& p = procs[pi];
  if (auto it = p.site_first.find(e.of); it != p.site_first.end()) {
    *si = it->second;
    return true;
  }
  if (!e.has_field(h_kernel) || !e.has_field(h_buffer)) return false;
  bool created = false;
  *si = site_of(pi, kernel_of(e.kernel), e, line, &created);
  if (created) sites[*si].first_id = e.of;
  p.site_first.emplace(e.of, *si);
  return true;
}

void Analysis::on_repeat(std::uint32_t file, std::int64_t line) {
  const Event& e = ev_;
  std::uint32_t pi = proc_of(file, e), si = 0;
  if (!repeat_site(pi, e, line, &si)) {
    totals.orphan_repeats++;
    return;
  }
  Proc& p = procs[pi];
  Site& s = sites[si];
  // A repeat with `counts` says what it folded; an older one is read as copies of its first event.
  const bool own_counts = e.has_field(h_counts);
  const Counts c = own_counts ? e.counts : s.first_counts.times(e.count);
  const RegionCounts split = own_counts ? split_of(e) : s.first_split.times(e.count);
  if (!own_counts && e.count > 0) p.repeats_without_counts = true;
  sat_inc(p.logged_findings, e.count);
  p.logged_counts += c;
  sat_inc(s.folded_unfiltered, e.count);
  s.reported_total = std::max(s.reported_total, e.total);
  if (!in_window(e.ts_ns) || !kernels[s.kernel].selected) {
    totals.filtered_out++;
    return;
  }
  sat_inc(s.folded, e.count);
  sat_inc(kernels[s.kernel].folded, e.count);
  sat_inc(totals.folded, e.count);
  bool has_replay = e.has_field(h_first_replay) || e.has_field(h_last_replay);
  std::int64_t lo = e.has_field(h_first_replay) ? e.first_replay : e.last_replay;
  std::int64_t hi = e.has_field(h_last_replay) ? e.last_replay : e.first_replay;
  count(s, si, p, e.ts_ns, e.count, c, split, -1, has_replay, lo, hi);
  // A repeat carries no `inf`: it is a fault unless its site's infinities are not and it holds no NaN.
  const bool fault = opt.inf_faults || s.quiet_inf == InfKind::none || (own_counts && c.nan > 0);
  count_verdict(s, fault, s.quiet_inf, e.count, c);
  if (trace) {
    TraceRec r = trace_rec(TraceRec::repeat, pi, s.stream, si, e);
    r.region = std::uint8_t(s.region);
    r.a = e.count;
    r.b = e.total;
    r.c = e.of;
    trace->put(r);
  }
}

// summary.coverage, already validated as JSON by the line parser; a member of the wrong type
// leaves that figure 0 rather than failing the report.
static void read_coverage(const std::string& text, Proc::Coverage& c) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  auto num = [](const nlohmann::json& o, const char* key) -> std::int64_t {
    const auto it = o.find(key);
    // Negative figures are not counts (a hostile log): 0, like a member of the wrong type.
    return it != o.end() && it->is_number_integer() ? std::max<std::int64_t>(0, it->get<std::int64_t>()) : 0;
  };
  auto text_of = [](const nlohmann::json& o, const char* key) -> std::string {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? printable(it->get<std::string>()) : std::string();
  };
  c.present = true;
  c.launches = num(j, "launches");
  c.bytes_written = num(j, "bytes_written_decoded");
  c.bytes_written_scanned = num(j, "bytes_written_decoded_scanned");
  c.replays_sentinel_only = num(j, "graph_replays_sentinel_only");
  c.replays_every_scan = num(j, "graph_replays_every_scan");
  if (const auto by = j.find("by_inspection"); by != j.end() && by->is_object()) {
    c.decoded = num(*by, "decoded"), c.typed = num(*by, "typed"), c.watched = num(*by, "watched");
    c.opaque = num(*by, "opaque"), c.mismatch = num(*by, "layout_mismatch"), c.library = num(*by, "library");
    c.extent_unknown = num(*by, "extent_unknown"), c.excluded = num(*by, "excluded");
    c.sampled_out = num(*by, "sampled_out"), c.compile_time = num(*by, "compile_time");
  }
  if (const auto top = j.find("not_inspected_top"); top != j.end() && top->is_array())
    for (const auto& k : *top)
      if (k.is_object())
        c.top.push_back({text_of(k, "kernel"), text_of(k, "reason"), num(k, "launches")});
}

void Analysis::on_summary(Proc& p) {
  const Event& e = ev_;
  p.summarized = true;
  p.launches = e.launches;
  p.scans = e.scans;
  p.findings_reported = e.findings;
  p.scans_dropped = e.scans_dropped;
  p.overflow = e.overflow;
  p.kernels_inspected = e.kernels_inspected;
  p.kernels_not_inspected = e.kernels_not_inspected;
  p.duration_ns = e.duration_ns;
  p.summary_counts = e.counts;
  p.summary_has_faults = e.has_field(h_faults) || e.has_field(h_infinities);
  p.summary_faults = e.faults;
  p.summary_inf_intended = e.infinities_intended;
  p.summary_inf_arithmetic = e.infinities_arithmetic;
  if (!e.coverage_json.empty()) read_coverage(e.coverage_json, p.coverage);
}


void Analysis::on_start(Proc& p) {
  const Event& e = ev_;
  p.started = true;
  p.argv0 = e.argv0;
  p.version = e.version;
  p.attach = e.attach;
  if (p.first_ts == kNoTime) p.first_ts = e.ts_ns;
}

const char* Proc::summary_mismatch_reason() const {
  if (repeats_without_counts)
    return "this log's repeats carry no counts (older nanscope): folded findings are counted as copies of the "
           "event they repeat, so these totals are estimates";
  if (logged_findings < findings_reported)
    return "events are missing (a truncated log, or a process that died before its closing repeats): these totals "
           "are a lower bound";
  return "the events add up to more than the summary (a log appended to or edited?)";
}

std::string Analysis::proc_label(std::uint32_t i) const {
  const Proc& p = procs[i];
  std::string s;
  if (p.rank >= 0) s = "rank " + std::to_string(p.rank) + " ";
  s += "pid " + std::to_string(p.pid);
  return s;
}

std::vector<std::uint32_t> Analysis::lineage_roots() const {
  std::vector<char> has_parent(sites.size(), 0), has_child(sites.size(), 0);
  for (auto& [k, n] : edges) has_child[k >> 32] = has_parent[std::uint32_t(k)] = 1;
  std::vector<std::uint32_t> roots;
  const FirstCause first = first_cause();
  const Snapshot* fc = first.shown;
  if (fc) roots.push_back(fc->site);
  for (std::uint32_t i = 0; i < sites.size(); ++i)
    if (has_child[i] && !has_parent[i] && (!fc || i != fc->site)) roots.push_back(i);
  std::sort(roots.begin() + (fc ? 1 : 0), roots.end(),
            [&](auto x, auto y) { return sites[x].first_ts < sites[y].first_ts; });
  return roots;
}

std::vector<std::vector<std::uint32_t>> Analysis::lineage_children() const {
  std::vector<std::vector<std::uint32_t>> children(sites.size());
  for (auto& [k, n] : edges) children[k >> 32].push_back(std::uint32_t(k));
  for (auto& c : children)
    std::sort(c.begin(), c.end(), [&](auto x, auto y) { return sites[x].first_ts < sites[y].first_ts; });
  return children;
}

}  // namespace nanscope::report

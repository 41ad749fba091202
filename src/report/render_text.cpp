// Terminal output.
#include <algorithm>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "launch_site.hpp"
#include "model.hpp"
#include "ranks.hpp"
#include "util.hpp"
#include "verdict_text.hpp"

namespace nanscope::report {

namespace {

struct Style {
  bool on;
  std::string operator()(const char* code, std::string_view s) const {
    if (!on) return std::string(s);
    return std::string("\033[") + code + "m" + std::string(s) + "\033[0m";
  }
};

// A table whose columns are sized to their content (display width, not bytes).
class Table {
 public:
  explicit Table(std::vector<std::string> head, std::vector<bool> right) : head_(std::move(head)), right_(std::move(right)) {}
  void row(std::vector<std::string> r) { rows_.push_back(std::move(r)); }
  void print(std::ostream& out, const Style& st, const std::string& indent = "  ") const {
    std::vector<std::size_t> w(head_.size());
    for (std::size_t c = 0; c < head_.size(); ++c) {
      w[c] = display_width(head_[c]);
      for (auto& r : rows_) w[c] = std::max(w[c], display_width(r[c]));
    }
    auto line = [&](const std::vector<std::string>& r, bool header) {
      std::string s = indent;
      for (std::size_t c = 0; c < r.size(); ++c) {
        bool last = c + 1 == r.size();
        std::string cell = (last && !right_[c]) ? r[c] : pad(r[c], w[c], right_[c]);
        s += header ? st("2", cell) : cell;
        if (!last) s += "  ";
      }
      out << s << '\n';
    };
    line(head_, true);
    for (auto& r : rows_) line(r, false);
  }

 private:
  std::vector<std::string> head_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

std::string num(std::int64_t v) { return group_digits(v); }

std::string when(const Analysis& a, std::int64_t ts) {
  if (ts == kNoTime) return "-";
  return rel_time(ts - a.t0);
}

std::string rows_line(const Event& e) {
  std::string s;
  if (!e.rows_real.empty()) s += "real " + ranges_str(e.rows_real);
  if (!e.rows_padding.empty()) s += std::string(s.empty() ? "" : " · ") + "padding " + ranges_str(e.rows_padding);
  if (e.rows_truncated) s += " (truncated)";
  if (e.has_field(h_rows_total)) s += " of " + num(e.rows_total) + " rows";
  return s;
}

// The card's key-value lines; an empty value prints nothing.
struct Card {
  std::ostream& out;
  const Style& st;
  void operator()(const char* k, const std::string& v) const {
    if (!v.empty()) out << "  " << st("2", pad(k, 8)) << ' ' << v << '\n';
  }
};

// Where and what the event is: kernel, Python line, process, time, launch, buffer, values, rows.
void event_lines(const Analysis& a, const Snapshot& fc, const Card& kv) {
  const Event& e = fc.ev;
  kv("kernel", kv.st("1", e.kernel));
  if (const auto py = python_site(e.python_json)) kv("python", python_site_text(*py));
  std::string where = a.proc_label(fc.proc);
  if (e.local_rank >= 0) where += " (local rank " + std::to_string(e.local_rank) + ")";
  where += " · device " + std::to_string(e.device) + " · stream " + (e.stream.empty() ? "?" : e.stream);
  kv("where", where);
  kv("when", iso8601(e.ts_ns) + "  (" + rel_time(e.ts_ns - a.t0) + " into the logs)");
  std::string launch;
  if (e.has_field(h_launch_id)) launch = "#" + std::to_string(e.launch_id);
  if (e.has_field(h_correlation_id)) launch += " (correlation " + std::to_string(e.correlation_id) + ")";
  if (e.has_field(h_graph_id)) {
    launch += " · graph " + std::to_string(e.graph_id);
    if (e.has_field(h_graph_node)) launch += " node " + std::to_string(e.graph_node);
    if (e.has_field(h_replay)) launch += " replay " + std::to_string(e.replay);
  }
  kv("launch", launch);
  std::string buf = "arg " + std::to_string(e.buffer.arg);
  if (!e.buffer.name.empty()) buf += " \"" + e.buffer.name + "\"";
  if (!e.buffer.dtype.empty()) buf += " " + e.buffer.dtype;
  if (e.buffer.elements) buf += " × " + num(e.buffer.elements);
  if (!e.buffer.ptr.empty()) buf += " @ " + e.buffer.ptr;
  kv("buffer", buf);
  kv("values", num(e.counts.nan) + " NaN, " + num(e.counts.pos_inf) + " +Inf, " + num(e.counts.neg_inf) +
                   " -Inf (elements " + num(e.first_index) + ".." + num(e.last_index) + ")");
  std::string region = e.region == Region::none ? std::string("not recorded") : region_name(e.region);
  if (e.has_field(h_counts_padding) || e.has_field(h_counts_real))
    region += " (" + num(e.counts_real) + " in real rows, " + num(e.counts_padding) + " in padding rows)";
  kv("region", region);
  kv("rows", rows_line(e));
}

// How the event came to be the first cause: the intended infinities its inputs held, the
// values a preexisting finding found, the fault it led to, the causes not kept.
void cause_lines(const FirstCause& fc, const Card& kv) {
  for (const Snapshot* s : fc.intended) kv("inputs", intended_text(*s));
  if (fc.preexisting) kv("left by", last_writer_text(*fc.preexisting));
  if (fc.fault) kv("led to", led_to_text(*fc.fault));
  kv("cause", not_kept_text(fc.not_kept));
}

// Other processes with a first cause of their own.
void also_lines(const Analysis& a, const Snapshot& shown, std::ostream& out, const Style& st) {
  std::vector<std::pair<const Snapshot*, std::string>> others;
  for (std::uint32_t i = 0; i < a.procs.size(); ++i) {
    const FirstCause o = a.first_cause_of(i);
    if (o && o.shown->proc != shown.proc) others.emplace_back(o.shown, o.label);
  }
  std::sort(others.begin(), others.end(), [](auto& x, auto& y) { return x.first->ev.ts_ns < y.first->ev.ts_ns; });
  for (std::size_t i = 0; i < others.size() && i < 8; ++i) {
    const Snapshot* o = others[i].first;
    out << "  " << st("2", pad(i == 0 ? "also" : "", 8)) << ' ' << a.proc_label(o->proc) << ' ' << others[i].second
        << " at " << rel_time(o->ev.ts_ns - a.t0) << " (" << rel_time(o->ev.ts_ns - shown.ev.ts_ns) << " after): "
        << shorten_kernel(o->ev.kernel, 60) << '\n';
  }
  if (others.size() > 8) out << "           … and " << others.size() - 8 << " more processes\n";
}

void first_cause(const Analysis& a, std::ostream& out, const Style& st) {
  const FirstCause first = a.first_cause();
  if (!first) {
    out << st("1;32", "FIRST CAUSE") << "  " << no_first_cause_text(a);
    if (a.totals.filtered_out) out << " (" << num(a.totals.filtered_out) << " events outside the filters)";
    out << "\n\n";
    return;
  }
  const Snapshot& fc = *first.shown;
  const Event& e = fc.ev;
  out << st("1;31", "FIRST CAUSE") << "  " << first.label << '\n';
  const Card kv{out, st};
  event_lines(a, fc, kv);
  const std::string at = "event " + std::to_string(e.id) + " at " + a.files[fc.file] + ":" + std::to_string(fc.line);
  if (e.origin_why == schema::origin_why_str::sentinel)  // its upstream was not scanned: no origin to name
    kv("seen", at + "  (a replay that ran only the sentinel scans)");
  else
    kv("origin", std::string(e.origin == Origin::none ? "not recorded" : origin_name(e.origin)) + " · " + at);
  if (e.origin == Origin::candidate)
    kv("candidates", candidates_text(candidate_refs(e.candidates_json), 80) +
                         "  (may have written these values; not proven)");
  if (!e.dump.empty()) kv("dump", e.dump + "  (nanscope report --dump " + std::to_string(e.id) + ")");
  cause_lines(first, kv);
  kv("across", cross_rank_note(a, fc));
  also_lines(a, fc, out, st);
  out << '\n';
}

void lineage(const Analysis& a, std::ostream& out, const Style& st) {
  if (a.edges.empty()) return;
  auto children = a.lineage_children();
  std::vector<char> seen(a.sites.size(), 0);
  int printed = 0;
  out << st("1", "LINEAGE") << " (from each origin to what it propagated into)\n";
  for (std::uint32_t root : a.lineage_roots()) {
    if (children[root].empty() || seen[root]) continue;
    std::vector<std::tuple<std::uint32_t, int, std::uint32_t>> stack{{root, 0, root}};  // site, depth, parent
    while (!stack.empty() && printed < 24) {
      auto [si, depth, parent] = stack.back();
      stack.pop_back();
      if (seen[si]++) continue;
      const Site& s = a.sites[si];
      out << "  " << std::string(std::size_t(depth) * 2, ' ') << (depth ? "└ " : "") << pad(when(a, s.first_ts), 12, true)
          << "  " << a.proc_label(s.proc) << "  " << shorten_kernel(a.kernels[s.kernel].name, 48) << "  arg " << s.arg;
      if (!s.python.empty()) out << "  @ " << s.python;
      if (s.region != Region::none) out << "  " << region_name(s.region);
      if (s.origin != Origin::none) out << " (" << origin_name(s.origin) << ")";
      if (s.leak) out << st("1;33", "  LEAK padding→real");
      if (const std::string via = cross_rank_via(a, parent, si); !via.empty()) out << "  " << via;
      out << '\n';
      ++printed;
      auto& ch = children[si];
      for (auto it = ch.rbegin(); it != ch.rend(); ++it)
        if (depth < 16) stack.push_back({*it, depth + 1, si});
    }
  }
  if (printed >= 24) out << "  … (see --format json or --html for the full lineage)\n";
  out << '\n';
}

void leaks(const Analysis& a, std::ostream& out, const Style& st) {
  std::vector<std::uint32_t> l;
  for (std::uint32_t i = 0; i < a.sites.size(); ++i)
    if (a.sites[i].leak) l.push_back(i);
  out << st("1", "LEAK POINTS") << " (non-finite values crossing from padding rows into real rows)";
  if (l.empty()) {
    out << ": none\n\n";
    return;
  }
  out << '\n';
  std::sort(l.begin(), l.end(), [&](auto x, auto y) { return a.sites[x].leak_ts < a.sites[y].leak_ts; });
  Table t({"when", "process", "kernel", "buffer", "real rows", "event"}, {true, false, false, false, false, true});
  for (std::size_t i = 0; i < l.size() && i < 50; ++i) {
    const Site& s = a.sites[l[i]];
    std::string buf = "arg " + std::to_string(s.arg) + (s.buffer_name.empty() ? "" : " " + s.buffer_name);
    t.row({when(a, s.leak_ts), a.proc_label(s.proc), shorten_kernel(a.kernels[s.kernel].name, 48), buf,
           s.rows_real.empty() ? "rows unknown" : ranges_str(s.rows_real, 3), std::to_string(s.leak_id)});
  }
  t.print(out, st);
  if (l.size() > 50) out << "  … " << l.size() - 50 << " more leak points (see --format json)\n";
  out << '\n';
}

// Shown only when some finding is one: older logs have none.
void spreads(const Analysis& a, std::ostream& out, const Style& st) {
  const std::vector<std::uint32_t> l = spread_sites(a);
  if (l.empty()) return;
  out << st("1", "SPREAD POINTS") << " (non-finite values confined to part of the inputs made (nearly) all of the "
      << "output non-finite)\n";
  Table t({"when", "process", "kernel", "python", "buffer", "non-finite share", "event"},
          {true, false, false, false, false, false, true});
  for (std::size_t i = 0; i < l.size() && i < 50; ++i) {
    const Site& s = a.sites[l[i]];
    std::string buf = "arg " + std::to_string(s.arg) + (s.buffer_name.empty() ? "" : " " + s.buffer_name);
    t.row({when(a, s.spread_ts), a.proc_label(s.proc), shorten_kernel(a.kernels[s.kernel].name, 48),
           s.python.empty() ? "-" : s.python, buf, percent(s.spread_before) + " → " + percent(s.spread_after),
           std::to_string(s.spread_id)});
  }
  t.print(out, st);
  if (l.size() > 50) out << "  … " << l.size() - 50 << " more spread points (see --format json)\n";
  out << '\n';
}

// Infinity-only findings that are not faults, by site; shown only when there are some.
void infinities(const Analysis& a, std::ostream& out, const Style& st) {
  const std::vector<std::uint32_t> l = quiet_sites(a);
  if (l.empty()) return;
  out << st("1", "INFINITIES") << " (infinity-only findings: " << kInfinitiesNote << ")\n";
  Table t({"first seen", "process", "kernel", "python", "kind", "origin", "findings", "+Inf", "-Inf"},
          {true, false, false, false, false, false, true, true, true});
  for (std::size_t i = 0; i < l.size() && i < 50; ++i) {
    const Site& s = a.sites[l[i]];
    t.row({when(a, s.first_ts), a.proc_label(s.proc), shorten_kernel(a.kernels[s.kernel].name, 48),
           s.python.empty() ? "-" : s.python, inf_kind_name(s.quiet_inf),
           s.origin == Origin::none ? "-" : origin_name(s.origin), num(s.quiet_findings), num(s.quiet_counts.pos_inf),
           num(s.quiet_counts.neg_inf)});
  }
  t.print(out, st);
  if (l.size() > 50) out << "  … " << l.size() - 50 << " more sites (see --format json)\n";
  out << '\n';
}

void kernel_table(const Analysis& a, std::ostream& out, const Style& st) {
  std::vector<std::uint32_t> ks;
  for (std::uint32_t i = 0; i < a.kernels.size(); ++i)
    if (a.kernels[i].findings > 0) ks.push_back(i);
  out << st("1", "PER KERNEL");
  if (ks.empty()) {
    out << ": no findings\n\n";
    return;
  }
  out << '\n';
  std::sort(ks.begin(), ks.end(), [&](auto x, auto y) { return a.kernels[x].first_ts < a.kernels[y].first_ts; });
  Table t({"kernel", "findings", "repeats", "real", "padding", "unknown", "first seen", "last seen", "fixed"},
          {false, true, true, true, true, true, true, true, false});
  constexpr std::size_t kMaxRows = 50;
  for (std::size_t n = 0; n < ks.size() && n < kMaxRows; ++n) {
    const KernelAgg& k = a.kernels[ks[n]];
    std::string fixed = k.fixed_yes == 0 ? (k.fixed_no ? "no" : "-") : (k.fixed_no ? "partly" : "yes");
    std::string real = num(k.split.real);
    t.row({shorten_kernel(k.name, 44), num(k.findings), num(k.folded), k.split.real ? st("31", real) : real,
           num(k.split.padding), num(k.split.unknown), when(a, k.first_ts), when(a, k.last_ts), fixed});
  }
  t.print(out, st);
  if (ks.size() > kMaxRows)
    out << "  … " << ks.size() - kMaxRows << " more kernels, first seen later (see --format json)\n";
  out << "  (real / padding / unknown: non-finite values by row region; repeats: findings folded into `repeat` "
         "events)\n\n";
}

void graph_table(const Analysis& a, std::ostream& out, const Style& st) {
  std::vector<std::uint32_t> gs;
  for (std::uint32_t i = 0; i < a.graphs.size(); ++i)
    if (a.graphs[i].findings > 0) gs.push_back(i);
  if (gs.empty()) return;
  out << st("1", "PER GRAPH / REPLAY") << '\n';
  Table t({"process", "graph", "nodes", "findings", "replays", "findings per replay"},
          {false, true, true, true, false, false});
  constexpr std::size_t kMaxRows = 50;
  for (std::size_t row = 0; row < gs.size() && row < kMaxRows; ++row) {
    const GraphAgg& g = a.graphs[gs[row]];
    std::string replays = g.replay_max < 0 ? "-"
                          : g.replay_min == g.replay_max
                              ? std::to_string(g.replay_min)
                              : std::to_string(g.replay_min) + ".." + std::to_string(g.replay_max);
    std::string per;
    int n = 0;
    for (auto& [r, c] : g.replays) {
      if (n++ == 8) {
        per += " …";
        break;
      }
      per += (per.empty() ? "" : " ") + std::to_string(r) + ":" + num(c);
    }
    if (g.replays_capped && n <= 8) per += " (partial)";  // repeats over replay ranges, or the 256-replay cap
    t.row({a.proc_label(g.proc), std::to_string(g.graph_id), std::to_string(g.nodes.size()), num(g.findings),
           replays, per.empty() ? "-" : per});
  }
  t.print(out, st);
  if (gs.size() > kMaxRows) out << "  … " << gs.size() - kMaxRows << " more graphs (see --format json)\n";
  out << '\n';
}

void dump_list(const Analysis& a, std::ostream& out, const Style& st) {
  if (a.dumps.empty()) return;
  out << st("1", "DUMPS") << " (nanscope report --dump ID FILES… prints one)\n";
  for (std::size_t i = 0; i < a.dumps.size() && i < 20; ++i) {
    const DumpRef& d = a.dumps[i];
    out << "  " << pad(std::to_string(d.id), 6, true) << "  " << a.proc_label(d.proc) << "  "
        << shorten_kernel(d.kernel, 40) << "  " << d.path << '\n';
  }
  std::int64_t more = sat_add(std::int64_t(a.dumps.size()) - 20, a.dumps_more);
  if (more > 0) out << "  … " << more << " more\n";
  out << '\n';
}

// What one process looked at: "clean" is only as good as this.
void launch_coverage(const Proc& p, std::ostream& out, const Style& st) {
  const Proc::Coverage& c = p.coverage;
  const std::int64_t looked = sat_add(sat_add(c.decoded, c.typed), c.watched),
                     own = sat_add(sat_add(sat_add(sat_add(looked, c.opaque), c.mismatch), c.extent_unknown),
                                   c.sampled_out);
  const auto pct = [](std::int64_t part, std::int64_t whole) {
    return whole ? fmt::format("{:.1f}%", 100.0 * double(part) / double(whole)) : std::string("n/a");
  };
  out << "  inspected  pid " << p.pid << ": " << num(looked) << " of " << num(own) << " launches outside libraries ("
      << st(looked == own ? "32" : "33", pct(looked, own)) << "): decoded " << num(c.decoded) << ", typed "
      << num(c.typed) << ", watched " << num(c.watched) << ", opaque " << num(c.opaque) << ", layout mismatch "
      << num(c.mismatch) << (c.extent_unknown ? ", extent unknown (allocator pool) " + num(c.extent_unknown) : "")
      << (c.sampled_out ? ", left out of the sentinel tier's sample " + num(c.sampled_out) : "")
      << "; library " << num(c.library) << ", excluded " << num(c.excluded)
      << (c.compile_time ? ", XLA's autotuning (launched while XLA compiled) " + num(c.compile_time) : "") << '\n';
  if (c.bytes_written)
    out << "             " << pct(c.bytes_written_scanned, c.bytes_written) << " of the bytes decoded launches wrote were scanned\n";
  if (c.replays_sentinel_only || c.replays_every_scan)
    out << "             graph replays under the sentinel tier: " << num(c.replays_sentinel_only)
        << " ran only the sentinel scans (nothing upstream of them looked at), " << num(c.replays_every_scan)
        << " every scan\n";
  for (std::size_t i = 0; i < c.top.size() && i < 5; ++i)
    out << "             not inspected: " << num(c.top[i].launches) << " launches of "
        << shorten_kernel(c.top[i].name, 80) << " (" << c.top[i].reason << ")\n";
}

std::string findings_text(std::int64_t findings, const Counts& c) {
  return num(findings) + " finding(s) (" + num(c.nan) + " NaN, " + num(c.pos_inf) + " +Inf, " + num(c.neg_inf) +
         " -Inf)";
}

// Each process's events against its own summary: the totals above are only as true as this.
void summary_check(const Analysis& a, std::ostream& out, const Style& st) {
  std::int64_t checked = 0, differ = 0;
  for (std::uint32_t i = 0; i < a.procs.size(); ++i) {
    const Proc& p = a.procs[i];
    if (!p.summarized) continue;
    ++checked;
    if (p.summary_matches()) continue;
    ++differ;
    const char* why = p.summary_mismatch_reason();
    out << "  " << st("33", "check") << "      " << a.proc_label(i) << ": " << why << "; the summary says "
        << findings_text(p.findings_reported, p.summary_counts) << ", the events add up to "
        << findings_text(p.logged_findings, p.logged_counts) << '\n';
  }
  if (checked && !differ)
    out << "  check      the events add up to the summary of " << (checked == 1 ? "the process" : "each process")
        << '\n';
}

// Faults against findings, the infinities that are not faults, and what the summaries counted;
// only for logs with NaN-first verdicts (or --inf-faults), so older reports read as before.
void verdict_totals(const Analysis& a, std::ostream& out) {
  const Totals& t = a.totals;
  bool summarized = false;
  std::int64_t faults = 0, intended = 0, arithmetic = 0;
  for (const Proc& p : a.procs) {
    if (!p.summary_has_faults) continue;
    summarized = true;
    faults = sat_add(faults, p.summary_faults);
    intended = sat_add(intended, p.summary_inf_intended);
    arithmetic = sat_add(arithmetic, p.summary_inf_arithmetic);
  }
  if (!a.nan_first && !a.opt.inf_faults && !t.quiet() && !summarized) return;
  out << "  faults     " << num(t.faults) << " of " << num(t.findings) << " finding(s)";
  if (a.opt.inf_faults) out << " (--inf-faults: every infinity is one)";
  else out << " · infinities not faults: " << num(t.quiet_intended) << " intended, " << num(t.quiet_arithmetic) << " arithmetic";
  if (summarized)
    out << " · the summar" << (a.procs.size() == 1 ? "y says " : "ies say ") << num(faults) << " fault(s), infinities "
        << num(intended) << " intended, " << num(arithmetic) << " arithmetic";
  out << '\n';
  if (t.spreads) out << "  spreads    " << num(t.spreads) << '\n';
}

void totals(const Analysis& a, std::ostream& out, const Style& st) {
  const Totals& t = a.totals;
  out << st("1", "TOTALS") << '\n';
  std::int64_t ranks = 0, unsummarized = 0, launches = 0, scans = 0, dropped = 0, overflow = 0, not_insp = 0;
  for (const Proc& p : a.procs) {
    if (p.rank >= 0) ++ranks;
    if (!p.summarized) ++unsummarized;
    launches += p.launches;
    scans += p.scans;
    dropped = sat_add(dropped, p.scans_dropped);
    overflow = sat_add(overflow, p.overflow);
    not_insp = sat_add(not_insp, p.kernels_not_inspected);
  }
  out << "  input      " << num(t.files) << " file(s), " << num(std::int64_t(a.procs.size())) << " process(es)";
  if (ranks) out << " (" << ranks << " with a rank)";
  out << ", " << num(t.lines) << " lines";
  if (t.bad_lines) out << ", " << st("33", num(t.bad_lines) + " bad line(s) skipped");
  out << '\n';
  if (a.t0 != kNoTime) out << "  span       " << iso8601(a.t0) << " .. " << rel_time(a.t1 - a.t0) << '\n';
  out << "  findings   " << num(t.findings) << " (" << num(sat_sub(t.findings, t.folded)) << " events + "
      << num(t.folded) << " folded in repeats)";
  if (t.filtered_out) out << ", " << num(t.filtered_out) << " events outside the filters";
  out << '\n';
  out << "  values     " << num(t.counts.nan) << " NaN, " << num(t.counts.pos_inf) << " +Inf, "
      << num(t.counts.neg_inf) << " -Inf · real " << num(t.split.real) << ", padding " << num(t.split.padding)
      << ", unknown " << num(t.split.unknown) << '\n';
  summary_check(a, out, st);
  verdict_totals(a, out);
  out << "  leaks      " << num(t.leaks) << '\n';
  out << "  scans      " << num(launches) << " launches, " << num(scans) << " scans, "
      << (dropped ? st("33", num(dropped) + " dropped") : "0 dropped") << ", "
      << (overflow ? st("33", num(overflow) + " lost to overflow") : "0 lost to overflow") << '\n';
  if (not_insp || !a.not_inspected.empty())
    out << "  coverage   " << num(std::max<std::int64_t>(not_insp, std::int64_t(a.not_inspected.size())))
        << " kernel(s) not inspected\n";
  for (const Proc& p : a.procs)
    if (p.coverage.present) launch_coverage(p, out, st);
  if (unsummarized)
    out << "  " << st("33", "warning") << "    " << unsummarized
        << " process(es) wrote no summary (crashed or still running?)\n";
  for (auto& [what, w] : a.warnings)
    out << "  " << st("33", "warning") << "    " << what << ": " << w.first << (w.second > 1 ? " (×" + num(w.second) + ")" : "")
        << '\n';
  if (t.orphan_repeats) out << "  note       " << num(t.orphan_repeats) << " repeat event(s) whose first finding is not in the input\n";
  if (t.unresolved_parents) out << "  note       " << num(t.unresolved_parents) << " parent reference(s) not resolved\n";
}

}  // namespace

void render_text(const Analysis& a, std::ostream& out) {
  Style st{a.opt.color};
  first_cause(a, out, st);
  lineage(a, out, st);
  render_cross_rank_text(a, out, a.opt.color);
  leaks(a, out, st);
  spreads(a, out, st);
  infinities(a, out, st);
  kernel_table(a, out, st);
  graph_table(a, out, st);
  dump_list(a, out, st);
  totals(a, out, st);
  const char* mode = a.opt.fail_on == FailOn::real ? "real" : a.opt.fail_on == FailOn::any ? "any" : "never";
  out << '\n' << (a.gate_triggered() ? st("1;31", "FAIL") : st("1;32", "PASS")) << "  --fail-on " << mode
      << verdict_detail(a) << '\n';
}

}  // namespace nanscope::report

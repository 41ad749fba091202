// --format json: the machine-readable summary (shape documented in docs/report.md).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "launch_site.hpp"
#include "model.hpp"
#include "ranks.hpp"
#include "report_json.hpp"
#include "util.hpp"
#include "verdict_text.hpp"

namespace nanscope::report {

using json = nlohmann::ordered_json;

namespace {

json python_json_of(const std::string& text) {
  const auto py = python_site(text);
  return py ? json{{"file", py->file}, {"line", py->line}, {"function", py->function}} : json(nullptr);
}

// The NaN-first fields of an event (null or empty when the log has none). An infinity some fault
// names as its cause is a fault too.
void verdict_fields(const Analysis& a, const Snapshot& s, json& j) {
  const Event& e = s.ev;
  j["fault"] = a.is_fault(e) || a.sites[s.site].named_as_cause;
  j["inf"] = e.inf == InfKind::none ? json(nullptr) : json(inf_kind_name(e.inf));
  j["cause"] = e.cause;
  j["intended_from"] = e.intended_from;
  j["spread"] = e.has_field(h_spread) ? json{{"before", e.spread.before}, {"after", e.spread.after}} : json(nullptr);
  const Event::LastWriter& w = e.last_writer;
  j["last_writer"] = e.has_field(h_last_writer) ? json{{"event", w.event}, {"kernel", w.kernel}, {"launch_id", w.launch_id},
                                                       {"python", python_json_of(w.python_json)}}
                                                 : json(nullptr);
}

}  // namespace

json event_json(const Analysis& a, const Snapshot& s) {
  const Event& e = s.ev;
  json j = {{"id", e.id},
            {"ts_ns", e.ts_ns},
            {"time", iso8601(e.ts_ns)},
            {"pid", e.pid},
            {"rank", e.rank >= 0 ? json(e.rank) : json(nullptr)},
            {"local_rank", e.local_rank >= 0 ? json(e.local_rank) : json(nullptr)},
            {"file", a.files[s.file]},
            {"line", s.line},
            {"device", e.device},
            {"stream", e.stream},
            {"kernel", e.kernel},
            {"kernel_short", shorten_kernel(e.kernel, 60)},
            {"launch_id", e.has_field(h_launch_id) ? json(e.launch_id) : json(nullptr)},
            {"correlation_id", e.has_field(h_correlation_id) ? json(e.correlation_id) : json(nullptr)},
            {"graph_id", e.has_field(h_graph_id) ? json(e.graph_id) : json(nullptr)},
            {"graph_node", e.has_field(h_graph_node) ? json(e.graph_node) : json(nullptr)},
            {"replay", e.has_field(h_replay) ? json(e.replay) : json(nullptr)},
            {"buffer",
             {{"arg", e.buffer.arg},
              {"name", e.buffer.name},
              {"dtype", e.buffer.dtype},
              {"ptr", e.buffer.ptr},
              {"elements", e.buffer.elements}}},
            {"counts", {{"nan", e.counts.nan}, {"pos_inf", e.counts.pos_inf}, {"neg_inf", e.counts.neg_inf}}},
            {"first_index", e.first_index},
            {"last_index", e.last_index},
            {"region", e.region == Region::none ? json(nullptr) : json(region_name(e.region))},
            {"origin", e.origin == Origin::none ? json(nullptr) : json(origin_name(e.origin))},
            {"rows", {{"real", e.rows_real}, {"padding", e.rows_padding}, {"truncated", e.rows_truncated}}},
            {"leak", e.leak},
            {"dump", e.dump.empty() ? json(nullptr) : json(e.dump)}};
  j["python"] = python_json_of(e.python_json);
  verdict_fields(a, s, j);
  if (e.origin == Origin::candidate) {
    json list = json::array();
    for (const CandidateRef& c : candidate_refs(e.candidates_json))
      list.push_back({{"kernel", c.kernel}, {"launch_id", c.launch_id}, {"stream", c.stream},
                      {"python", c.python ? json(python_site_text(*c.python)) : json(nullptr)}});
    j["candidates"] = list;
  }
  return j;
}

namespace {

json nullable(bool present, const json& value) { return present ? value : json(nullptr); }

json rank_json(std::int64_t rank) { return nullable(rank >= 0, json(rank)); }

json filters_json(const Options& opt) {
  json filters = json::object();
  if (opt.since) filters["since_ns"] = *opt.since;
  if (opt.until) filters["until_ns"] = *opt.until;
  if (!opt.kernel_regex.empty()) filters["kernel"] = opt.kernel_regex;
  return filters;
}

// An event the first cause card names beside the cause: where it is, in a few fields.
json brief_json(const Snapshot& s) {
  const Event& e = s.ev;
  return {{"id", e.id},   {"ts_ns", e.ts_ns}, {"kernel", e.kernel}, {"python", python_json_of(e.python_json)},
          {"counts", {{"nan", e.counts.nan}, {"pos_inf", e.counts.pos_inf}, {"neg_inf", e.counts.neg_inf}}},
          {"origin", e.origin == Origin::none ? json(nullptr) : json(origin_name(e.origin))}};
}

json first_cause_json(const Analysis& a, const FirstCause& fc) {
  if (!fc) return nullptr;
  json j = event_json(a, *fc.shown);
  j["label"] = fc.label;
  if (fc.shown->ev.origin_why == schema::origin_why_str::sentinel) {  // seen by a sentinel: no origin
    j["origin"] = nullptr;
    j["origin_why"] = fc.shown->ev.origin_why;
  }
  j["earliest_fault"] = fc.fault ? brief_json(*fc.fault) : json(nullptr);
  json intended = json::array();
  for (const Snapshot* s : fc.intended) intended.push_back(brief_json(*s));
  j["intended_writes"] = intended;
  j["preexisting"] = fc.preexisting ? brief_json(*fc.preexisting) : json(nullptr);
  if (fc.preexisting) j["preexisting"]["last_writer"] = event_json(a, *fc.preexisting)["last_writer"];
  j["causes_not_kept"] = fc.not_kept;
  return j;
}

// Each process's own first cause, earliest first.
json first_cause_per_process_json(const Analysis& a) {
  json per_proc = json::array();
  for (std::uint32_t i = 0; i < a.procs.size(); ++i)
    if (const FirstCause fc = a.first_cause_of(i)) per_proc.push_back(event_json(a, *fc.shown));
  std::sort(per_proc.begin(), per_proc.end(), [](const json& x, const json& y) { return x["ts_ns"] < y["ts_ns"]; });
  return per_proc;
}

json site_json(const Analysis& a, std::uint32_t i) {
  const Site& s = a.sites[i];
  const Proc& p = a.procs[s.proc];
  return json{{"site", i},
              {"pid", p.pid},
              {"rank", rank_json(p.rank)},
              {"kernel", a.kernels[s.kernel].name},
              {"stream", p.streams[s.stream]},
              {"first_id", s.first_id},
              {"first_ts_ns", s.first_ts},
              {"arg", s.arg},
              {"buffer", s.buffer_name},
              {"region", s.region == Region::none ? json(nullptr) : json(region_name(s.region))},
              {"origin", s.origin == Origin::none ? json(nullptr) : json(origin_name(s.origin))},
              {"rows", {{"real", s.rows_real}, {"padding", s.rows_padding}}},
              {"findings", sat_add(s.events, s.folded)}};
}

// Leaking sites in the order their leaks were seen.
json leaks_json(const Analysis& a) {
  json leaks = json::array();
  std::vector<std::uint32_t> l;
  for (std::uint32_t i = 0; i < a.sites.size(); ++i)
    if (a.sites[i].leak) l.push_back(i);
  std::sort(l.begin(), l.end(), [&](auto x, auto y) { return a.sites[x].leak_ts < a.sites[y].leak_ts; });
  for (auto i : l) {
    json s = site_json(a, i);
    s["leak_id"] = a.sites[i].leak_id;
    s["leak_ts_ns"] = a.sites[i].leak_ts;
    leaks.push_back(std::move(s));
  }
  return leaks;
}

// Spread points in the order they were seen.
json spreads_json(const Analysis& a) {
  json spreads = json::array();
  for (std::uint32_t i : spread_sites(a)) {
    const Site& s = a.sites[i];
    json j = site_json(a, i);
    j["python"] = s.python.empty() ? json(nullptr) : json(s.python);
    j["spread_id"] = s.spread_id;
    j["spread_ts_ns"] = s.spread_ts;
    j["before"] = s.spread_before;
    j["after"] = s.spread_after;
    spreads.push_back(std::move(j));
  }
  return spreads;
}

// Sites of infinity-only findings that are not faults, first seen first.
json infinities_json(const Analysis& a) {
  json list = json::array();
  for (std::uint32_t i : quiet_sites(a)) {
    const Site& s = a.sites[i];
    json j = site_json(a, i);
    j["python"] = s.python.empty() ? json(nullptr) : json(s.python);
    j["inf"] = inf_kind_name(s.quiet_inf);
    j["infinity_findings"] = s.quiet_findings;
    j["counts"] = {{"nan", s.quiet_counts.nan}, {"pos_inf", s.quiet_counts.pos_inf}, {"neg_inf", s.quiet_counts.neg_inf}};
    list.push_back(std::move(j));
  }
  return list;
}

// The sites on some parent -> child edge, and the edges in (parent, child) order.
json lineage_json(const Analysis& a) {
  json lineage = {{"sites", json::array()}, {"edges", json::array()}};
  std::vector<char> in_lineage(a.sites.size(), 0);
  for (auto& [k, n] : a.edges) in_lineage[k >> 32] = in_lineage[std::uint32_t(k)] = 1;
  for (std::uint32_t i = 0; i < a.sites.size(); ++i)
    if (in_lineage[i]) lineage["sites"].push_back(site_json(a, i));
  std::vector<std::pair<std::uint64_t, std::int64_t>> edges(a.edges.begin(), a.edges.end());
  std::sort(edges.begin(), edges.end());
  for (auto& [k, n] : edges)
    lineage["edges"].push_back({{"parent", std::uint32_t(k >> 32)}, {"child", std::uint32_t(k)}, {"events", n}});
  return lineage;
}

json counts_json(const Counts& c) { return {{"nan", c.nan}, {"pos_inf", c.pos_inf}, {"neg_inf", c.neg_inf}}; }

json split_json(const RegionCounts& s) { return {{"real", s.real}, {"padding", s.padding}, {"unknown", s.unknown}}; }

json kernel_json(const KernelAgg& k) {
  std::vector<std::int64_t> ranks, pids;
  for (auto r : k.ranks) (r >= 0 ? ranks : pids).push_back(r >= 0 ? r : -1 - r);
  std::sort(ranks.begin(), ranks.end());
  std::sort(pids.begin(), pids.end());
  return {{"kernel", k.name},
          {"kernel_short", shorten_kernel(k.name, 44)},
          {"findings", k.findings},
          {"events", k.events},
          {"repeats", k.folded},
          {"sites", k.sites},
          {"real_findings", k.real_findings},
          {"counts", counts_json(k.counts)},
          {"nonfinite", split_json(k.split)},
          {"first_seen_ns", k.first_ts},
          {"last_seen_ns", k.last_ts},
          {"fixed", k.fixed_yes == 0 ? (k.fixed_no ? "no" : "n/a") : (k.fixed_no ? "partly" : "yes")},
          {"ranks", ranks},
          {"unranked_pids", pids}};
}

// Kernels with findings, first seen first.
json kernels_json(const Analysis& a) {
  json kernels = json::array();
  for (const KernelAgg& k : a.kernels)
    if (k.findings != 0) kernels.push_back(kernel_json(k));
  std::sort(kernels.begin(), kernels.end(),
            [](const json& x, const json& y) { return x["first_seen_ns"] < y["first_seen_ns"]; });
  return kernels;
}

json graphs_json(const Analysis& a) {
  json graphs = json::array();
  for (const GraphAgg& g : a.graphs) {
    if (g.findings == 0) continue;
    const Proc& p = a.procs[g.proc];
    json replays = json::array();
    for (auto& [r, n] : g.replays) replays.push_back({{"replay", r}, {"findings", n}});
    graphs.push_back({{"pid", p.pid},
                      {"rank", rank_json(p.rank)},
                      {"graph_id", g.graph_id},
                      {"nodes", g.nodes},
                      {"findings", g.findings},
                      {"first_replay", nullable(g.replay_max >= 0, json(g.replay_min))},
                      {"last_replay", nullable(g.replay_max >= 0, json(g.replay_max))},
                      {"replays", replays},
                      {"replays_complete", !g.replays_capped}});
  }
  return graphs;
}

json dumps_json(const Analysis& a) {
  json dumps = json::array();
  for (const DumpRef& d : a.dumps)
    dumps.push_back({{"id", d.id}, {"pid", a.procs[d.proc].pid}, {"kernel", d.kernel}, {"path", d.path}});
  return dumps;
}

// The process's events against its summary (null without one).
json summary_check_json(const Proc& p) {
  if (!p.summarized) return nullptr;
  return {{"matches", p.summary_matches()},
          {"summary", {{"findings", p.findings_reported}, {"counts", counts_json(p.summary_counts)}}},
          {"events", {{"findings", p.logged_findings}, {"counts", counts_json(p.logged_counts)}}},
          {"repeats_without_counts", p.repeats_without_counts}};
}

json processes_json(const Analysis& a) {
  json procs = json::array();
  for (const Proc& p : a.procs)
    procs.push_back({{"pid", p.pid},
                     {"rank", rank_json(p.rank)},
                     {"local_rank", rank_json(p.local_rank)},
                     {"file", a.files[p.file]},
                     {"argv0", p.argv0},
                     {"findings", p.findings},
                     {"summary", p.summarized},
                     {"summary_check", summary_check_json(p)},
                     {"summary_verdicts", p.summary_has_faults ? json{{"faults", p.summary_faults},
                                                                      {"infinities", {{"intended", p.summary_inf_intended},
                                                                                      {"arithmetic", p.summary_inf_arithmetic}}}}
                                                               : json(nullptr)},
                     {"scans_dropped", p.scans_dropped},
                     {"overflow", p.overflow}});
  return procs;
}

json warnings_json(const Analysis& a) {
  json warnings = json::array();
  for (auto& [what, w] : a.warnings) warnings.push_back({{"what", what}, {"message", w.first}, {"count", w.second}});
  return warnings;
}

json not_inspected_json(const Analysis& a) {
  json ni = json::array();
  for (auto& [k, r] : a.not_inspected) ni.push_back({{"kernel", k}, {"reason", r}});
  return ni;
}

// What the processes' summaries counted, added up over the processes.
struct ProcessSums {
  std::int64_t launches = 0, scans = 0, dropped = 0, overflow = 0, not_inspected = 0;
};

ProcessSums sum_processes(const Analysis& a) {
  ProcessSums s;
  for (const Proc& p : a.procs) {
    s.launches += p.launches, s.scans += p.scans, s.dropped += p.scans_dropped, s.overflow += p.overflow;
    s.not_inspected = sat_add(s.not_inspected, p.kernels_not_inspected);
  }
  return s;
}

json totals_json(const Analysis& a) {
  const Totals& t = a.totals;
  const ProcessSums p = sum_processes(a);
  return {{"lines", t.lines},
          {"bytes", t.bytes},
          {"bad_lines", t.bad_lines},
          {"events",
           {{"start", t.ev_start},
            {"nonfinite", t.ev_nonfinite},
            {"repeat", t.ev_repeat},
            {"not_inspected", t.ev_not_inspected},
            {"warning", t.ev_warning},
            {"summary", t.ev_summary},
            {"other", t.ev_other}}},
          {"filtered_out", t.filtered_out},
          {"findings", t.findings},
          {"repeats", t.folded},
          {"real_findings", t.real_findings},
          {"leaks", t.leaks},
          {"counts", counts_json(t.counts)},
          {"nonfinite", split_json(t.split)},
          {"launches", p.launches},
          {"scans", p.scans},
          {"scans_dropped", p.dropped},
          {"overflow", p.overflow},
          {"kernels_not_inspected", p.not_inspected},
          {"orphan_repeats", t.orphan_repeats},
          {"unresolved_parents", t.unresolved_parents},
          {"faults", t.faults},
          {"faults_not_padding", t.faults_not_padding},
          {"infinities", {{"intended", t.quiet_intended}, {"arithmetic", t.quiet_arithmetic}}},
          {"spreads", t.spreads}};
}

json gate_json(const Analysis& a) {
  const char* mode = a.opt.fail_on == FailOn::real ? "real" : a.opt.fail_on == FailOn::any ? "any" : "never";
  return {{"fail_on", mode},
          {"inf_faults", a.opt.inf_faults},
          {"triggered", a.gate_triggered()},
          {"exit_code", a.exit_code()},
          {"faults", a.totals.faults},
          {"faults_not_padding", a.totals.faults_not_padding},
          {"infinities_not_faults", a.totals.quiet()}};
}

}  // namespace

json summary_json(const Analysis& a) {
  json j;
  j["schema"] = "nanscope-report/1";
  j["files"] = a.files;
  j["filters"] = filters_json(a.opt);
  j["first_cause"] = first_cause_json(a, a.first_cause());
  j["first_cause_per_process"] = first_cause_per_process_json(a);
  j["leaks"] = leaks_json(a);
  j["spreads"] = spreads_json(a);
  j["infinities"] = infinities_json(a);
  j["lineage"] = lineage_json(a);
  if (a.cross) j["cross_rank"] = cross_rank_json(a);
  j["kernels"] = kernels_json(a);
  j["graphs"] = graphs_json(a);
  j["dumps"] = dumps_json(a);
  j["processes"] = processes_json(a);
  j["warnings"] = warnings_json(a);
  j["not_inspected"] = not_inspected_json(a);
  j["totals"] = totals_json(a);
  j["gate"] = gate_json(a);
  return j;
}

void render_json(const Analysis& a, std::ostream& out) {
  out << summary_json(a).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace nanscope::report

// The cross-rank join in the text report, the HTML page and the JSON summary (ranks.hpp). The
// text and the page draw the same chains and rows, built once here.
#include <algorithm>
#include <ostream>
#include <set>

#include "ranks.hpp"
#include "util.hpp"

namespace nanscope::report {

namespace {

using json = nlohmann::ordered_json;

std::string rank_label(const Analysis& a, std::uint32_t proc) {
  const Proc& p = a.procs[proc];
  return p.rank >= 0 ? "rank " + std::to_string(p.rank) : "pid " + std::to_string(p.pid);
}

// "rank 1: init_weights (introduced, event 2)"
std::string cause_text(const Analysis& a, const Cause& c) {
  std::string s = rank_label(a, c.proc) + ": ";
  if (!c.resolved && c.coll < 0) return s + "event " + std::to_string(c.id) + " (named as a root, not in the input)";
  s += shorten_kernel(a.kernels[a.sites[c.site].kernel].name, 48) + " (";
  s += c.origin == Origin::none ? "origin not recorded" : origin_name(c.origin);
  if (!c.resolved) s += ", names no root";
  return s + ", event " + std::to_string(c.id) + ")";
}

// "rank 0: ncclDevKernel_AllReduce (propagated across ranks, event 4; logged introduced, sendbuff finite)"
std::string finding_text(const Analysis& a, const CollFinding& f, bool joined) {
  const Collective& c = f.call();
  std::string s = rank_label(a, f.snap.proc);
  if (a.procs[f.snap.proc].rank != std::int64_t(c.rank)) s += " (comm rank " + std::to_string(c.rank) + ")";
  s += ": " + shorten_kernel(f.snap.ev.kernel, 48) + " (";
  const char* logged = f.snap.ev.origin == Origin::none ? "no origin" : origin_name(f.snap.ev.origin);
  if (!joined || f.verdict == CrossVerdict::contributor) s += logged;
  else s += std::string(cross_verdict_name(f.verdict)) + "; logged " + logged;
  s += ", event " + std::to_string(f.snap.ev.id);
  if (c.role == CollRole::send) s += ", non-finite sendbuff of a send";
  else s += std::string(", sendbuff ") + (c.send_state == SendState::nonfinite ? "non-finite" : send_state_name(c.send_state));
  return s + ")";
}

std::string ranks_list(const Analysis& a, const std::vector<CollFinding>& f, const std::vector<std::uint32_t>& idx) {
  std::vector<std::string> names;
  for (std::uint32_t i : idx) {
    std::string n = rank_label(a, f[i].snap.proc);
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string s;
  for (std::size_t k = 0; k < names.size(); ++k) s += (k ? ", " : "") + names[k];
  return s;
}

struct Line {
  int depth;
  std::string text;
};
struct Chain {
  std::string header;
  std::vector<Line> lines;
};

using Group = std::vector<std::uint32_t>;

std::vector<Group> groups_by_time(const CrossRank& x) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, Group> by_call;
  for (std::uint32_t i = 0; i < x.findings.size(); ++i)
    by_call[{x.findings[i].call().comm, x.findings[i].call().seq}].push_back(i);
  std::vector<Group> out;
  for (auto& [k, g] : by_call) out.push_back(std::move(g));
  auto first_ts = [&](const Group& g) {
    std::int64_t t = INT64_MAX;
    for (std::uint32_t i : g) t = std::min(t, x.findings[i].snap.ev.ts_ns);
    return t;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Group& p, const Group& q) { return first_ts(p) < first_ts(q); });
  return out;
}

std::string group_verdict(const Analysis& a, const CrossRank& x, const Group& g) {
  Group contributors, by[4];
  for (std::uint32_t i : g) by[int(x.findings[i].verdict)].push_back(i);
  for (std::uint32_t i : g)
    if (x.findings[i].call().contributes()) contributors.push_back(i);
  if (!x.joined) return "not joined: " + x.refused;
  if (!by[int(CrossVerdict::propagated)].empty())
    return "propagated across ranks from " + ranks_list(a, x.findings, contributors);
  if (!by[int(CrossVerdict::collective_introduced)].empty())
    return "introduced by the collective: no rank's data was non-finite going in (an overflow in the reduction, say)";
  if (!by[int(CrossVerdict::unknown)].empty())
    return "origin unknown across ranks: no rank in the input contributed, and some peers have no event at this "
           "call (a log missing, or nothing logged there)";
  return "non-finite data going in on " + ranks_list(a, x.findings, contributors) + "; no receiving rank logged a finding";
}

std::string unaccounted_text(const CollFinding& f) {
  std::string s = "no event at this call from comm rank";
  s += f.unaccounted.size() > 1 ? "s " : " ";
  for (std::size_t k = 0; k < f.unaccounted.size(); ++k) s += (k ? ", " : "") + std::to_string(f.unaccounted[k]);
  return s + (f.unaccounted.size() >= 64 ? " …" : "") + " (its log missing, or it logged nothing there)";
}

Chain chain_of(const Analysis& a, const CrossRank& x, const Group& g) {
  const Collective& c = x.findings[g.front()].call();
  Chain ch{call_label(c) + " (" + std::to_string(c.nranks) + " ranks): " + group_verdict(a, x, g), {}};
  for (std::uint32_t j : g) {  // contributors: their first causes, then what they reached
    if (!x.findings[j].call().contributes()) continue;
    int depth = 0;
    if (x.joined)
      for (const Cause& cause : x.causes[j])
        if (!(cause.coll == std::int64_t(j))) ch.lines.push_back({0, cause_text(a, cause)}), depth = 1;
    ch.lines.push_back({depth, (depth ? "→ " : "") + finding_text(a, x.findings[j], x.joined)});
    bool call_shown = false;
    for (std::uint32_t i : g) {
      const auto& p = x.findings[i].parents;
      if (std::find(p.begin(), p.end(), j) == p.end()) continue;
      if (!call_shown) ch.lines.push_back({depth + 1, "→ " + call_label(c)}), call_shown = true;
      ch.lines.push_back({depth + 2, "→ " + finding_text(a, x.findings[i], x.joined)});
    }
  }
  for (std::uint32_t i : g) {  // receivers no contributor reached
    const CollFinding& f = x.findings[i];
    if (f.call().contributes() || !f.parents.empty()) continue;
    ch.lines.push_back({0, finding_text(a, f, x.joined)});
    if (!f.unaccounted.empty()) ch.lines.push_back({1, unaccounted_text(f)});
  }
  return ch;
}

// The earliest first cause of a process's findings: its own introduced finding, or what its
// collectives' findings came from.
struct RankCause {
  bool valid = false;
  Cause cause;
  std::int64_t via = -1;  // the receiving finding, when the cause came through a collective
};

RankCause rank_cause(const Analysis& a, std::uint32_t proc) {
  RankCause best;
  const Proc& p = a.procs[proc];
  if (p.first_introduced.valid)
    best = {true, {proc, p.first_introduced.site, p.first_introduced.ev.id, p.first_introduced.ev.ts_ns, Origin::introduced}, -1};
  const CrossRank& x = *a.cross;
  if (!x.joined) return best;
  for (std::uint32_t i = 0; i < x.findings.size(); ++i) {
    if (x.findings[i].snap.proc != proc || x.findings[i].call().contributes() || x.causes[i].empty()) continue;
    const Cause& c = x.causes[i].front();
    if (!best.valid || c.ts < best.cause.ts) best = {true, c, std::int64_t(i)};
  }
  return best;
}

std::vector<std::uint32_t> procs_by_rank(const Analysis& a) {
  std::vector<std::uint32_t> order(a.procs.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto p, auto q) {
    const auto key = [&](std::uint32_t i) { return a.procs[i].rank >= 0 ? a.procs[i].rank : INT64_MAX; };
    return key(p) < key(q);
  });
  return order;
}

std::string rank_cause_text(const Analysis& a, const RankCause& rc) {
  if (!rc.valid) return "-";
  std::string s = cause_text(a, rc.cause);
  if (rc.via >= 0) s += " through " + call_label(a.cross->findings[std::size_t(rc.via)].call());
  return s;
}

std::vector<std::vector<std::string>> rank_rows(const Analysis& a) {
  std::vector<std::vector<std::string>> rows;
  for (std::uint32_t i : procs_by_rank(a)) {
    const Proc& p = a.procs[i];
    rows.push_back({p.rank >= 0 ? std::to_string(p.rank) : "-", std::to_string(p.pid), a.files[p.file],
                    group_digits(p.findings), rank_cause_text(a, rank_cause(a, i))});
  }
  return rows;
}

const std::vector<std::string> kRankHead = {"rank", "pid", "log", "findings", "first cause"};

std::string section_intro(const Analysis& a) {
  const CrossRank& x = *a.cross;
  std::string s = std::to_string(x.findings.size()) + " finding(s) in collectives' buffers, joined by communicator and "
                  "sequence number";
  if (x.not_joined) s += "; " + group_digits(x.not_joined) + " more past the first 16,384 kept as logged";
  return s;
}

json cause_json(const Analysis& a, const Cause& c) {
  const Proc& p = a.procs[c.proc];
  json j = {{"rank", p.rank >= 0 ? json(p.rank) : json(nullptr)}, {"pid", p.pid}, {"file", a.files[p.file]},
            {"event", c.id}, {"resolved", c.resolved}};
  if (c.resolved || c.coll >= 0) {
    j["kernel"] = a.kernels[a.sites[c.site].kernel].name;
    j["ts_ns"] = c.ts;
    j["origin"] = c.origin == Origin::none ? json(nullptr) : json(origin_name(c.origin));
    j["site"] = c.site;
  }
  return j;
}

json causes_json(const Analysis& a, const std::vector<Cause>& causes) {
  json out = json::array();
  for (const Cause& c : causes) out.push_back(cause_json(a, c));
  return out;
}

json finding_json(const Analysis& a, const CrossRank& x, std::uint32_t i) {
  const CollFinding& f = x.findings[i];
  const Collective& c = f.call();
  const Proc& p = a.procs[f.snap.proc];
  json j = {{"rank", p.rank >= 0 ? json(p.rank) : json(nullptr)}, {"pid", p.pid}, {"comm_rank", c.rank},
            {"event", f.snap.ev.id}, {"file", a.files[f.snap.file]}, {"line", f.snap.line},
            {"ts_ns", f.snap.ev.ts_ns}, {"kernel", f.snap.ev.kernel}, {"site", f.snap.site},
            {"role", coll_role_name(c.role)}, {"send_state", send_state_name(c.send_state)},
            {"origin_logged", f.snap.ev.origin == Origin::none ? json(nullptr) : json(origin_name(f.snap.ev.origin))}};
  if (!x.joined) return j;
  j["verdict"] = f.verdict == CrossVerdict::contributor ? "contributor" : f.verdict == CrossVerdict::propagated ? "propagated"
                 : f.verdict == CrossVerdict::collective_introduced ? "introduced_by_collective" : "unknown";
  if (f.verdict != CrossVerdict::contributor) {
    j["origin"] = f.verdict == CrossVerdict::propagated ? "propagated"
                  : f.verdict == CrossVerdict::collective_introduced ? "introduced" : "unknown";
    json parents = json::array();
    for (std::uint32_t k : f.parents)
      parents.push_back({{"rank", a.procs[x.findings[k].snap.proc].rank >= 0 ? json(a.procs[x.findings[k].snap.proc].rank) : json(nullptr)},
                         {"pid", a.procs[x.findings[k].snap.proc].pid}, {"event", x.findings[k].snap.ev.id},
                         {"kernel", x.findings[k].snap.ev.kernel}});
    j["parents"] = parents;
    j["unaccounted_peers"] = f.unaccounted;
  }
  j["first_cause"] = causes_json(a, x.causes[i]);
  return j;
}

json collectives_json(const Analysis& a, const CrossRank& x) {
  json out = json::array();
  for (const Group& g : groups_by_time(x)) {
    const Collective& c = x.findings[g.front()].call();
    json findings = json::array();
    for (std::uint32_t i : g) findings.push_back(finding_json(a, x, i));
    out.push_back({{"op", coll_op_name(c.op)}, {"comm", comm_hex(c.comm)}, {"seq", c.seq}, {"nranks", c.nranks},
                   {"summary", group_verdict(a, x, g)}, {"findings", findings}});
  }
  return out;
}

}  // namespace

std::string cross_rank_via(const Analysis& a, std::uint32_t parent_site, std::uint32_t child_site) {
  if (!a.cross) return {};
  const auto it = a.cross->edge_call.find((std::uint64_t(parent_site) << 32) | child_site);
  return it == a.cross->edge_call.end() ? std::string() : "via " + call_label(a.cross->findings[it->second].call());
}

std::string cross_rank_note(const Analysis& a, const Snapshot& s) {
  if (!a.cross || !a.cross->joined) return {};
  const CrossRank& x = *a.cross;
  if (const auto it = x.by_event.find({s.proc, s.ev.id}); it != x.by_event.end()) {
    const CollFinding& f = x.findings[it->second];
    if (f.verdict == CrossVerdict::collective_introduced)
      return "introduced by " + call_label(f.call()) + ": no rank's data was non-finite going in";
    if (f.verdict == CrossVerdict::unknown) return "unknown across ranks at " + call_label(f.call()) + ": " + unaccounted_text(f);
  }
  std::vector<std::uint32_t> reached;  // receivers on other ranks whose first cause this is
  for (std::uint32_t i = 0; i < x.findings.size(); ++i)
    if (x.findings[i].snap.proc != s.proc && x.findings[i].verdict == CrossVerdict::propagated)
      for (const Cause& c : x.causes[i])
        if (c.proc == s.proc && c.id == s.ev.id) reached.push_back(i);
  if (reached.empty()) return {};
  return "reached " + ranks_list(a, x.findings, reached) + " through " + call_label(x.findings[reached.front()].call()) +
         (reached.size() > 1 && x.findings[reached.back()].call().seq != x.findings[reached.front()].call().seq ? " and later calls" : "");
}

void render_cross_rank_text(const Analysis& a, std::ostream& out, bool color) {
  if (!a.cross) return;
  auto bold = [&](const std::string& s) { return color ? "\033[1m" + s + "\033[0m" : s; };
  out << bold("CROSS-RANK ORIGIN") << " (" << section_intro(a) << ")\n";
  for (const Group& g : groups_by_time(*a.cross)) {
    const Chain ch = chain_of(a, *a.cross, g);
    out << "  " << ch.header << '\n';
    for (const Line& l : ch.lines) out << "    " << std::string(std::size_t(l.depth) * 2, ' ') << l.text << '\n';
  }
  const auto rows = rank_rows(a);
  std::vector<std::size_t> w(kRankHead.size());
  for (std::size_t c = 0; c < w.size(); ++c) {
    w[c] = display_width(kRankHead[c]);
    for (const auto& r : rows) w[c] = std::max(w[c], display_width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& r) {
    out << "  ";
    for (std::size_t c = 0; c < r.size(); ++c) out << (c + 1 < r.size() ? pad(r[c], w[c], c == 3) + "  " : r[c]);
    out << '\n';
  };
  out << "  per rank:\n";
  line(kRankHead);
  for (const auto& r : rows) line(r);
  out << '\n';
}

std::string cross_rank_html(const Analysis& a) {
  if (!a.cross) return {};
  std::string o = "<section id=\"cross-rank\"><h2>Across ranks</h2>\n<p class=\"muted\">" + html_escape(section_intro(a)) +
                   "</p>\n<table id=\"ranks\"><tr>";
  for (const auto& h : kRankHead) o += "<th>" + html_escape(h) + "</th>";
  o += "</tr>\n";
  for (const auto& r : rank_rows(a)) {
    o += "<tr>";
    for (std::size_t c = 0; c < r.size(); ++c) o += (c == 3 ? "<td class=\"n\">" : "<td>") + html_escape(r[c]) + "</td>";
    o += "</tr>\n";
  }
  o += "</table>\n";
  for (const Group& g : groups_by_time(*a.cross)) {
    const Chain ch = chain_of(a, *a.cross, g);
    o += "<h3 class=\"mono\">" + html_escape(ch.header) + "</h3>\n<ul class=\"tree cross-rank-chain\">";
    int depth = 0;
    for (const Line& l : ch.lines) {
      for (; depth < l.depth; ++depth) o += "<ul class=\"tree\">";
      for (; depth > l.depth; --depth) o += "</ul>";
      o += "<li class=\"mono\">" + html_escape(l.text) + "</li>";
    }
    for (; depth > 0; --depth) o += "</ul>";
    o += "</ul>\n";
  }
  return o + "</section>\n";
}

json cross_rank_json(const Analysis& a) {
  if (!a.cross) return nullptr;
  const CrossRank& x = *a.cross;
  json ranks = json::array();
  for (std::uint32_t i : procs_by_rank(a)) {
    const Proc& p = a.procs[i];
    const RankCause rc = rank_cause(a, i);
    json via = rc.via >= 0 ? json{{"op", coll_op_name(x.findings[std::size_t(rc.via)].call().op)},
                                  {"comm", comm_hex(x.findings[std::size_t(rc.via)].call().comm)},
                                  {"seq", x.findings[std::size_t(rc.via)].call().seq},
                                  {"event", x.findings[std::size_t(rc.via)].snap.ev.id}}
                           : json(nullptr);
    ranks.push_back({{"rank", p.rank >= 0 ? json(p.rank) : json(nullptr)}, {"pid", p.pid}, {"file", a.files[p.file]},
                     {"findings", p.findings}, {"first_cause", rc.valid ? cause_json(a, rc.cause) : json(nullptr)},
                     {"via", via}});
  }
  json dependents = json::array();
  for (const Dependent& d : x.dependents)
    dependents.push_back({{"rank", a.procs[d.proc].rank >= 0 ? json(a.procs[d.proc].rank) : json(nullptr)},
                          {"pid", a.procs[d.proc].pid}, {"event", d.id},
                          {"kernel", a.kernels[a.sites[d.site].kernel].name},
                          {"root_event", x.findings[d.coll].snap.ev.id},
                          {"first_cause", x.joined ? causes_json(a, x.causes[d.coll]) : json::array()}});
  return {{"joined", x.joined}, {"refused", x.refused.empty() ? json(nullptr) : json(x.refused)},
          {"not_joined", x.not_joined}, {"ranks", ranks}, {"collectives", collectives_json(a, x)},
          {"dependents", dependents}, {"dependents_not_listed", x.dependents_not_listed}};
}

}  // namespace nanscope::report

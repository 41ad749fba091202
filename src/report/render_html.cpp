// --html: one self-contained page (inline CSS and SVG, no network).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

#include "launch_site.hpp"
#include "model.hpp"
#include "ranks.hpp"
#include "util.hpp"
#include "verdict_text.hpp"

namespace nanscope::report {

namespace {

const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1d2126;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.muted{color:#6a737d}.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
#first-cause{border:2px solid #cf222e;border-radius:8px;padding:12px 16px;background:#fff5f5}
#first-cause.none{border-color:#1a7f37;background:#f3fff5}#first-cause h2{margin-top:0}
#first-cause dl{display:grid;grid-template-columns:90px 1fr;gap:2px 12px;margin:8px 0 0}
#first-cause dt{color:#6a737d}#first-cause dd{margin:0;word-break:break-all}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eee;vertical-align:top}
th{color:#6a737d;font-weight:500}td.n{text-align:right;font-variant-numeric:tabular-nums}
ul.tree{list-style:none;padding-left:18px;margin:4px 0}ul.tree li{margin:2px 0}
.leak{color:#9a6700;font-weight:600}.real{color:#cf222e}.pad{color:#57606a}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
)";

std::string num(std::int64_t v) { return group_digits(v); }

struct Html {
  const Analysis& a;
  std::ostringstream o;

  std::string when(std::int64_t ts) const { return ts == kNoTime ? "-" : rel_time(ts - a.t0); }

  void first_cause() {
    const FirstCause first = a.first_cause();
    if (!first) {
      const std::int64_t quiet = a.totals.quiet();
      o << "<section id=\"first-cause\" class=\"none\"><h2>First cause</h2><p>"
        << (a.totals.faults == 0 && quiet > 0 ? "None: no NaN; " + num(quiet) + " infinity finding(s) are not faults "
                                                "(see Infinities)."
                                              : std::string("No non-finite value was found."))
        << "</p></section>\n";
      return;
    }
    const Snapshot* fc = first.shown;
    const Event& e = fc->ev;
    o << "<section id=\"first-cause\"><h2>First cause <span class=\"muted\">— " << html_escape(first.label)
      << "</span></h2>\n<div class=\"mono\" id=\"first-cause-kernel\"><b>" << html_escape(e.kernel) << "</b></div><dl>\n";
    auto kv = [&](const char* k, const std::string& v) {
      if (!v.empty()) o << "<dt>" << k << "</dt><dd>" << html_escape(v) << "</dd>\n";
    };
    if (const auto py = python_site(e.python_json)) kv("python", python_site_text(*py));
    kv("process", a.proc_label(fc->proc) + (e.local_rank >= 0 ? " (local rank " + std::to_string(e.local_rank) + ")" : "") +
                      " · device " + std::to_string(e.device) + " · stream " + e.stream);
    kv("time", iso8601(e.ts_ns) + " (" + rel_time(e.ts_ns - a.t0) + ")");
    std::string launch = e.has_field(h_launch_id) ? "#" + std::to_string(e.launch_id) : "";
    if (e.has_field(h_graph_id)) {
      launch += " · graph " + std::to_string(e.graph_id);
      if (e.has_field(h_graph_node)) launch += " node " + std::to_string(e.graph_node);
      if (e.has_field(h_replay)) launch += " replay " + std::to_string(e.replay);
    }
    kv("launch", launch);
    kv("buffer", "arg " + std::to_string(e.buffer.arg) + (e.buffer.name.empty() ? "" : " \"" + e.buffer.name + "\"") +
                     " " + e.buffer.dtype + " × " + num(e.buffer.elements));
    kv("values", num(e.counts.nan) + " NaN, " + num(e.counts.pos_inf) + " +Inf, " + num(e.counts.neg_inf) + " −Inf");
    kv("region", e.region == Region::none ? "not recorded" : region_name(e.region));
    std::string rows;
    if (!e.rows_real.empty()) rows += "real " + ranges_str(e.rows_real);
    if (!e.rows_padding.empty()) rows += (rows.empty() ? "" : " · ") + std::string("padding ") + ranges_str(e.rows_padding);
    kv("rows", rows);
    if (e.origin == Origin::candidate)
      kv("candidates", candidates_text(candidate_refs(e.candidates_json), 120) + " (may have written these values; not proven)");
    kv("event", std::to_string(e.id) + " at " + a.files[fc->file] + ":" + std::to_string(fc->line));
    kv("dump", e.dump);
    for (const Snapshot* s : first.intended) kv("inputs", intended_text(*s));
    if (first.preexisting) kv("left by", last_writer_text(*first.preexisting));
    if (first.fault) kv("led to", led_to_text(*first.fault));
    kv("cause", not_kept_text(first.not_kept));
    kv("across ranks", cross_rank_note(a, *fc));
    o << "</dl></section>\n";
  }

  void lineage() {
    const FirstCause first = a.first_cause();
    const Snapshot* fc = first.shown;
    o << "<section id=\"lineage\"><h2>Lineage</h2>\n";
    if (!fc) {
      o << "<p class=\"muted\">" << (a.totals.findings ? "No faults." : "No findings.") << "</p>\n";
      leak_points();
      o << "</section>\n";
      return;
    }
    auto children = a.lineage_children();
    std::vector<char> seen(a.sites.size(), 0);
    int budget = 200;
    std::function<void(std::uint32_t, int, std::uint32_t)> node = [&](std::uint32_t si, int depth, std::uint32_t parent) {
      const Site& s = a.sites[si];
      seen[si] = 1;
      o << "<li><span class=\"mono\">" << html_escape(shorten_kernel(a.kernels[s.kernel].name, 70)) << "</span> "
        << (s.python.empty() ? "" : "<span class=\"mono muted\">@ " + html_escape(s.python) + "</span> ")
        << "<span class=\"muted\">" << html_escape(a.proc_label(s.proc)) << " · arg " << s.arg << " · "
        << when(s.first_ts) << "</span>";
      if (s.region != Region::none)
        o << " <span class=\"" << (s.region == Region::padding ? "pad" : "real") << "\">" << region_name(s.region) << "</span>";
      if (s.origin != Origin::none) o << " <span class=\"muted\">(" << origin_name(s.origin) << ")</span>";
      if (s.leak) o << " <span class=\"leak\">LEAK padding→real</span>";
      if (const std::string via = cross_rank_via(a, parent, si); !via.empty())
        o << " <span class=\"cross-rank\">" << html_escape(via) << "</span>";
      bool open = false;
      for (auto c : children[si]) {
        if (seen[c] || --budget <= 0 || depth > 32) continue;
        if (!open) o << "<ul class=\"tree\">";
        open = true;
        node(c, depth + 1, si);
      }
      if (open) o << "</ul>";
      o << "</li>\n";
    };
    o << "<ul class=\"tree\" id=\"lineage-tree\">";
    for (std::uint32_t root : a.lineage_roots())
      if (!seen[root] && (root == fc->site || !children[root].empty())) node(root, 0, root);
    o << "</ul>\n";
    if (a.edges.empty()) o << "<p class=\"muted\">The log records no parent links.</p>\n";
    leak_points();
    o << "</section>\n";
  }

  // Sites with leak: true, by time.
  void leak_points() {
    std::vector<std::uint32_t> l;
    for (std::uint32_t i = 0; i < a.sites.size(); ++i)
      if (a.sites[i].leak) l.push_back(i);
    std::sort(l.begin(), l.end(), [&](auto x, auto y) { return a.sites[x].leak_ts < a.sites[y].leak_ts; });
    o << "<h2>Leak points</h2>\n";
    if (l.empty()) o << "<p class=\"muted\">None.</p>\n";
    else {
      o << "<table id=\"leaks\"><tr><th>when</th><th>process</th><th>kernel</th><th>arg</th><th>real rows</th><th>event</th></tr>\n";
      for (std::size_t i = 0; i < l.size() && i < 200; ++i) {
        const Site& s = a.sites[l[i]];
        o << "<tr><td>" << when(s.leak_ts) << "</td><td>" << html_escape(a.proc_label(s.proc)) << "</td><td class=\"mono\" title=\""
          << html_escape(a.kernels[s.kernel].name) << "\">" << html_escape(shorten_kernel(a.kernels[s.kernel].name, 60))
          << "</td><td>" << s.arg << "</td><td>"
          << (s.rows_real.empty() ? "rows unknown" : html_escape(ranges_str(s.rows_real, 4))) << "</td><td>"
          << s.leak_id << "</td></tr>\n";
      }
      o << "</table>\n";
    }
  }

  // Spread points and infinities that are not faults; neither section appears without them.
  void verdict_sections() {
    if (const std::vector<std::uint32_t> l = spread_sites(a); !l.empty()) {
      o << "<section id=\"spreads\"><h2>Spread points</h2>\n<table><tr><th>when</th><th>process</th><th>kernel</th>"
           "<th>python</th><th>arg</th><th>non-finite share</th><th>event</th></tr>\n";
      for (std::size_t i = 0; i < l.size() && i < 200; ++i) {
        const Site& s = a.sites[l[i]];
        o << "<tr><td>" << when(s.spread_ts) << "</td><td>" << html_escape(a.proc_label(s.proc)) << "</td>"
          << kernel_cell(s) << "<td>" << html_escape(s.python) << "</td><td>" << s.arg << "</td><td>"
          << percent(s.spread_before) << " → " << percent(s.spread_after) << "</td><td>" << s.spread_id << "</td></tr>\n";
      }
      o << "</table></section>\n";
    }
    if (const std::vector<std::uint32_t> l = quiet_sites(a); !l.empty()) {
      o << "<section id=\"infinities\"><h2>Infinities</h2><p class=\"muted\">Infinity-only findings: "
        << kInfinitiesNote << ".</p>\n<table><tr><th>first seen</th><th>process</th><th>kernel</th><th>python</th>"
           "<th>kind</th><th>origin</th><th>findings</th><th>+Inf</th><th>−Inf</th></tr>\n";
      for (std::size_t i = 0; i < l.size() && i < 200; ++i) {
        const Site& s = a.sites[l[i]];
        o << "<tr><td>" << when(s.first_ts) << "</td><td>" << html_escape(a.proc_label(s.proc)) << "</td>"
          << kernel_cell(s) << "<td>" << html_escape(s.python) << "</td><td>" << inf_kind_name(s.quiet_inf)
          << "</td><td>" << (s.origin == Origin::none ? "-" : origin_name(s.origin)) << "</td><td class=\"n\">"
          << num(s.quiet_findings) << "</td><td class=\"n\">" << num(s.quiet_counts.pos_inf) << "</td><td class=\"n\">"
          << num(s.quiet_counts.neg_inf) << "</td></tr>\n";
      }
      o << "</table></section>\n";
    }
  }

  std::string kernel_cell(const Site& s) const {
    const std::string& name = a.kernels[s.kernel].name;
    return "<td class=\"mono\" title=\"" + html_escape(name) + "\">" + html_escape(shorten_kernel(name, 60)) + "</td>";
  }

  void chart() {
    o << "<section id=\"chart-section\"><h2>Non-finite values over time, per kernel</h2>\n";
    const auto& pk = a.hist.per_kernel();
    std::vector<std::pair<std::int64_t, std::uint32_t>> order;
    for (std::uint32_t k = 0; k < pk.size(); ++k) {
      std::int64_t total = 0;
      for (auto& [b, c] : pk[k]) total = sat_add(total, c.total());
      if (!pk[k].empty()) order.push_back({-total, k});
    }
    std::sort(order.begin(), order.end());
    if (order.empty()) {
      o << "<p class=\"muted\">No findings to chart.</p></section>\n";
      return;
    }
    const std::size_t rows = std::min<std::size_t>(order.size(), 12);
    const int label_w = 300, plot_w = 720, row_h = 46, top = 8, axis_h = 28;
    const int width = label_w + plot_w + 20, height = top + int(rows) * row_h + axis_h;
    const std::int64_t lo = a.hist.lo(), hi = a.hist.hi(), nb = hi - lo + 1;
    const double bw = double(plot_w) / double(nb);
    o << "<div class=\"legend muted\">per time bucket of " << rel_time(std::int64_t(1) << a.hist.shift()).substr(1)
      << ":<span style=\"background:#cf222e\"></span>real rows<span style=\"background:#8c959f\"></span>padding rows"
      << "<span style=\"background:#d4a72c\"></span>unknown region</div>\n";
    o << "<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" font-family=\"system-ui,sans-serif\" font-size=\"11\">\n";
    for (std::size_t r = 0; r < rows; ++r) {
      std::uint32_t k = order[r].second;
      int y0 = top + int(r) * row_h;
      std::int64_t mx = 1;
      for (auto& [b, c] : pk[k]) mx = std::max(mx, c.total());
      const std::string& name = a.kernels[k].name;
      o << "<g class=\"kernel-row\"><title>" << html_escape(name) << "</title>";
      o << "<text x=\"0\" y=\"" << y0 + row_h / 2 + 4 << "\" fill=\"#1d2126\">" << html_escape(shorten_kernel(name, 44))
        << "</text>";
      o << "<text x=\"" << label_w - 6 << "\" y=\"" << y0 + 10 << "\" text-anchor=\"end\" fill=\"#6a737d\">max "
        << num(mx) << "</text>";
      o << "<line x1=\"" << label_w << "\" x2=\"" << label_w + plot_w << "\" y1=\"" << y0 + row_h - 4 << "\" y2=\""
        << y0 + row_h - 4 << "\" stroke=\"#d0d7de\"/>";
      const double ph = row_h - 10;
      for (auto& [b, c] : pk[k]) {
        double x = label_w + double(b - lo) * bw;
        double y = y0 + row_h - 4;
        auto bar = [&](std::int64_t v, const char* colour, const char* cls) {
          if (v <= 0) return;
          double h = std::max(1.0, ph * double(v) / double(mx));
          y -= h;
          o << "<rect class=\"bar " << cls << "\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << std::max(1.0, bw - 1)
            << "\" height=\"" << h << "\" fill=\"" << colour << "\"><title>" << when(std::int64_t(b) << a.hist.shift())
            << ": " << num(v) << ' ' << cls << "</title></rect>";
        };
        bar(c.real, "#cf222e", "real");
        bar(c.padding, "#8c959f", "padding");
        bar(c.unknown, "#d4a72c", "unknown");
      }
      o << "</g>\n";
    }
    int ya = top + int(rows) * row_h + 14;
    for (int t = 0; t <= 4; ++t) {
      double x = label_w + plot_w * t / 4.0;
      std::int64_t ts = (lo + std::int64_t(double(nb) * t / 4.0)) << a.hist.shift();
      o << "<text x=\"" << x << "\" y=\"" << ya << "\" text-anchor=\"middle\" fill=\"#6a737d\">" << when(ts) << "</text>";
    }
    o << "\n</svg>\n";
    if (order.size() > rows) o << "<p class=\"muted\">" << order.size() - rows << " more kernels not charted.</p>\n";
    o << "</section>\n";
  }

  void kernel_table() {
    o << "<section id=\"kernels\"><h2>Per kernel</h2><table><tr><th>kernel</th><th>findings</th><th>repeats</th>"
         "<th>real</th><th>padding</th><th>unknown</th><th>first seen</th><th>last seen</th><th>fixed</th></tr>\n";
    std::vector<const KernelAgg*> ks;
    for (auto& k : a.kernels)
      if (k.findings) ks.push_back(&k);
    std::sort(ks.begin(), ks.end(), [](auto* x, auto* y) { return x->first_ts < y->first_ts; });
    for (auto* k : ks) {
      o << "<tr><td class=\"mono\" title=\"" << html_escape(k->name) << "\">" << html_escape(shorten_kernel(k->name, 60))
        << "</td><td class=\"n\">" << num(k->findings) << "</td><td class=\"n\">" << num(k->folded)
        << "</td><td class=\"n real\">" << num(k->split.real) << "</td><td class=\"n\">" << num(k->split.padding)
        << "</td><td class=\"n\">" << num(k->split.unknown) << "</td><td>" << when(k->first_ts) << "</td><td>"
        << when(k->last_ts) << "</td><td>"
        << (k->fixed_yes == 0 ? (k->fixed_no ? "no" : "-") : (k->fixed_no ? "partly" : "yes")) << "</td></tr>\n";
    }
    o << "</table></section>\n";
  }

  // A process whose events do not add up to its summary (docs/report.md, "Totals against the summary").
  void summary_check() {
    for (std::uint32_t i = 0; i < a.procs.size(); ++i) {
      const Proc& p = a.procs[i];
      if (!p.summarized || p.summary_matches()) continue;
      o << "<p class=\"muted\">" << a.proc_label(i) << ": the summary says " << num(p.findings_reported)
        << " finding(s) and " << num(p.summary_counts.total()) << " non-finite values, the events add up to "
        << num(p.logged_findings) << " and " << num(p.logged_counts.total()) << ": "
        << p.summary_mismatch_reason() << "</p>\n";
    }
  }

  std::string page() {
    const Totals& t = a.totals;
    o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">"
         "<title>nanscope report</title><style>"
      << kCss << "</style></head><body>\n";
    o << "<h1>nanscope report</h1><p class=\"muted\">" << num(t.files) << " file(s) · " << a.procs.size()
      << " process(es) · " << num(t.findings) << " finding(s) · " << num(t.counts.total()) << " non-finite values";
    if (t.bad_lines) o << " · " << num(t.bad_lines) << " bad line(s) skipped";
    o << " · <span class=\"" << (a.gate_triggered() ? "fail\">FAIL" : "pass\">PASS") << "</span></p>\n";
    summary_check();
    first_cause();
    lineage();
    verdict_sections();
    o << cross_rank_html(a);
    chart();
    kernel_table();
    // Marks the page as laid out, so a headless browser test can check the chart really rendered.
    o << "<script>(function(){var s=document.getElementById('chart');var r=s?s.getBoundingClientRect():{width:0,height:0};"
         "document.body.setAttribute('data-chart-size',Math.round(r.width)+'x'+Math.round(r.height));"
         "document.body.setAttribute('data-chart-bars',document.querySelectorAll('#chart rect.bar').length);"
         "var f=document.getElementById('first-cause');"
         "document.body.setAttribute('data-first-cause-height',f?Math.round(f.getBoundingClientRect().height):0);"
         "})();</script>\n";
    o << "</body></html>\n";
    return o.str();
  }
};

}  // namespace

bool write_html(const Analysis& a, const std::string& path, std::ostream& err) {
  Html h{a, {}};
  std::string page = h.page();
  std::ofstream f(path, std::ios::binary);
  f << page;
  if (!f) {
    err << "nanscope report: cannot write " << path << '\n';
    return false;
  }
  return true;
}

}  // namespace nanscope::report

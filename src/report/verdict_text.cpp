#include "verdict_text.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "launch_site.hpp"
#include "util.hpp"

namespace nanscope::report {

namespace {

std::string num(std::int64_t v) { return group_digits(v); }

std::string event_ref(std::int64_t id, const std::string& kernel) {
  return "event " + std::to_string(id) + ", kernel " + shorten_kernel(kernel, 60);
}

// "NaN", or the infinities of an infinity-only finding.
std::string values_word(const Counts& c) { return c.nan > 0 ? "NaN" : inf_signs(c); }

}  // namespace

std::string inf_signs(const Counts& c) {
  if (c.neg_inf > 0 && c.pos_inf > 0) return "-inf and +inf";
  return c.pos_inf > 0 ? "+inf" : "-inf";
}

std::string python_at(const std::string& python_json) {
  const auto py = python_site(python_json);
  return py ? py->file + ":" + std::to_string(py->line) : std::string();
}

std::string percent(double share) {
  if (!(share >= 0)) share = 0;  // NaN too
  return fmt::format("{:.1f}%", 100.0 * std::min(share, 1.0));
}

std::string intended_text(const Snapshot& s) {
  const std::string at = python_at(s.ev.python_json);
  return "held " + inf_signs(s.ev.counts) + " from the intended write" + (at.empty() ? "" : " at " + at) + " (" +
         event_ref(s.ev.id, s.ev.kernel) + ")";
}

std::string last_writer_text(const Snapshot& pre) {
  const Event::LastWriter& w = pre.ev.last_writer;
  std::string s = "event " + std::to_string(pre.ev.id) + " (" + shorten_kernel(pre.ev.kernel, 60) +
                  ") found its buffer already non-finite (origin preexisting)";
  if (!pre.ev.has_field(h_last_writer)) return s;
  s += ": written by " + (w.kernel.empty() ? std::string("?") : shorten_kernel(w.kernel, 60)) + " (event " +
       std::to_string(w.event) + ", launch #" + std::to_string(w.launch_id);
  if (const std::string at = python_at(w.python_json); !at.empty()) s += ", at " + at;
  return s + ")";
}

std::string led_to_text(const Snapshot& fault) {
  std::string s = values_word(fault.ev.counts) + " in " + shorten_kernel(fault.ev.kernel, 60) + " (event " +
                  std::to_string(fault.ev.id);
  if (const std::string at = python_at(fault.ev.python_json); !at.empty()) s += ", at " + at;
  return s + "): the earliest fault";
}

std::string not_kept_text(const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return {};
  std::string s = ids.size() == 1 ? "event " : "events ";
  for (std::size_t i = 0; i < ids.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 8) s += ", …";
  return s + (ids.size() == 1 ? " was" : " were") + " not kept (the report keeps the first 4,096 roots of a process)";
}

std::string no_first_cause_text(const Analysis& a) {
  const Totals& t = a.totals;
  if (t.faults == 0 && t.quiet() > 0)
    return "none (no NaN; " + num(t.quiet()) + " infinity finding(s) are not faults, see INFINITIES)";
  return "none: no non-finite value was found";
}

std::vector<std::uint32_t> quiet_sites(const Analysis& a) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < a.sites.size(); ++i)
    if (a.sites[i].quiet_findings > 0 && !a.sites[i].promoted) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](auto x, auto y) { return a.sites[x].first_ts < a.sites[y].first_ts; });
  return out;
}

std::vector<std::uint32_t> spread_sites(const Analysis& a) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < a.sites.size(); ++i)
    if (a.sites[i].spread) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](auto x, auto y) { return a.sites[x].spread_ts < a.sites[y].spread_ts; });
  return out;
}

std::string verdict_detail(const Analysis& a) {
  const Totals& t = a.totals;
  if (a.gate_triggered()) {
    if (a.opt.fail_on == FailOn::any) return ": " + num(t.faults) + " fault(s)";
    const std::int64_t unproven = sat_sub(t.faults_not_padding, t.faults_real);
    if (unproven == 0) return ": " + num(t.faults_real) + " finding(s) in real rows";
    return ": " + num(t.faults_not_padding) + " fault(s) not proven to be in padding rows only (" + num(t.faults_real) +
           " in real rows, " + num(unproven) + " in rows not known)";
  }
  if (t.findings == 0) return "";
  std::string why;
  if (a.opt.fail_on != FailOn::never) {
    const std::int64_t padding_only = sat_sub(t.faults, t.faults_not_padding);
    if (padding_only) why += num(padding_only) + " fault(s) in padding rows only";
    if (t.quiet()) why += (why.empty() ? "" : ", ") + num(t.quiet()) + " infinity finding(s) that are not faults";
  }
  return " (" + num(t.findings) + " finding(s), none that gate" + (why.empty() ? "" : ": " + why) + ")";
}

}  // namespace nanscope::report

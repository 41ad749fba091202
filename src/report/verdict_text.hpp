// Words for the NaN-first verdicts (verdicts.cpp), shared by the text, JSON and HTML renderers:
// the first cause card's extra lines, the INFINITIES and SPREAD POINTS rows, the verdict's detail.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model.hpp"

namespace nanscope::report {

std::string inf_signs(const Counts& c);               // "-inf", "+inf", "-inf and +inf"
std::string python_at(const std::string& python_json);  // "file:line", or "" without one
std::string percent(double share);                    // 0.031 -> "3.1%" (clamped to 0..1)

// First cause card lines (empty when there is nothing to say).
std::string intended_text(const Snapshot& intended);  // "held -inf from the intended write at F:L (event N, kernel K)"
std::string last_writer_text(const Snapshot& preexisting);
std::string led_to_text(const Snapshot& fault);
std::string not_kept_text(const std::vector<std::int64_t>& ids);
// FIRST CAUSE without a fault: "none: no non-finite value was found" or "none (no NaN; …)".
std::string no_first_cause_text(const Analysis& a);

// Sites with infinities that are not faults (and made no NaN), and spread points, by time.
std::vector<std::uint32_t> quiet_sites(const Analysis& a);
std::vector<std::uint32_t> spread_sites(const Analysis& a);
inline constexpr const char* kInfinitiesNote = "not faults by default; --inf-faults counts them";

// The verdict line after PASS / FAIL and the mode: ": 3 finding(s) in real rows", " (…)".
std::string verdict_detail(const Analysis& a);

}  // namespace nanscope::report

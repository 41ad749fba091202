// See host_profile.hpp.
#include "host_profile.hpp"

#include <fmt/format.h>

namespace nanscope {

namespace {

using Part = HostProfile::Part;

constexpr const char* kPartNames[] = {
    "torch watch", "kernel lookup", "library claim", "autotuning check",
    "coverage count", "opaque words", "opaque Python line", "opaque writer notes",
    "build (decode, task)", "initial scans", "findings' facts (Python line)", "scan submit or hold",
    "kernel lookup", "write model", "flush check and its launches"};
static_assert(std::size(kPartNames) == static_cast<size_t>(Part::kCount));

constexpr Part kFirstEnterPart = Part::enter_lookup;

double per_us(uint64_t ns, uint64_t count) { return count ? static_cast<double>(ns) / count / 1000.0 : 0.0; }

// "36.92 us each (2086), plus 3 over 100 us taking 1.2 ms"; empty when it never ran.
std::string site_text(const HostProfile::Site& s) {
  const uint64_t calls = s.calls.load(), slow = s.slow.load();
  if (!calls && !slow) return {};
  std::string out = fmt::format("{:.2f} us each ({})", per_us(s.ns.load(), calls), calls);
  if (slow) out += fmt::format(", plus {} over {} us taking {:.1f} ms", slow, HostProfile::kSlowCallNs / 1000, s.slow_ns.load() / 1e6);
  return out;
}

// "exit site parts: kernel lookup 0.41 us each (2086); ..." over [first, last); empty when none ran.
std::string parts_text(const HostProfile& p, const char* site, Part first, Part last) {
  std::string parts;
  for (auto i = static_cast<size_t>(first); i < static_cast<size_t>(last); ++i) {
    const std::string t = site_text(p.parts[i]);
    if (!t.empty()) parts += fmt::format("{}{} {}", parts.empty() ? "" : "; ", kPartNames[i], t);
  }
  return parts.empty() ? parts : fmt::format("{} parts: {}", site, parts);
}

}  // namespace

std::vector<std::string> HostProfile::lines() const {
  std::vector<std::string> out;
  if (!on) return out;
  const std::pair<const char*, const Site*> sites[] = {
      {"launch exit site, all of it: ", &exit},
      {"of the exit site, launches not looked at (library, opaque, excluded): ", &not_looked_at},
      {"launch enter site while scans are held: ", &enter}};
  for (const auto& [what, site] : sites)
    if (std::string t = site_text(*site); !t.empty()) out.push_back(what + t);
  for (std::string t : {parts_text(*this, "exit site", Part::torch_watch, kFirstEnterPart),
                        parts_text(*this, "enter site", kFirstEnterPart, Part::kCount)})
    if (!t.empty()) out.push_back(std::move(t));
  return out;
}

}  // namespace nanscope

#include "launch_site.hpp"

#include <nlohmann/json.hpp>

#include "log_schema.hpp"
#include "util.hpp"

namespace nanscope::report {

namespace {

using nlohmann::json;
constexpr std::size_t kMaxText = 4096;  // a longer file or kernel name is cut

std::string text_of(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return {};
  std::string s = it->get<std::string>();
  if (s.size() > kMaxText) s.resize(kMaxText);
  return s;
}

std::int64_t int_of(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

std::optional<PythonSite> site_of(const json& o) {
  if (!o.is_object()) return std::nullopt;
  PythonSite s{text_of(o, schema::python_key::file), text_of(o, schema::python_key::function),
               int_of(o, schema::python_key::line)};
  if (s.file.empty()) return std::nullopt;
  s.op = text_of(o, schema::python_key::op);
  if (const auto g = o.find(schema::python_key::generated); g != o.end() && g->is_object()) {
    s.generated_file = text_of(*g, schema::python_key::file);
    s.generated_line = int_of(*g, schema::python_key::line);
  }
  return s;
}

}  // namespace

std::optional<PythonSite> python_site(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return site_of(json::parse(text, nullptr, /*allow_exceptions=*/false));
}

std::string python_site_text(const PythonSite& s) {
  std::string out = s.file + ":" + std::to_string(s.line);
  if (!s.function.empty()) out += " in " + s.function;
  if (!s.op.empty()) out += " (op " + s.op + ")";
  if (!s.generated_file.empty()) out += " (compiled into " + s.generated_file + ":" + std::to_string(s.generated_line) + ")";
  return out;
}

std::string candidates_text(const std::vector<CandidateRef>& candidates, std::size_t kernel_width) {
  std::string out;
  for (const CandidateRef& c : candidates) {
    if (!out.empty()) out += "; ";
    out += shorten_kernel(c.kernel, kernel_width);
    std::string detail;
    if (c.launch_id) detail = "launch " + std::to_string(c.launch_id);
    if (c.python) detail += (detail.empty() ? "" : ", ") + python_site_text(*c.python);
    if (!detail.empty()) out += " (" + detail + ")";
  }
  return out;
}

std::string python_site_short(const PythonSite& s) {
  const auto slash = s.file.find_last_of("/\\");
  return (slash == std::string::npos ? s.file : s.file.substr(slash + 1)) + ":" + std::to_string(s.line);
}

std::vector<CandidateRef> candidate_refs(std::string_view text) {
  std::vector<CandidateRef> out;
  if (text.empty()) return out;
  const json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return out;
  for (const json& c : list) {
    if (out.size() >= kMaxCandidates) break;
    if (c.is_string()) {  // a bare kernel name
      out.push_back({c.get<std::string>().substr(0, kMaxText), {}, 0, std::nullopt});
      continue;
    }
    if (!c.is_object() || text_of(c, schema::key::kernel).empty()) continue;
    const auto py = c.find(schema::key::python);
    out.push_back({text_of(c, schema::key::kernel), text_of(c, schema::key::stream), int_of(c, schema::key::launch_id),
                   py == c.end() ? std::nullopt : site_of(*py)});
  }
  return out;
}

}  // namespace nanscope::report

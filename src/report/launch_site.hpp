// Where a finding's launch came from and who may have written its values, decoded from the JSON
// text the parser keeps of `python` and `candidates` (a nonfinite event's, docs/log-schema.md).
// Bad input (a wrong type, a huge list) gives nothing or the entries that make sense, never an
// error: these fields only add detail to a finding.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope::report {

struct PythonSite {
  std::string file, function;
  std::int64_t line = 0;
  std::string generated_file;  // the generated code file:line was mapped from (torch.compile)
  std::string op;              // the framework's op (XLA's op_name), when the log names it
  std::int64_t generated_line = 0;
};
struct CandidateRef {
  std::string kernel, stream;
  std::int64_t launch_id = 0;
  std::optional<PythonSite> python;
};

std::optional<PythonSite> python_site(std::string_view json_text);  // null or not an object: nullopt
std::string python_site_text(const PythonSite& s);                   // "file:line in function"
std::string python_site_short(const PythonSite& s);                  // "file's name:line"
std::vector<CandidateRef> candidate_refs(std::string_view json_text);  // at most kMaxCandidates
inline constexpr std::size_t kMaxCandidates = 16;
// "kernel (launch N, file:line in function); ..." with each kernel name cut to `kernel_width`.
std::string candidates_text(const std::vector<CandidateRef>& candidates, std::size_t kernel_width);

}  // namespace nanscope::report

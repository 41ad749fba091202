#include "generated_lines.hpp"

#include <algorithm>

namespace nanscope {

bool GeneratedLines::add(std::string_view generated_file, uint32_t generated_line, std::optional<PythonLine> origin) {
  if (generated_file.empty() || generated_line == 0) return false;
  auto it = files_.find(generated_file);
  if (it == files_.end()) {
    if (files_.size() >= kMaxFiles) return false;
    it = files_.emplace(std::string(generated_file), std::vector<Entry>{}).first;
  }
  std::vector<Entry>& entries = it->second;
  // Inductor's maps come in line order: appending is the common case.
  auto at = entries.empty() || entries.back().generated_line < generated_line
                ? entries.end()
                : std::lower_bound(entries.begin(), entries.end(), generated_line,
                                   [](const Entry& e, uint32_t l) { return e.generated_line < l; });
  if (at != entries.end() && at->generated_line == generated_line) {
    at->origin = std::move(origin);
    return true;
  }
  if (entries_ >= kMaxEntries) return false;
  entries.insert(at, Entry{generated_line, std::move(origin)});
  ++entries_;
  return true;
}

// As Inductor's own lookup (PyCodeCache.stack_frames_for_code): the last entry at or before the
// line.
const GeneratedLines::Entry* GeneratedLines::covering(std::string_view generated_file, uint32_t line) const {
  const auto it = files_.find(generated_file);
  if (it == files_.end()) return nullptr;
  const std::vector<Entry>& entries = it->second;
  const auto after = std::upper_bound(entries.begin(), entries.end(), line,
                                      [](uint32_t l, const Entry& e) { return l < e.generated_line; });
  return after == entries.begin() ? nullptr : &*(after - 1);
}

bool GeneratedLines::maps(std::string_view generated_file, uint32_t line) const {
  const Entry* e = covering(generated_file, line);
  return e && e->origin;
}

std::optional<PythonLine> GeneratedLines::find(std::string_view generated_file, uint32_t line) const {
  const Entry* e = covering(generated_file, line);
  if (!e || !e->origin) return std::nullopt;
  PythonLine found = *e->origin;
  found.generated_file = std::string(generated_file);
  found.generated_line = line;
  return found;
}

}  // namespace nanscope

#include "xla_thunks.hpp"

#include <map>

#include "xla_text.hpp"

namespace nanscope::xla {

namespace {

using text::each_line;
using text::line_error;
using text::number;
using text::trim;

// "[128, 1, 1]" -> {128, 1, 1}.
bool dims3(std::string_view s, std::array<uint32_t, 3>& out) {
  if (!s.starts_with('[') || !s.ends_with(']')) return false;
  s = s.substr(1, s.size() - 2);
  for (size_t i = 0; i < 3; ++i) {
    const size_t comma = s.find(',');
    if ((i < 2) == (comma == std::string_view::npos)) return false;
    uint64_t v = 0;
    if (!number(trim(s.substr(0, comma)), v) || v > UINT32_MAX) return false;
    out[i] = static_cast<uint32_t>(v);
    s = i < 2 ? s.substr(comma + 1) : std::string_view{};
  }
  return true;
}

// "gemm_fusion_dot grid: [128, 1, 1] threads: [64, 1, 1]  shared_memory: 49152 bytes".
bool kernel_launch(std::string_view rest, Thunk& t) {
  const size_t grid = rest.find(" grid: "), threads = rest.find(" threads: "), shared = rest.find("  shared_memory: ");
  if (grid == std::string_view::npos || threads == std::string_view::npos || shared == std::string_view::npos ||
      !(grid < threads && threads < shared) || !rest.ends_with(" bytes"))
    return false;
  t.name = std::string(rest.substr(0, grid));
  const std::string_view bytes = rest.substr(shared + 17, rest.size() - 6 - shared - 17);
  return !t.name.empty() && t.name.find(' ') == std::string::npos &&
         dims3(rest.substr(grid + 7, threads - grid - 7), t.grid) &&
         dims3(rest.substr(threads + 10, shared - threads - 10), t.threads) && number(bytes, t.shared_memory);
}

// "001: kCustomKernel [deps] rest": the indent (spaces), the id, the kind and the rest.
bool thunk_line(std::string_view line, size_t& indent, Thunk& t) {
  indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos) return false;
  line = trim(line.substr(indent));
  const size_t colon = line.find(": k"), open = line.find(" ["), close = line.find("]");
  uint64_t id = 0;
  if (colon == std::string_view::npos || open == std::string_view::npos || close == std::string_view::npos ||
      open < colon || close < open || !number(line.substr(0, colon), id) || id > UINT32_MAX)
    return false;
  t.id = static_cast<uint32_t>(id);
  // XLA pads the kind to the widest kind of the sequence ("kCustomKernel   [" beside a
  // kCublasLtMatmul thunk, jaxlib 0.11.2).
  t.kind = std::string(trim(line.substr(colon + 2, open - colon - 2)));
  if (t.kind.empty() || t.kind.find(' ') != std::string::npos) return false;
  const std::string_view rest = trim(line.substr(close + 1));
  if (t.kernel()) return kernel_launch(rest, t);
  t.name = std::string(rest);
  return true;
}

}  // namespace

namespace {

// A nested sequence's heading, which a kWhile's or kConditional's own sequences follow
// ("condition:", "  body:"; jaxlib 0.11.2's thunk_sequence.txt), not a thunk: the thunks under it
// keep the loop as their parent.
bool sequence_heading(std::string_view line) {
  const std::string_view t = trim(line);
  if (t.size() < 2 || t.size() > 32 || !t.ends_with(':')) return false;
  for (char c : t.substr(0, t.size() - 1))
    if (!(c >= 'a' && c <= 'z') && c != '_' && c != ' ' && !(c >= '0' && c <= '9')) return false;
  return true;
}

}  // namespace

ThunkSequence parse_thunk_sequence(std::string_view text) {
  ThunkSequence out;
  std::vector<std::pair<size_t, int>> open;  // (indent, thunk index) of the enclosing thunks
  each_line(text, [&](std::string_view line, uint32_t n) {
    if (trim(line).empty() || sequence_heading(line)) return;
    Thunk t;
    size_t indent = 0;
    if (!thunk_line(line, indent, t)) return out.errors.push_back(line_error(n, line));
    while (!open.empty() && open.back().first >= indent) open.pop_back();
    t.parent = open.empty() ? -1 : open.back().second;
    if (t.parent >= 0 && indent != open.back().first + 4) return out.errors.push_back(line_error(n, line));
    open.emplace_back(indent, static_cast<int>(out.thunks.size()));
    out.thunks.push_back(std::move(t));
  });
  return out;
}

namespace {

struct MetadataEntry {
  std::string annotation, kind;
  int64_t id = -1;
};

// One line of thunk_metadata.txt into the entry being read; false on a line of an unknown shape.
bool metadata_line(std::string_view t, MetadataEntry& e, int& depth) {
  const auto quoted = [](std::string_view v, std::string& out) {
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') return false;
    return out = std::string(v.substr(1, v.size() - 2)), true;
  };
  if (t == "thunk_metadata {" || t == "thunk_info {") return ++depth, true;
  if (t == "}") return --depth >= 0;
  if (t.starts_with("profile_annotation: ")) return quoted(t.substr(20), e.annotation);
  if (t.starts_with("thunk_kind: ")) return quoted(t.substr(12), e.kind);
  uint64_t id = 0;
  if (t.starts_with("thunk_id: ") && number(t.substr(10), id)) return e.id = static_cast<int64_t>(id), true;
  return false;
}

}  // namespace

void attach_thunk_metadata(ThunkSequence& sequence, std::string_view metadata_text) {
  std::map<uint32_t, MetadataEntry> by_id;
  MetadataEntry entry;
  int depth = 0;
  each_line(metadata_text, [&](std::string_view line, uint32_t n) {
    const std::string_view t = trim(line);
    if (t.empty()) return;
    if (!metadata_line(t, entry, depth)) return sequence.errors.push_back("metadata " + line_error(n, line));
    if (depth != 0) return;
    if (entry.id >= 0) by_id[static_cast<uint32_t>(entry.id)] = entry;
    entry = MetadataEntry{};
  });
  for (Thunk& t : sequence.thunks) {
    const auto e = by_id.find(t.id);
    if (e == by_id.end()) continue;
    if (e->second.kind != t.kind) {
      sequence.errors.push_back("metadata of thunk " + std::to_string(t.id) + " says " + e->second.kind + ", not " + t.kind);
      continue;
    }
    t.annotation = e->second.annotation;
  }
}

}  // namespace nanscope::xla

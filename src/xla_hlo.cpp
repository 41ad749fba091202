// parse_hlo_sources (xla_dump.hpp): the source tables and the instructions of optimized HLO text.
#include <map>

#include "xla_dump.hpp"
#include "xla_text.hpp"

namespace nanscope::xla {

namespace {

using text::each_line;
using text::computation_name;
using text::field;
using text::line_error;
using text::number;
using text::trim;

// The tables JAX 0.10 writes before the computations: FileNames, FunctionNames (N "text"),
// FileLocations (N {file_name_id=.. function_name_id=.. line=..}), StackFrames (N {file_location_id=..
// parent_frame_id=..}).
struct Tables {
  std::map<uint64_t, std::string> files, functions;
  struct Location {
    uint64_t file = 0, function = 0, line = 0;
  };
  std::map<uint64_t, Location> locations;
  std::map<uint64_t, uint64_t> frame_location;

  bool read(std::string_view section, std::string_view line) {
    const size_t space = line.find(' ');
    uint64_t id = 0;
    if (space == std::string_view::npos || !number(line.substr(0, space), id)) return false;
    const std::string_view body = line.substr(space + 1);
    if (section == "FileNames" || section == "FunctionNames") {
      if (body.size() < 2 || body.front() != '"' || body.back() != '"') return false;
      (section == "FileNames" ? files : functions)[id] = std::string(body.substr(1, body.size() - 2));
      return true;
    }
    uint64_t a = 0, b = 0, c = 0;
    if (section == "FileLocations" && number(field(body, "file_name_id="), a) &&
        number(field(body, "function_name_id="), b) && number(field(body, "line="), c))
      return locations[id] = {a, b, c}, true;
    if (section == "StackFrames" && number(field(body, "file_location_id="), a)) return frame_location[id] = a, true;
    return false;
  }
  std::optional<SourceLine> frame(uint64_t id) const {
    const auto f = frame_location.find(id);
    const auto l = f == frame_location.end() ? locations.end() : locations.find(f->second);
    if (l == locations.end()) return std::nullopt;
    const auto file = files.find(l->second.file), fn = functions.find(l->second.function);
    return SourceLine{file == files.end() ? "?" : file->second, fn == functions.end() ? "?" : fn->second,
                      static_cast<uint32_t>(l->second.line)};
  }
};

bool is_section(std::string_view t) {
  return t == "FileNames" || t == "FunctionNames" || t == "FileLocations" || t == "StackFrames";
}

// "%name = shape opcode(...), ..." or "ROOT %name = ...": the instruction's name, or empty.
std::string_view instruction_name(std::string_view t) {
  if (t.starts_with("ROOT ")) t.remove_prefix(5);
  if (!t.starts_with('%')) return {};
  const size_t eq = t.find(" = ");
  return eq == std::string_view::npos ? std::string_view{} : t.substr(1, eq - 1);
}

struct PendingFrame {
  std::string name;
  uint64_t frame = 0;
};

// One instruction line: its computation, callee, op_name and line (or the stack frame to resolve).
void read_instruction(std::string_view t, std::string_view computation, HloSources& out,
                      std::vector<PendingFrame>& frames) {
  const std::string name(instruction_name(t));
  if (name.empty()) return;
  if (!computation.empty()) out.computations[std::string(computation)].push_back(name);
  if (const std::string_view c = text::callee(t); !c.empty()) out.calls[name] = std::string(c);
  const size_t meta = t.find("metadata={");
  if (meta == std::string_view::npos) return;
  const std::string_view m = t.substr(meta + 10, t.find('}', meta) - meta - 10);
  if (const std::string_view op = field(m, "op_name="); !op.empty()) out.op_name[name] = std::string(op);
  uint64_t frame = 0, line = 0;
  if (number(field(m, "stack_frame_id="), frame)) frames.push_back({name, frame});
  else if (number(field(m, "source_line="), line))  // before StackFrames: the line in the metadata
    out.line[name] = SourceLine{std::string(field(m, "source_file=")), "", static_cast<uint32_t>(line)};
}

}  // namespace

HloSources parse_hlo_sources(std::string_view text) {
  HloSources out;
  Tables tables;
  std::string_view section, computation;
  std::vector<PendingFrame> frames;  // resolved once every table is read
  each_line(text, [&](std::string_view line, uint32_t n) {
    const std::string_view t = trim(line);
    if (is_section(t)) {
      section = t;
      return;
    }
    if (t.empty()) {
      section = {};
      return;
    }
    if (!section.empty()) {
      if (!tables.read(section, t)) out.errors.push_back(line_error(n, t));
      return;
    }
    if (const std::string_view c = computation_name(t); !c.empty()) {
      computation = c;
      out.computations[std::string(c)];
      return;
    }
    read_instruction(t, computation, out, frames);
  });
  for (const PendingFrame& p : frames)
    if (auto line = tables.frame(p.frame)) out.line[p.name] = std::move(*line);
  return out;
}

}  // namespace nanscope::xla

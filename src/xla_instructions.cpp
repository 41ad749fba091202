// parse_hlo_instructions and kernel_name_for (xla_kernels.hpp): the operands and shape of each
// instruction of optimized HLO text, which the kernel mapping needs beside the source tables
// parse_hlo_sources reads.
#include "xla_kernels.hpp"
#include "xla_text.hpp"

namespace nanscope::xla {

namespace {

using text::computation_name;
using text::each_line;
using text::line_error;
using text::trim;

// The index just past the bracket closing the one at s[open], or npos.
size_t past_closing(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '{' || s[i] == '[') ++depth;
    else if ((s[i] == ')' || s[i] == '}' || s[i] == ']') && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// "%a, %b" (or "f32[4]{0} %a" in older dumps): the names after '%'; literals are not operands.
std::vector<std::string> operand_names(std::string_view list) {
  std::vector<std::string> out;
  text::each_top_level_item(list, [&](std::string_view item) {
    if (const size_t pct = item.rfind('%'); pct != std::string_view::npos) out.emplace_back(item.substr(pct + 1));
  });
  return out;
}

// "name = shape opcode(operands), ..." after the '%'.
bool instruction(std::string_view t, Instruction& out) {
  const size_t eq = t.find(" = ");
  out.name = std::string(t.substr(0, eq));
  std::string_view rest = t.substr(eq + 3);
  const size_t shape_end = rest.starts_with('(') ? past_closing(rest, 0) : rest.find(' ');
  if (shape_end == std::string_view::npos || shape_end >= rest.size() || rest[shape_end] != ' ') return false;
  out.shape_text = std::string(rest.substr(0, shape_end));
  rest = rest.substr(shape_end + 1);
  const size_t open = rest.find('(');
  const size_t close = open == std::string_view::npos ? open : past_closing(rest, open);
  if (close == std::string_view::npos) return false;
  out.opcode = std::string(rest.substr(0, open));
  out.operands = operand_names(rest.substr(open + 1, close - open - 2));
  if (out.opcode == "constant" || out.opcode == "parameter") out.literal = std::string(trim(rest.substr(open + 1, close - open - 2)));
  return !out.opcode.empty() && out.opcode.find(' ') == std::string::npos;
}

}  // namespace

HloInstructions parse_hlo_instructions(std::string_view text) {
  HloInstructions out;
  std::string computation;  // the one whose instructions are being read
  each_line(text, [&](std::string_view line, uint32_t n) {
    std::string_view t = trim(line);
    if (const std::string_view c = computation_name(t); !c.empty()) return void(computation = std::string(c));
    const bool root = t.starts_with("ROOT ");
    if (root) t.remove_prefix(5);
    const size_t eq = t.find(" = ");
    if (!t.starts_with('%') || eq == std::string_view::npos || t.substr(0, eq).find_first_of(" (") != std::string_view::npos)
      return;  // a header, a computation's signature, a brace, a source table
    Instruction i;
    if (!instruction(t.substr(1), i)) return out.errors.push_back(line_error(n, line));
    i.root = root;
    i.calls = std::string(text::callee(t));
    if (root && !computation.empty()) out.root_of[computation] = i.name;
    std::string name = i.name;
    out.by_name.emplace(std::move(name), std::move(i));
  });
  return out;
}

std::string kernel_name_for(std::string_view instruction) {
  std::string name(instruction);
  for (char& c : name)
    if (c == '.' || c == '-') c = '_';
  return name;
}

}  // namespace nanscope::xla

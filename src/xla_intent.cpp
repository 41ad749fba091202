// intended_inf (xla_kernels.hpp): the infinities a fusion writes on purpose, as ATen's fills of
// +-inf are known (decode/written.hpp kIntend*): a constant +-inf that reaches the fusion's output
// through ops that move values without arithmetic.
#include <vector>

#include "decode/written.hpp"
#include "xla_kernels.hpp"
#include "xla_text.hpp"

namespace nanscope::xla {

namespace {

// Ops whose output elements are some of their operands' elements, unchanged (a select's
// predicate, operand 0, is not a value it passes on). maximum and minimum are left out: max(x,
// -inf) is x, so what reaches the output depends on x.
bool passes_values(std::string_view op) {
  for (std::string_view o : {"broadcast", "reshape", "bitcast", "copy", "transpose", "convert", "slice", "dynamic-slice",
                             "concatenate", "pad", "reverse", "dynamic-update-slice", "select"})
    if (o == op) return true;
  return false;
}

struct Carry {
  const HloSources& sources;
  const HloInstructions& hlo;

  // The kIntend* bits instruction `name` may carry unchanged; `args`: what the parameters of its
  // computation carry (a nested fusion's operands), empty at the top (outside values are not ours).
  uint8_t of(const std::string& name, const std::vector<uint8_t>& args, int depth) {
    const auto it = hlo.by_name.find(name);
    if (depth > 64 || it == hlo.by_name.end()) return 0;
    const Instruction& i = it->second;
    if (i.opcode == "constant")
      return i.literal == "-inf" ? decode::kIntendNegInf : i.literal == "inf" ? decode::kIntendPosInf : 0;
    if (i.opcode == "parameter") {
      uint64_t n = 0;
      return text::number(i.literal, n) && n < args.size() ? args[n] : 0;
    }
    if (i.opcode == "fusion") return of_fusion(name, operand_bits(i, 0, args, depth), depth + 1);
    if (!passes_values(i.opcode)) return 0;
    uint8_t bits = 0;
    for (uint8_t b : operand_bits(i, i.opcode == "select" ? 1 : 0, args, depth)) bits |= b;
    return bits;
  }

  std::vector<uint8_t> operand_bits(const Instruction& i, size_t first, const std::vector<uint8_t>& args, int depth) {
    std::vector<uint8_t> out;
    for (size_t k = 0; k < i.operands.size(); ++k) out.push_back(k < first ? 0 : of(i.operands[k], args, depth + 1));
    return out;
  }

  // What a fusion's root carries, its parameters bound to `args`.
  uint8_t of_fusion(const std::string& fusion, const std::vector<uint8_t>& args, int depth) {
    const auto calls = sources.calls.find(fusion);
    if (calls == sources.calls.end()) return 0;
    const auto ops = sources.computations.find(calls->second);
    if (ops == sources.computations.end()) return 0;
    for (const std::string& op : ops->second)
      if (const auto ins = hlo.by_name.find(op); ins != hlo.by_name.end() && ins->second.root) return of(op, args, depth);
    return 0;
  }
};

}  // namespace

uint8_t intended_inf(const HloSources& sources, const HloInstructions& hlo, std::string_view fusion) {
  Carry c{sources, hlo};
  return c.of_fusion(std::string(fusion), {}, 0);
}

}  // namespace nanscope::xla

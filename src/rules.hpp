// The rules file (NANSCOPE_RULES=rules.json): watches for code you cannot change. A rule
// matches kernels by a regex on the demangled name and says, in terms of the kernel's
// parameters, where the output buffer is, its shape and which rows are padding. At launch
// time resolve() reads those parameters and builds a WatchSpec. The format is documented in
// docs/rules.md. Nothing here throws.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <optional>
#include <string>

#include "safe_regex.hpp"
#include <string_view>
#include <vector>

#include "padding.hpp"
#include "signature.hpp"

namespace nanscope {

// Bytes of kernel parameter `param` starting at byte `offset` inside it (non-zero for a field
// of a struct parameter). `type` is the width and signedness of an integer read there; it is
// ignored for pointers (always 8 bytes).
struct ParamRef {
  uint32_t param = 0;
  uint32_t offset = 0;
  IndexType type = IndexType::i32;
};

// A size: a constant, or an integer kernel parameter read at launch.
struct SizeRef {
  bool from_param = false;
  uint64_t value = 0;  // when !from_param
  ParamRef ref;        // when from_param
};

struct RuleOutput {
  ParamRef ptr;  // where the device pointer of row 0 sits
  DType dtype = DType::none;
  SizeRef rows;
  SizeRef row_elements;
  std::optional<SizeRef> row_stride;  // absent: rows are dense
};

struct RulePadding {
  PaddingSource source = PaddingSource::none;
  // seq_lens / real_count_device / mask: where the device pointer sits; real_count_host: the
  // integer parameter holding the count (ref.type is its width). For seq_lens and
  // real_count_device ref.type is the element type on the device.
  ParamRef ref;
  int64_t pad_value = 0;  // seq_lens
};

struct Rule {
  std::string name;    // also the watch name
  std::string kernel;  // ECMAScript regex as written, searched in the demangled name
  std::optional<SafeRegex> kernel_re;  // compiled `kernel`
  RuleOutput output;
  RulePadding padding;
  Action action = Action::detect;
  // Where the rule came from, for messages: "rules.json: rule 2 (\"name\")".
  std::string file;
  std::size_t index = 0;

  bool matches(std::string_view demangled) const;
  std::string where() const;
};

struct RulesFile {
  std::vector<Rule> rules;
};

struct RulesResult {
  RulesFile file;
  std::vector<std::string> errors;  // one per rejected rule or file-level problem
};

// Reads and parses `path`. A missing/unreadable file or invalid JSON gives no rules and one
// error; a bad rule is skipped with one error and the others are kept.
// A rules file is a few KiB; a larger one than this is refused with a message, not read whole.
inline constexpr std::uint64_t kMaxRulesBytes = 4u << 20;
RulesResult load_rules(const std::string& path);
RulesResult parse_rules(std::string_view text, const std::string& path_for_messages);

// Copies `bytes` bytes of kernel parameter `param` from byte `offset` into `out`; false when
// the parameter does not exist or the bytes run past its end.
using ParamReader = std::function<bool(uint32_t param, uint32_t offset, void* out, size_t bytes)>;

// Builds the watch a matched rule describes for one launch and validates it. On failure
// returns nullopt and, when `error` is not null, sets it to a message naming the rule and field.
std::optional<WatchSpec> resolve(const Rule& rule, const ParamReader& read, std::string* error);

}  // namespace nanscope

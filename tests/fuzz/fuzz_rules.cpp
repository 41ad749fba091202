// libFuzzer target: a rules file (NANSCOPE_RULES) through parse_rules, and each rule's kernel
// pattern searched in a long name: errors are messages, never a crash or a stack overflow.
#include <cstdint>
#include <string>
#include <string_view>

#include "rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nanscope::RulesResult r = nanscope::parse_rules(text, "fuzz.json");
  static const std::string name = "void kernel<" + std::string(5000, 'a') + ">(float*)";
  for (const nanscope::Rule& rule : r.file.rules) (void)rule.matches(name);
  return 0;
}

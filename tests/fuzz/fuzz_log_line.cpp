// libFuzzer target: one JSONL line through the report's parser and range checks. Never crashes,
// and a line the parser accepts has no negative count (the CI gate cannot be defeated).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "event.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static nanscope::report::Event ev;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  if (!nanscope::report::parse_line(line, ev)) {
    if (ev.counts.nan < 0 || ev.counts.pos_inf < 0 || ev.counts.neg_inf < 0 || ev.count < 0) std::abort();
  }
  return 0;
}

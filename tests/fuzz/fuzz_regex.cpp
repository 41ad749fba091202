// libFuzzer target: a pattern (the first line) and a subject (the rest) through SafeRegex.
#include <cstdint>
#include <string_view>

#include "safe_regex.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = in.find('\n');
  const std::string_view pattern = in.substr(0, nl), subject = nl == in.npos ? in : in.substr(nl + 1);
  if (auto re = nanscope::SafeRegex::compile(pattern, nullptr)) (void)re->search(subject);
  return 0;
}

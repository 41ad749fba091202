// libFuzzer target: a mangled kernel name through the demangler and signature parser.
#include <cstdint>
#include <string_view>

#include "signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)nanscope::parse_kernel_signature(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

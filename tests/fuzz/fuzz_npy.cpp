// libFuzzer target: a .npy file through the report's reader (--dump): crafted headers are
// errors, never bad_alloc, an uncaught exception or an overflow.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "dump.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/nanscope-fuzz-" + std::to_string(::getpid()) + ".npy";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  nanscope::report::NpyStats st;
  std::string error;
  (void)nanscope::report::read_npy(path, size % 2 ? "bf16" : "f8e5m2", st, error);
  return 0;
}

#include "npy_writer.hpp"

#include <unistd.h>

#include "safe_file.hpp"

namespace nanscope {

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::f64: return "<f8";
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";
    case DType::f8e4m3:
    case DType::f8e5m2: return "|u1";
    default: return "|u1";
  }
}

std::string write_npy(const std::string& path, DType dtype, const std::vector<uint64_t>& shape,
                      const void* data, std::size_t bytes) {
  std::string dims;
  for (uint64_t d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();  // (n,) keeps its comma
  std::string header = "{'descr': '" + std::string(npy_descr(dtype)) + "', 'fortran_order': False, 'shape': (" +
                       dims + "), }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  // A new file (safe_file.hpp): a dump never lands in a file or link someone planted.
  std::string error;
  const int fd = open_for_writing(path, NewFile::exclusive, &error);
  if (fd < 0) return "cannot write dump: " + error;
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t len = static_cast<uint16_t>(header.size());
  std::string head(reinterpret_cast<const char*>(magic), 8);
  head.push_back(static_cast<char>(len & 0xff));
  head.push_back(static_cast<char>(len >> 8));
  head += header;
  bool ok = write_all(fd, head) && write_all(fd, {static_cast<const char*>(data), bytes});
  ok = ::close(fd) == 0 && ok;
  return ok ? std::string() : "cannot write dump '" + path + "'";
}

}  // namespace nanscope

#include "npy_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

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
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return "cannot create dump '" + path + "': " + std::strerror(errno);
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xff), static_cast<unsigned char>(len >> 8)};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(len_le, 1, 2, f) == 2 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, 1, bytes, f) == bytes;
  ok = (std::fclose(f) == 0) && ok;
  return ok ? std::string() : "cannot write dump '" + path + "'";
}

}  // namespace nanscope

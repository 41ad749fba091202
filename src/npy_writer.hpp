// Writes a buffer as a NumPy .npy file (format 1.0). bf16 and fp8 are stored as raw integer
// words (NumPy has no such types); a JSON sidecar says how to decode them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "signature.hpp"

namespace nanscope {

// NumPy descr of the storage type: "<f8", "<f4", "<f2", "<u2" (bf16), "|u1" (fp8).
const char* npy_descr(DType dtype);

// Returns an empty string on success, else a message naming the path.
std::string write_npy(const std::string& path, DType dtype, const std::vector<uint64_t>& shape,
                      const void* data, std::size_t bytes);

}  // namespace nanscope

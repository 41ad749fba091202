// Versioned C ABI structs (NVTX style): every public struct starts with `size_t struct_size`,
// set by the caller to the sizeof it was compiled with. A newer nanscope must keep serving an
// older caller (smaller struct) and an older nanscope a newer caller (larger struct), so both
// directions touch only the bytes both sides know: min(caller's size, ours). A size below the
// first version's is not a nanscope struct at all and is rejected.
#pragma once
#include <cstddef>
#include <cstring>

namespace nanscope {

// Bytes of the caller's struct nanscope may read or write, struct_size included; 0 when the
// caller's struct is smaller than version 1 (reject it).
constexpr std::size_t abi_struct_bytes(std::size_t caller_size, std::size_t v1_size, std::size_t our_size) {
  if (caller_size < v1_size) return 0;
  return caller_size < our_size ? caller_size : our_size;
}

// Reads a caller's struct into `out`, a copy of our version whose fields the caller does not
// carry keep the values `out` already holds (their defaults). False: too small, nothing read.
template <typename T>
bool abi_read(const T& in, std::size_t v1_size, T& out) {
  const std::size_t n = abi_struct_bytes(in.struct_size, v1_size, sizeof(T));
  if (n == 0) return false;
  std::memcpy(static_cast<void*>(&out), &in, n);
  out.struct_size = sizeof(T);
  return true;
}

// Writes our struct `in` into the caller's `out`: only the fields its struct_size carries; its
// struct_size and any tail past our version stay as the caller set them. False: too small.
template <typename T>
bool abi_write(const T& in, std::size_t v1_size, T& out) {
  const std::size_t n = abi_struct_bytes(out.struct_size, v1_size, sizeof(T));
  if (n == 0) return false;
  constexpr std::size_t head = sizeof(in.struct_size);
  std::memcpy(reinterpret_cast<char*>(&out) + head, reinterpret_cast<const char*>(&in) + head, n - head);
  return true;
}

}  // namespace nanscope

// Tensor dumps: .npy reading and --dump printing (sidecar shape in docs/report.md).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "model.hpp"

namespace nanscope::report {

struct NpyStats {
  std::string descr, dtype;  // numpy descr ("<f4") and element type read ("f32", "bf16", ...)
  bool fortran = false;
  std::vector<std::int64_t> shape;
  std::int64_t elements = 0, nan = 0, pos_inf = 0, neg_inf = 0, finite = 0;
  double min = 0, max = 0;                   // of the finite values
  std::vector<std::int64_t> row_nan, row_inf;  // per index of the first dimension
};

// Opens `path` for reading only if it is a regular file (not a FIFO, device or link) of at most
// max_bytes; its size in `bytes`. -1 with `error` naming the path otherwise.
int open_regular_file(const std::string& path, std::uint64_t max_bytes, std::uint64_t& bytes, std::string& error);
// dtype_hint: the sidecar's "dtype" (tells bf16 from raw u16, f8e4m3 / f8e5m2 from raw u8).
bool read_npy(const std::string& path, const std::string& dtype_hint, NpyStats& st, std::string& error);
int print_dump(const std::string& npy, const DumpRef* ref, const Analysis* a, std::ostream& out, std::ostream& err);

}  // namespace nanscope::report

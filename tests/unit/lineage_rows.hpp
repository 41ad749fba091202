// Row-set builders shared by the lineage tests (host model and device findings).
#pragma once
#include <cstdint>
#include <string>

#include "lineage.hpp"

namespace nanscope::lineage::testing_rows {

inline RowSet rows(uint64_t first, uint64_t last, bool padding) {
  RowSet r;
  r.ranges.push_back(RowRange{first, last, padding});
  (padding ? r.counts_padding : r.counts_real) = last - first + 1;
  return r;
}
inline RowSet padding(uint64_t first, uint64_t last) { return rows(first, last, true); }
inline RowSet real(uint64_t first, uint64_t last) { return rows(first, last, false); }

// "first-last:p|r ..." for a compact comparison.
inline std::string show(const RowSet& r) {
  std::string s;
  for (const auto& x : r.ranges) {
    if (!s.empty()) s += ' ';
    s += std::to_string(x.first) + '-' + std::to_string(x.last) + (x.padding ? ":p" : ":r");
  }
  return s;
}

}  // namespace nanscope::lineage::testing_rows

// Test helpers for the ATen decoders: kernel rows from the fixture (copied from the torch 2.11
// sm_90 table), and launch parameter bytes built to a layout.
#pragma once
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "decode/aten.hpp"

namespace aten_test {

using nanscope::decode::Layout;

struct KernelRow {
  std::string mangled, demangled;
  Layout layout;
};

// "0@0:4 1@8:536" -> {{0,4},{8,536}}
inline Layout parse_layout(const std::string& text) {
  Layout l;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto at = item.find('@'), colon = item.find(':');
    l.emplace_back(std::stoul(item.substr(at + 1, colon - at - 1)), std::stoul(item.substr(colon + 1)));
  }
  return l;
}

inline std::vector<KernelRow> load_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<KernelRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::size_t start = 0;
    for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      f.push_back(line.substr(start, tab - start));
    f.push_back(line.substr(start));
    if (f.size() != 4) throw std::runtime_error("bad row: " + line.substr(0, 80));
    rows.push_back({f[0], f[3], parse_layout(f[1])});
  }
  return rows;
}

inline const std::vector<KernelRow>& fixture_rows() {
  static const auto rows = load_rows(NANSCOPE_FIXTURE_DIR "/aten_sm90_kernels.tsv");
  return rows;
}

// The fixture row whose demangled name contains `needle` (exactly one must).
inline const KernelRow& row(const std::string& needle) {
  const KernelRow* hit = nullptr;
  for (const auto& r : fixture_rows())
    if (r.demangled.find(needle) != std::string::npos) {
      if (hit) throw std::runtime_error("ambiguous fixture needle: " + needle);
      hit = &r;
    }
  if (!hit) throw std::runtime_error("no fixture row: " + needle);
  return *hit;
}

inline nanscope::decode::FamilyMatch match(const KernelRow& r) {
  return nanscope::decode::match_aten(r.mangled, r.demangled, r.layout);
}
inline nanscope::decode::FamilyMatch match(const KernelRow& r, const Layout& other) {
  return nanscope::decode::match_aten(r.mangled, r.demangled, other);
}

// Parameter bytes for one launch, sized by a layout.
struct Launch {
  std::vector<std::vector<char>> bytes;
  std::vector<const char*> ptrs;
  nanscope::decode::LaunchView view;

  explicit Launch(const Layout& l) {
    for (const auto& p : l) bytes.emplace_back(p.second, char(0));
    for (const auto& b : bytes) ptrs.push_back(b.data());
    view.params = ptrs.data();
    view.count = static_cast<uint32_t>(ptrs.size());
  }
  template <class T>
  Launch& set(uint32_t param, uint32_t off, T value) {
    if (off + sizeof(T) > bytes.at(param).size()) throw std::out_of_range("param write");
    std::memcpy(bytes[param].data() + off, &value, sizeof(T));
    return *this;
  }
  Launch& grid(uint32_t x, uint32_t y = 1, uint32_t z = 1) {
    view.grid[0] = x;
    view.grid[1] = y;
    view.grid[2] = z;
    return *this;
  }
};

// OffsetCalculator<nargs, uint32_t> at `off`: IntDivider magic as its constructor computes it.
inline void put_offset_calc(Launch& l, uint32_t param, uint32_t off, uint32_t nargs,
                            const std::vector<uint32_t>& sizes,
                            const std::vector<std::vector<uint32_t>>& strides /* [dim][arg] */) {
  l.set<int32_t>(param, off, static_cast<int32_t>(sizes.size()));
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const uint32_t div = sizes[d];
    uint32_t shift = 0;
    while (shift < 32 && (1u << shift) < div) ++shift;
    const uint64_t magic = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - div)) / div + 1;
    const uint32_t at = off + 4 + 12 * static_cast<uint32_t>(d);
    l.set<uint32_t>(param, at, div).set<uint32_t>(param, at + 4, static_cast<uint32_t>(magic));
    l.set<uint32_t>(param, at + 8, shift);
    for (uint32_t a = 0; a < nargs; ++a)
      l.set<uint32_t>(param, off + 304 + 4 * (static_cast<uint32_t>(d) * nargs + a), strides[d][a]);
  }
}

// An AddressQuery over a fixed set of live pointers.
struct LiveSet {
  std::set<uint64_t> ptrs;
  static bool is_live(const void* ctx, uint64_t p) {
    return static_cast<const LiveSet*>(ctx)->ptrs.count(p) != 0;
  }
  nanscope::decode::AddressQuery query() const { return {&LiveSet::is_live, this}; }
};

inline const nanscope::decode::AddressQuery kNoQuery{};

inline void expect_write(const nanscope::decode::Write& w, uint64_t ptr, uint64_t elements,
                         uint64_t span, nanscope::DType dt) {
  EXPECT_EQ(w.ptr, ptr);
  EXPECT_EQ(w.elements, elements);
  EXPECT_EQ(w.span_bytes, span);
  EXPECT_EQ(w.dtype, dt);
  EXPECT_EQ(w.elem_size, nanscope::dtype_size(dt));
}

// A write whose element size is all its type says (copies, integer outputs): dtype none.
inline void expect_untyped_write(const nanscope::decode::Write& w, uint64_t ptr, uint64_t elements,
                                 uint64_t span, uint32_t elem_size) {
  EXPECT_EQ(w.ptr, ptr);
  EXPECT_EQ(w.elements, elements);
  EXPECT_EQ(w.span_bytes, span);
  EXPECT_EQ(w.elem_size, elem_size);
  EXPECT_EQ(w.dtype, nanscope::DType::none);
}

// Mean cost of one decode_aten call, printed for the record; fails only far above the goal
// (a few hundred ns) so that a shared CI core does not make it flaky.
inline void time_decode(const char* name, const nanscope::decode::FamilyMatch& m,
                        const nanscope::decode::LaunchView& v, const nanscope::decode::AddressQuery& q) {
  constexpr int kIters = 200000;
  uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kIters; ++i) sink += nanscope::decode::decode_aten(m, v, q).writes[0].span_bytes;
  const auto t1 = std::chrono::steady_clock::now();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / kIters;
  std::printf("[aten cost] %s: %.1f ns per decode\n", name, ns);
  EXPECT_NE(sink, 0u) << name;
  EXPECT_LT(ns, 5000.0) << name;
}

}  // namespace aten_test

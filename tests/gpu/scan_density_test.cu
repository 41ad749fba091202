// Layer test for kernels/scan.cu at every NaN density (issue 18): none, one element, one row,
// half the rows, every element; every dtype; every scan kernel (plain, grouped, row-aware,
// fused fix on row-chunked and unaligned rows, the zero_padding fold-in of the general row
// kernel); rows that are 16-byte aligned, odd rows with NaN in the gaps (on a misaligned start,
// and row-chunked on an aligned one), and tiny rows on one block (the row bitmap too large for a
// block's shared window). Counts, first and last index, padding count, row ranges, the fix's
// stores, the origin state word and the cleared row bitmap are compared with a host reference.
// Exit 77 without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "scan_abi.h"
#include "scan_launch.hpp"
#include "scan_test_channel.cuh"

extern "C" {
extern const unsigned char nanscope_kernels_fatbin[];
}

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (ok) return;
  if (++failures <= 40) std::printf("FAIL %s\n", what.c_str());
}
#define EXPECT_EQ(a, b, what) \
  expect((uint64_t)(a) == (uint64_t)(b), std::string(what) + ": " #a " = " + std::to_string((uint64_t)(a)) + ", want " + std::to_string((uint64_t)(b)))

// Bit patterns per dtype: exponent mask, mantissa mask, sign bit (e4m3: NaN is S.1111.111).
struct DType { uint32_t code; int size; uint64_t exp, mant, sign; const char* name; };
const DType kTypes[] = {{NS_F64, 8, 0x7ff0000000000000ull, 0x000fffffffffffffull, 1ull << 63, "f64"},
                        {NS_F32, 4, 0x7f800000u, 0x007fffffu, 1u << 31, "f32"},
                        {NS_F16, 2, 0x7c00u, 0x03ffu, 1u << 15, "f16"},
                        {NS_BF16, 2, 0x7f80u, 0x007fu, 1u << 15, "bf16"},
                        {NS_F8E4M3, 1, 0x78u, 0x07u, 0x80u, "f8e4m3"},
                        {NS_F8E5M2, 1, 0x7cu, 0x03u, 0x80u, "f8e5m2"}};

// A random element of `kind` (0 finite, 1 NaN, 2 +Inf, 3 -Inf) with random payload and sign.
uint64_t element(const DType& t, int kind, std::mt19937_64& rng) {
  const uint64_t bits = rng() & (t.exp | t.mant | t.sign);
  if (t.code == NS_F8E4M3) {  // no infinities
    if (kind) return (bits & t.sign) | 0x7f;
    return (bits & 0x7f) == 0x7f ? bits ^ 1 : bits;
  }
  if (kind == 0) return (bits & t.exp) == t.exp ? bits ^ (t.exp & ~(t.exp - 1)) : bits;  // clear the exponent's low bit
  if (kind == 1) return (bits & (t.sign | t.mant)) | t.exp | ((bits & t.mant) ? 0 : 1);
  return t.exp | (kind == 3 ? t.sign : 0);
}

struct Layout { const char* name; uint64_t rows, row_elements, stride, misalign; unsigned grid; };  // grid 0: the tool's
// rows: the detection-only row kernel; rows_general: the same detection in the general row kernel.
enum Kernel { kPlain, kGrouped, kRowsDetect, kRowsGeneral, kRowsFix, kZeroFoldIn, kKernels };
const char* kKernelNames[] = {"plain", "grouped", "rows", "rows_general", "fix", "zero_fold_in"};
enum Density { kNone, kOneElement, kOneRow, kHalfRows, kAll, kDensities };
const char* kDensityNames[] = {"none", "one element", "one row", "half the rows", "all"};

// One case's buffer on the host: element kinds, the padding rows, the bytes.
struct Case {
  const DType* t;
  Layout l;
  uint64_t elements;
  std::vector<int8_t> kind;
  std::vector<uint8_t> padding;  // per row
  std::vector<unsigned char> bytes;
  uint32_t source;
};

bool in_row(const Case& c, uint64_t i) { return i % c.l.stride < c.l.row_elements; }

Case make_case(const DType& t, const Layout& l, Density d, uint32_t source, std::mt19937_64& rng) {
  Case c{&t, l, (l.rows - 1) * l.stride + l.row_elements, {}, {}, {}, source};
  c.kind.assign(c.elements, 0);
  c.padding.assign(l.rows, 0);
  for (uint64_t r = 0; r < l.rows; ++r) c.padding[r] = source == NS_PAD_COUNT_DEVICE || source == NS_PAD_COUNT_HOST
                                                          ? r >= l.rows * 3 / 4
                                                          : (r % 5 == 3 || r >= l.rows * 3 / 4);
  auto row_bad = [&](uint64_t r) {
    for (uint64_t j = 0; j < l.row_elements; ++j) c.kind[r * l.stride + j] = 1 + (int)(rng() % 3);
  };
  if (d == kOneElement) c.kind[(rng() % l.rows) * l.stride + rng() % l.row_elements] = 1 + (int)(rng() % 3);
  if (d == kOneRow) row_bad(l.rows - 1);
  if (d == kHalfRows)
    for (uint64_t r = l.rows / 2; r < l.rows; ++r) row_bad(r);
  if (d == kAll)
    for (uint64_t i = 0; i < c.elements; ++i) c.kind[i] = 1 + (int)(rng() % 3);
  for (uint64_t i = 0; i < c.elements; ++i)  // gaps hold NaN (row-aware scans must ignore them)
    if (!in_row(c, i) && d != kNone) c.kind[i] = 1;
  c.bytes.resize(l.misalign * t.size + c.elements * t.size);
  for (uint64_t i = 0; i < c.elements; ++i) {
    const int k = t.code == NS_F8E4M3 && c.kind[i] ? 1 : c.kind[i];
    c.kind[i] = (int8_t)k;
    const uint64_t v = element(t, k, rng);
    std::memcpy(&c.bytes[(l.misalign + i) * t.size], &v, t.size);
  }
  return c;
}

struct Want {
  uint64_t nan = 0, pinf = 0, ninf = 0, first = ~0ull, last = 0, padding = 0;
  std::vector<uint32_t> first_row, last_row, range_pad;
  bool truncated = false;
  uint64_t bad() const { return nan + pinf + ninf; }
};

// The host reference: what `kernel` must report for the case, with the ranges the record keeps.
Want reference(const Case& c, Kernel kernel, bool chunked) {
  Want w;
  const bool rows = kernel >= kRowsDetect, zero_only = kernel == kZeroFoldIn && chunked;
  std::vector<uint8_t> flagged(c.l.rows, 0);
  for (uint64_t i = 0; i < c.elements; ++i) {
    const uint64_t r = i / c.l.stride;
    if (!c.kind[i] || (rows && !in_row(c, i)) || (zero_only && !c.padding[r])) continue;
    w.nan += c.kind[i] == 1, w.pinf += c.kind[i] == 2, w.ninf += c.kind[i] == 3;
    w.first = std::min(w.first, i), w.last = std::max(w.last, i);
    w.padding += rows && c.padding[r];
    flagged[r] = 1;
  }
  for (uint64_t r = 0; r < c.l.rows && rows; ++r) {
    if (!flagged[r]) continue;
    const size_t n = w.first_row.size();
    if (n && w.last_row[n - 1] + 1 == r && w.range_pad[n - 1] == c.padding[r]) w.last_row[n - 1] = (uint32_t)r;
    else if (n < NANSCOPE_MAX_ROW_RANGES) w.first_row.push_back((uint32_t)r), w.last_row.push_back((uint32_t)r), w.range_pad.push_back(c.padding[r]);
    else w.truncated = true;
  }
  return w;
}

// Device side of the channel and the per-case state, shared by every case.
struct Rig {
  CUfunction fn[kKernels];
  int sms = 0;
  TestChannel ch;
  unsigned long long* states = nullptr;  // origin state words
  unsigned long long* row_state = nullptr;  // [last_state words][row bitmap]
  uint64_t consumed = 0;
  static constexpr uint64_t kCap = 64;
};

nanscope_scan_task base_task(const Rig& g, uint64_t ptr, const Case& c, uint32_t launch) {
  nanscope_scan_task t{};
  t.buffers[0] = {ptr, c.elements, c.t->code, 2};
  t.buffer_count = 1;
  t.launch_id = launch;
  t.kernel_id = 7;
  t.accum = g.ch.acc;
  t.channel_dev = g.ch.ctrl;
  t.channel_host = g.ch.dev_header();
  t.records = g.ch.dev_records();
  t.channel_capacity = Rig::kCap;
  t.buffer_state = g.states;
  t.out_state[0] = 3;  // slot 3, generation 0
  return t;
}

void add_row_spec(nanscope_scan_task& t, const Rig& g, const Case& c, Kernel k, uint64_t source_ptr, bool chunked) {
  t.row_aware_mask = 1;
  nanscope_row_spec& s = t.row_specs[0];
  s.rows = c.l.rows, s.row_elements = c.l.row_elements, s.row_stride = c.l.stride;
  s.source = c.source, s.source_ptr = source_ptr, s.pad_value = 0, s.index_i64 = c.source == NS_PAD_SEQ_LENS && c.t->size == 8;
  s.host_count = c.l.rows * 3 / 4;
  s.row_bitmap = reinterpret_cast<unsigned*>(g.row_state + 8);
  s.last_state = g.row_state;
  s.inv_row_stride = 1.0 / (double)c.l.stride;
  s.fix = k >= kRowsFix, s.zero_only = k == kZeroFoldIn, s.chunked = chunked, s.watch_id = 5;
}

// The padding source of the case on the device: seq_lens (int32, or int64 for f64), a mask, a count.
std::vector<unsigned char> source_bytes(const Case& c, bool i64) {
  std::vector<unsigned char> out;
  auto push = [&](int64_t v, int size) { out.insert(out.end(), (unsigned char*)&v, (unsigned char*)&v + size); };
  if (c.source == NS_PAD_SEQ_LENS)
    for (uint8_t p : c.padding) push(p ? 0 : 5, i64 ? 8 : 4);
  if (c.source == NS_PAD_MASK)
    for (uint8_t p : c.padding) push(p, 1);
  if (c.source == NS_PAD_COUNT_DEVICE) push((int64_t)(c.l.rows * 3 / 4), 4);
  if (c.source == NS_PAD_COUNT_HOST) push(0, 4);
  return out;
}

void check_record(const volatile nanscope_record& r, const Want& w, const Case& c, Kernel k, const std::string& what) {
  EXPECT_EQ(r.nan, w.nan, what);
  EXPECT_EQ(r.pos_inf, w.pinf, what);
  EXPECT_EQ(r.neg_inf, w.ninf, what);
  EXPECT_EQ(r.first_index, w.first, what);
  EXPECT_EQ(r.last_index, w.last, what);
  EXPECT_EQ(r.elements, c.elements, what);
  if (k < kRowsDetect) {
    EXPECT_EQ(r.flags & NS_RECORD_ROWS, 0, what);
    return;
  }
  EXPECT_EQ(r.flags & (NS_RECORD_ROWS | NS_RECORD_FIXED), NS_RECORD_ROWS | (k >= kRowsFix ? NS_RECORD_FIXED : 0), what);
  EXPECT_EQ(r.counts_padding, w.padding, what);
  EXPECT_EQ(r.rows_total, c.l.rows, what);
  EXPECT_EQ(r.padding_source, c.source, what);
  EXPECT_EQ(r.range_count, w.first_row.size(), what);
  EXPECT_EQ(r.ranges_truncated, w.truncated, what);
  uint32_t pad_bits = 0;
  for (size_t i = 0; i < w.first_row.size(); ++i) {
    EXPECT_EQ(r.range_first[i], w.first_row[i], what + " range " + std::to_string(i));
    EXPECT_EQ(r.range_last[i], w.last_row[i], what + " range " + std::to_string(i));
    pad_bits |= w.range_pad[i] << i;
  }
  EXPECT_EQ(r.range_padding_bits, pad_bits, what);
}

// After the kernel: the record (or none), the origin word, the bitmap and accumulator left empty,
// and for the fix, padding rows zero and everything else as it was.
void check_case(Rig& g, const Case& c, Kernel k, bool chunked, unsigned char* d, const std::string& what) {
  const Want w = reference(c, k, chunked);
  volatile nanscope_record& r = g.ch.records[g.consumed % Rig::kCap];
  unsigned long long state = 0;
  cudaMemcpy(&state, g.states + 3, sizeof state, cudaMemcpyDeviceToHost);
  if (w.bad() == 0) {
    expect(r.seq != g.consumed + 1, what + ": a record for a clean buffer");
    EXPECT_EQ(state, NS_STATE_CLEAN, what + " state");
  } else if (r.seq != g.consumed + 1) {
    expect(false, what + ": no record");
  } else {
    check_record(r, w, c, k, what);
    const bool fixed_clean = k >= kRowsFix && w.padding == w.bad();
    EXPECT_EQ(state, fixed_clean ? NS_STATE_CLEAN : NS_STATE_NONFINITE | (g.consumed + 1) << 24, what + " state");
    g.ch.host->read_index = ++g.consumed;
  }
  std::vector<unsigned> bitmap((c.l.rows + 31) / 32);
  cudaMemcpy(bitmap.data(), g.row_state + 8, bitmap.size() * 4, cudaMemcpyDeviceToHost);
  expect(std::all_of(bitmap.begin(), bitmap.end(), [](unsigned v) { return v == 0; }), what + ": row bitmap left set");
  nanscope_scan_accum a;
  cudaMemcpy(&a, g.ch.acc, sizeof a, cudaMemcpyDeviceToHost);
  expect(a.blocks_done == 0 && a.buf[0].nan == 0 && a.buf[0].last == 0 && a.buf[0].first_inv == 0, what + ": accumulator not reset");
  if (k < kRowsFix) return;
  std::vector<unsigned char> after(c.bytes.size());
  cudaMemcpy(after.data(), d, after.size(), cudaMemcpyDeviceToHost);
  const int eb = c.t->size;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < c.elements; ++i) {
    const bool zeroed = in_row(c, i) && c.padding[i / c.l.stride];
    const unsigned char* got = &after[(c.l.misalign + i) * eb];
    const unsigned char* was = &c.bytes[(c.l.misalign + i) * eb];
    for (int b = 0; b < eb; ++b) wrong += got[b] != (zeroed ? 0 : was[b]);
  }
  EXPECT_EQ(wrong, 0, what + ": bytes the fix got wrong");
}

bool launch(Rig& g, Kernel k, nanscope_scan_task& t, unsigned grid) {
  nanscope_scan_group group{};
  void* params[] = {&t};
  if (k == kGrouped) {  // the case's buffer, then a second launch's empty buffer
    nanscope_scan_task other = t;
    other.buffers[0].elements = 0, other.launch_id = t.launch_id + 1, other.out_state[0] = 4;
    nanscope::append_launch(group, t);
    nanscope::append_launch(group, other);
    params[0] = &group;
  }
  if (cuLaunchKernel(g.fn[k], grid, 1, 1, nanscope::ScanPolicy{}.threads, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS ||
      cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("FAIL: %s kernel error\n", kKernelNames[k]);
    return false;
  }
  return true;
}

// One case under every kernel: the buffer is uploaded again before each (the fix writes it).
bool run_case(Rig& g, const Case& c, const std::string& label) {
  unsigned char *d = nullptr, *src = nullptr;
  cudaMalloc(&d, c.bytes.size());
  const bool i64 = c.source == NS_PAD_SEQ_LENS && c.t->size == 8;
  const std::vector<unsigned char> sb = source_bytes(c, i64);
  cudaMalloc(&src, sb.size() + 16);
  cudaMemcpy(src, sb.data(), sb.size(), cudaMemcpyHostToDevice);
  const uint64_t ptr = (uint64_t)(d + c.l.misalign * c.t->size);
  const bool chunked = ptr % 16 == 0 && (c.l.stride * c.t->size) % 16 == 0;
  bool ok = true;
  for (int k = 0; k < kKernels && ok; ++k) {
    cudaMemcpy(d, c.bytes.data(), c.bytes.size(), cudaMemcpyHostToDevice);
    cudaMemset(g.states, 0, 8 * sizeof(unsigned long long));
    nanscope_scan_task t = base_task(g, ptr, c, 100 + k);
    if (k >= kRowsDetect) add_row_spec(t, g, c, (Kernel)k, (uint64_t)src, chunked);
    nanscope::ScanPolicy pol;
    int fit = 0;
    cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, g.fn[k], (int)pol.threads, 0);
    pol.blocks_per_sm = std::min<unsigned>(pol.blocks_per_sm, (unsigned)std::max(fit, 1));
    const unsigned grid = c.l.grid ? c.l.grid : nanscope::scan_grid_for_task(pol, t, c.elements * c.t->size, g.sms);
    ok = launch(g, (Kernel)k, t, grid);
    if (ok) check_case(g, c, (Kernel)k, chunked, d, label + " " + kKernelNames[k] + " grid " + std::to_string(grid));
  }
  cudaFree(d);
  cudaFree(src);
  return ok;
}

}  // namespace

int main() {
  if (!have_gpu()) return 77;
  Rig g;
  CUmodule mod;
  const char* entries[] = {"nanscope_scan",      "nanscope_scan_grouped", "nanscope_scan_rows_detect",
                           "nanscope_scan_rows", "nanscope_scan_rows",    "nanscope_scan_rows_zero"};
  if (cuModuleLoadData(&mod, nanscope_kernels_fatbin) != CUDA_SUCCESS) return std::printf("FAIL: cannot load the kernels\n"), 1;
  for (int k = 0; k < kKernels; ++k)
    if (cuModuleGetFunction(&g.fn[k], mod, entries[k]) != CUDA_SUCCESS) return std::printf("FAIL: no %s\n", entries[k]), 1;
  cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount, 0);
  g.ch = make_test_channel(Rig::kCap);
  cudaMalloc(&g.states, 8 * sizeof(unsigned long long));
  const Layout layouts[] = {
      {"aligned rows", 64, 0, 0, 0, 0},            // 24 KiB + 16 B a row: two chunks and a part
      {"odd rows, gaps, misaligned", 200, 257, 260, 1, 0},
      {"odd rows, gaps, aligned", 200, 257, 272, 0, 0},  // row-chunked, with elements past the last vector
      {"tiny rows, one block", 40000, 3, 3, 0, 1},  // the bitmap does not fit a block's window
      {"aligned rows, three blocks", 64, 0, 0, 0, 3}};
  cudaMalloc(&g.row_state, 64 + (40000 / 32 + 1) * 4);
  cudaMemset(g.row_state, 0, 64 + (40000 / 32 + 1) * 4);
  const uint32_t sources[] = {NS_PAD_SEQ_LENS, NS_PAD_MASK, NS_PAD_COUNT_DEVICE, NS_PAD_COUNT_HOST};
  std::mt19937_64 rng(18);
  int cases = 0;
  for (const DType& t : kTypes) {
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; ++li) {
      Layout l = layouts[li];
      if (!l.row_elements) l.row_elements = l.stride = (24 * 1024 + 16) / t.size;
      for (int d = 0; d < kDensities; ++d) {
        const Case c = make_case(t, l, (Density)d, sources[(cases++) % 4], rng);
        const std::string label = std::string(t.name) + ", " + l.name + ", " + kDensityNames[d];
        if (!run_case(g, c, label)) return 1;
      }
    }
  }
  std::printf("%d cases x %d kernels, %d failures\n", cases, (int)kKernels, failures);
  return failures ? 1 : 0;
}

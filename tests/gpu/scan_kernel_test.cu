// Layer test for kernels/scan.cu: the embedded scan kernel, launched the way the tool launches
// it, must count NaN / +Inf / -Inf and the first and last bad index exactly, for every dtype,
// odd sizes, unaligned starts, several buffers per launch, and repeated (graph-like) runs on
// one accumulator, and a merged graph node publishing several launches in order. Exit 77 without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "scan_abi.h"
#include "scan_launch.hpp"
#include "scan_test_channel.cuh"

extern "C" {
extern const unsigned char nanscope_kernels_fatbin[];
}

namespace {
int failures = 0;
#define EXPECT_EQ_U64(a, b, what)                                                              \
  do {                                                                                          \
    if ((uint64_t)(a) != (uint64_t)(b)) {                                                       \
      std::printf("FAIL %s: got %llu want %llu\n", what, (unsigned long long)(a), (unsigned long long)(b)); \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)

struct Bits { uint64_t nan, pinf, ninf, finite_hi, mask; int size; };
// Per dtype: a NaN, +Inf, -Inf bit pattern (0 when the type has none) and element size.
Bits bits_for(uint32_t dt) {
  switch (dt) {
    case NS_F64: return {0x7ff8000000000001ull, 0x7ff0000000000000ull, 0xfff0000000000000ull, 0x3ff0000000000000ull, ~0ull, 8};
    case NS_F32: return {0x7fc00001u, 0x7f800000u, 0xff800000u, 0x3f800000u, 0xffffffffu, 4};
    case NS_F16: return {0x7e01u, 0x7c00u, 0xfc00u, 0x3c00u, 0xffffu, 2};
    case NS_BF16: return {0xffc1u, 0x7f80u, 0xff80u, 0x3f80u, 0xffffu, 2};
    case NS_F8E4M3: return {0xffu, 0, 0, 0x38u, 0xffu, 1};
    default: return {0x7eu, 0x7cu, 0xfcu, 0x3cu, 0xffu, 1};
  }
}

void put(std::vector<unsigned char>& buf, size_t byte_off, uint64_t v, int size) { std::memcpy(&buf[byte_off], &v, size); }
}  // namespace

int main() {
  if (!have_gpu()) return 77;
  CUmodule mod;
  CUfunction scan;
  if (cuModuleLoadData(&mod, nanscope_kernels_fatbin) != CUDA_SUCCESS ||
      cuModuleGetFunction(&scan, mod, "nanscope_scan") != CUDA_SUCCESS) {
    std::printf("FAIL: cannot load the embedded scan kernel\n");
    return 1;
  }
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);

  const uint64_t cap = 64;
  const TestChannel channel = make_test_channel(cap);
  nanscope_channel_host* host = channel.host;
  volatile nanscope_record* records = channel.records;
  void* host_dev = channel.host_dev;
  nanscope_channel_dev* ctrl = channel.ctrl;
  nanscope_scan_accum* acc = channel.acc;
  uint64_t consumed = 0;

  std::mt19937_64 rng(42);
  const uint32_t dtypes[] = {NS_F64, NS_F32, NS_F16, NS_BF16, NS_F8E4M3, NS_F8E5M2};
  const uint64_t sizes[] = {1, 7, 33, 4097, (1u << 20) + 3, 3u << 22};
  int cases = 0;
  for (uint32_t dt : dtypes) {
    const Bits b = bits_for(dt);
    for (uint64_t elems : sizes) {
      for (int misalign = 0; misalign < 2; ++misalign) {
        // Two buffers per launch: the second is clean, so a record from it is a bug.
        const size_t off = misalign ? (size_t)b.size * (b.size < 16 ? 1 : 0) + (b.size == 8 ? 8 : 0) : 0;
        std::vector<unsigned char> h(off + elems * b.size);
        for (uint64_t i = 0; i < elems; ++i) put(h, off + i * b.size, b.finite_hi ^ (i & 1), b.size);
        uint64_t want_nan = 0, want_pinf = 0, want_ninf = 0, first = ~0ull, last = 0;
        const int bad = elems < 8 ? 1 : 1 + (int)(rng() % 50);
        std::vector<char> kind(elems, 0);
        for (int k = 0; k < bad; ++k) kind[rng() % elems] = 1 + (int)(rng() % 3);
        for (uint64_t i = 0; i < elems; ++i) {
          int kd = kind[i];
          if (kd == 2 && !b.pinf) kd = 1;
          if (kd == 3 && !b.ninf) kd = 1;
          if (!kd) continue;
          put(h, off + i * b.size, kd == 1 ? b.nan : kd == 2 ? b.pinf : b.ninf, b.size);
          want_nan += kd == 1, want_pinf += kd == 2, want_ninf += kd == 3;
          first = std::min(first, i), last = std::max(last, i);
        }
        unsigned char* d = nullptr;
        unsigned char* clean = nullptr;
        cudaMalloc(&d, h.size());
        cudaMalloc(&clean, 4096);
        cudaMemset(clean, 0, 4096);
        cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice);
        nanscope_scan_task t{};
        t.buffers[0] = {(uint64_t)(d + off), elems, dt, 3};
        t.buffers[1] = {(uint64_t)clean, 4096u / b.size, dt, 4};
        t.buffer_count = 2;
        t.kernel_id = 9;
        t.launch_id = 1000 + cases;
        t.accum = acc;
        t.channel_dev = ctrl;
        t.channel_host = (nanscope_channel_host*)host_dev;
        t.records = (nanscope_record*)((char*)host_dev + sizeof(nanscope_channel_host));
        t.channel_capacity = cap;
        void* params[] = {&t};
        const unsigned grid = nanscope::scan_grid(nanscope::ScanPolicy{}, elems * b.size, sms);
        for (int rep = 0; rep < 2; ++rep) {  // the same accumulator twice: it must reset itself
          cuLaunchKernel(scan, grid, 1, 1, nanscope::ScanPolicy{}.threads, 1, 1, 0, nullptr, params, nullptr);
          if (cudaDeviceSynchronize() != cudaSuccess) {
            std::printf("FAIL: scan kernel error\n");
            return 1;
          }
          volatile nanscope_record& r = records[consumed % cap];
          char what[160];
          std::snprintf(what, sizeof what, "dtype %u elems %llu misalign %d rep %d", dt, (unsigned long long)elems, misalign, rep);
          if (r.seq != consumed + 1) {
            std::printf("FAIL %s: no record\n", what);
            ++failures;
            continue;
          }
          EXPECT_EQ_U64(r.nan, want_nan, what);
          EXPECT_EQ_U64(r.pos_inf, want_pinf, what);
          EXPECT_EQ_U64(r.neg_inf, want_ninf, what);
          EXPECT_EQ_U64(r.first_index, first, what);
          EXPECT_EQ_U64(r.last_index, last, what);
          EXPECT_EQ_U64(r.arg, 3, what);
          EXPECT_EQ_U64(r.elements, elems, what);
          EXPECT_EQ_U64(r.replay, (uint64_t)(2 * cases + rep), what);
          ++consumed;
          host->read_index = consumed;
          if (records[consumed % cap].seq == consumed + 1) {
            std::printf("FAIL %s: the clean buffer produced a record\n", what);
            ++failures;
          }
        }
        cudaFree(d);
        cudaFree(clean);
        ++cases;
      }
    }
  }
  // A merged graph node (nanscope_scan_grouped): three launches, published in order, each with its
  // own attribution, and each reading the state words the launches before it left.
  CUfunction grouped;
  if (cuModuleGetFunction(&grouped, mod, "nanscope_scan_grouped") != CUDA_SUCCESS) {
    std::printf("FAIL: cannot load nanscope_scan_grouped\n");
    return 1;
  }
  unsigned long long* states = nullptr;
  cudaMalloc(&states, 8 * sizeof(unsigned long long));
  // X, Y, Z, W: 5000 floats each, just over a block step (nanscope_group_part_blocks: 2 blocks
  // each), so the node runs with every block sharing every buffer (grids 1 and 6) and with a block
  // per part of each buffer (grid 8: the layout the host gives small merged nodes).
  constexpr uint32_t kN = 5000;
  float* bufs = nullptr;
  cudaMalloc(&bufs, 4 * kN * sizeof(float));
  for (unsigned grid : {1u, 6u, 8u}) {
    std::vector<float> h(4 * kN, 1.0f);
    const float qnan = std::numeric_limits<float>::quiet_NaN();
    h[7] = h[9] = h[4500] = qnan;  // X, in both of its parts
    h[2 * kN + 3] = qnan;  // Z (Y stays clean)
    h[3 * kN + 0] = -std::numeric_limits<float>::infinity();  // W
    cudaMemcpy(bufs, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(states, 0, 8 * sizeof(unsigned long long));
    auto launch = [&](uint64_t id, uint32_t kernel, uint32_t node, std::initializer_list<uint32_t> outs,
                      std::initializer_list<uint32_t> ins) {
      nanscope_scan_task t{};
      t.launch_id = id;
      t.kernel_id = kernel;
      t.graph_node = node;
      t.graph_id = 77;
      t.accum = acc;
      t.channel_dev = ctrl;
      t.channel_host = (nanscope_channel_host*)host_dev;
      t.records = (nanscope_record*)((char*)host_dev + sizeof(nanscope_channel_host));
      t.channel_capacity = cap;
      t.buffer_state = states;
      for (uint32_t o : outs) {
        t.buffers[t.buffer_count] = {(uint64_t)(bufs + kN * o), kN, NS_F32, 10 + o};
        t.out_state[t.buffer_count++] = 1 + o;  // slot 1 + buffer index, generation 0
      }
      for (uint32_t i : ins) t.in_state[t.in_count++] = 1 + i;
      return t;
    };
    nanscope_scan_group g{};
    const bool built = nanscope::append_launch(g, launch(501, 20, 5, {0}, {})) &&
                       nanscope::append_launch(g, launch(502, 21, 6, {1, 2}, {0})) &&
                       nanscope::append_launch(g, launch(503, 22, 7, {3}, {2}));
    if (!built) {
      std::printf("FAIL: the group did not build\n");
      return 1;
    }
    if (grid == 8u) EXPECT_EQ_U64(nanscope::group_part_grid(g), 8, "grouped: a block per part");
    void* params[] = {&g};
    cuLaunchKernel(grouped, grid, 1, 1, nanscope::ScanPolicy{}.threads, 1, 1, 0, nullptr, params, nullptr);
    if (cudaDeviceSynchronize() != cudaSuccess) {
      std::printf("FAIL: grouped scan kernel error\n");
      return 1;
    }
    struct Want { uint64_t launch; uint32_t kernel, node, arg; uint64_t nan, ninf, first, last; int parent; };
    const Want want[] = {{501, 20, 5, 10, 3, 0, 7, 4500, -1}, {502, 21, 6, 12, 1, 0, 3, 3, 0}, {503, 22, 7, 13, 0, 1, 0, 0, 1}};
    uint64_t seqs[3] = {};
    for (int k = 0; k < 3; ++k) {
      volatile nanscope_record& r = records[consumed % cap];
      char what[96];
      std::snprintf(what, sizeof what, "grouped grid %u record %d", grid, k);
      if (r.seq != consumed + 1) {
        std::printf("FAIL %s: no record\n", what);
        ++failures;
        break;
      }
      seqs[k] = r.seq;
      EXPECT_EQ_U64(r.launch_id, want[k].launch, what);
      EXPECT_EQ_U64(r.kernel_id, want[k].kernel, what);
      EXPECT_EQ_U64(r.graph_node, want[k].node, what);
      EXPECT_EQ_U64(r.graph_id, 77, what);
      EXPECT_EQ_U64(r.arg, want[k].arg, what);
      EXPECT_EQ_U64(r.nan, want[k].nan, what);
      EXPECT_EQ_U64(r.neg_inf, want[k].ninf, what);
      EXPECT_EQ_U64(r.first_index, want[k].first, what);
      EXPECT_EQ_U64(r.last_index, want[k].last, what);
      EXPECT_EQ_U64(r.parent_count, want[k].parent < 0 ? 0 : 1, what);
      EXPECT_EQ_U64(r.parents[0], want[k].parent < 0 ? 0 : seqs[want[k].parent], what);
      EXPECT_EQ_U64((r.origin_flags & NS_ORIGIN_TRACKED) != 0, 1, what);
      ++consumed;
      host->read_index = consumed;
    }
    if (records[consumed % cap].seq == consumed + 1) {
      std::printf("FAIL grouped grid %u: the clean buffer produced a record\n", grid);
      ++failures;
    }
    unsigned long long w[5] = {};
    cudaMemcpy(w, states, sizeof w, cudaMemcpyDeviceToHost);
    EXPECT_EQ_U64(w[2], NS_STATE_CLEAN, "grouped: Y's state word is clean");
    EXPECT_EQ_U64(w[4], NS_STATE_NONFINITE | (seqs[2] << 24), "grouped: W's state word names W's record");
    ++cases;
  }
  cudaFree(states);
  cudaFree(bufs);
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}

// Tests for src/tensor_maps.cpp (TMA descriptors told by their encoding) and the XLA decoder's use
// of them: the transformer step's gemm_fusion_dot_37 (jaxlib 0.11.2, H200, session 24), a Triton
// GEMM with TMA allowed, takes its two operands and its output as three 128-byte tensor maps.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>

#include "decode/xla.hpp"
#include "tensor_maps.hpp"
#include "xla_fixture.hpp"

namespace nanscope {
namespace {

using Map = std::array<uint8_t, kTensorMapBytes>;

Map map_bytes(uint8_t seed) {
  Map m{};
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(seed * 31 + i);
  return m;
}

// A row-major f32 tensor as XLA encodes it: dimensions innermost first, byte strides of the outer ones.
TensorMapFacts f32_map(uint64_t address, std::initializer_list<uint64_t> dims_inner_first) {
  TensorMapFacts f;
  f.global_address = address;
  f.data_type = 7;  // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
  uint64_t stride = 4;
  for (uint64_t d : dims_inner_first) {
    if (f.rank) f.strides[f.rank - 1] = stride;
    f.dims[f.rank++] = d;
    stride *= d;
  }
  return f;
}

TEST(TensorMaps, AMapIsFoundByItsBytesWithWhatItsEncodingWasGiven) {
  TensorMapRegistry r;
  const Map a = map_bytes(1), b = map_bytes(2);
  r.on_encoded(a, f32_map(0x7f0000000000, {256, 64, 64}));
  ASSERT_TRUE(r.find(a.data()));
  EXPECT_EQ(r.find(a.data())->global_address, 0x7f0000000000u);
  EXPECT_FALSE(r.find(b.data()));  // never encoded under nanscope: not known
  EXPECT_FALSE(r.find(nullptr));
  r.on_encoded(a, f32_map(0x7f0000000000, {256, 64, 64}));  // encoded again: one entry
  EXPECT_EQ(r.size(), 1u);
}

TEST(TensorMaps, TheRegistryIsBounded) {
  TensorMapRegistry r;
  Map m{};
  for (uint32_t i = 0; i < TensorMapRegistry::kMax + 5; ++i) {
    std::memcpy(m.data(), &i, sizeof i);
    r.on_encoded(m, f32_map(0x1000 + i, {4}));
  }
  EXPECT_EQ(r.size(), TensorMapRegistry::kMax);
  uint32_t first = 0;
  std::memcpy(m.data(), &first, sizeof first);
  EXPECT_FALSE(r.find(m.data()));  // the oldest went first
}

TEST(TensorMaps, TheFootprintFollowsTheStrides) {
  EXPECT_EQ(f32_map(0, {256, 64, 64}).footprint_bytes(), 4194304u);  // f32[64,64,256], dense
  TensorMapFacts padded = f32_map(0, {100, 8});
  padded.strides[0] = 512;  // rows 512 bytes apart, 400 used
  EXPECT_EQ(padded.footprint_bytes(), 7u * 512 + 400);
  TensorMapFacts unknown = f32_map(0, {4});
  unknown.data_type = 99;
  EXPECT_EQ(unknown.footprint_bytes(), 0u);
  EXPECT_EQ(tensor_map_element_bytes(9), 2u);  // BFLOAT16
  EXPECT_EQ(TensorMapFacts{}.footprint_bytes(), 0u);
}

// The launch: three 128-byte parameters; the maps' global addresses are the slices' pointers.
struct TmaLaunch {
  std::vector<std::shared_ptr<const xla::DumpModule>> modules;
  decode::Layout layout{{0, 128}, {128, 128}, {256, 128}};
  Map lhs = map_bytes(3), rhs = map_bytes(4), out = map_bytes(5);
  const char* params[3] = {reinterpret_cast<const char*>(lhs.data()), reinterpret_cast<const char*>(rhs.data()),
                           reinterpret_cast<const char*>(out.data())};
  TensorMapRegistry maps;
  decode::LaunchView view;
  static constexpr uint64_t kParam0 = 0x7f1000000000, kTemp = 0x7f2000000000;
  TmaLaunch() {
    modules.push_back(std::make_shared<const xla::DumpModule>(xla_test::dump_module(
        "jax_bench_transformer-sick-jaxlib0.11", "module_10614.jit_step", "thunk_sequence_after_thunk_passes")));
    view.params = params;
    view.count = 3;
    view.grid[0] = 256;
    view.block[0] = 128;
    view.tensor_maps = &maps;
  }
};

TEST(TensorMaps, AnXlaGemmWithTmaIsDecodedThroughItsMaps) {
  TmaLaunch t;
  t.maps.on_encoded(t.lhs, f32_map(TmaLaunch::kParam0, {256, 64, 64}));
  t.maps.on_encoded(t.rhs, f32_map(TmaLaunch::kTemp + 16777216, {256, 256, 64}));
  t.maps.on_encoded(t.out, f32_map(TmaLaunch::kTemp, {256, 64, 64}));
  const decode::Decoded d = decode::decode_xla(t.modules, "gemm_fusion_dot_37", t.layout, t.view);
  ASSERT_EQ(d.status, decode::Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].ptr, TmaLaunch::kTemp);
  EXPECT_EQ(d.writes[0].elements, 64u * 64 * 256);
  EXPECT_EQ(d.read_count, 2u);
}

TEST(TensorMaps, AMapNotSeenOrReachingPastItsSliceIsRefused) {
  TmaLaunch t;
  t.maps.on_encoded(t.lhs, f32_map(TmaLaunch::kParam0, {256, 64, 64}));
  t.maps.on_encoded(t.rhs, f32_map(TmaLaunch::kTemp + 16777216, {256, 256, 64}));
  decode::Decoded d = decode::decode_xla(t.modules, "gemm_fusion_dot_37", t.layout, t.view);
  EXPECT_EQ(d.status, decode::Status::layout_mismatch);
  EXPECT_EQ(d.reason, "xla: a 128-byte parameter (a TMA descriptor) nanscope did not see encoded");
  t.maps.on_encoded(t.out, f32_map(TmaLaunch::kTemp, {256, 64, 128}));  // twice the output slice
  d = decode::decode_xla(t.modules, "gemm_fusion_dot_37", t.layout, t.view);
  EXPECT_EQ(d.status, decode::Status::layout_mismatch);
  EXPECT_EQ(d.reason, "xla: a tensor map parameter reaches past its argument's slice");
  t.view.tensor_maps = nullptr;  // no registry (a decoder called without one)
  EXPECT_EQ(decode::decode_xla(t.modules, "gemm_fusion_dot_37", t.layout, t.view).status,
            decode::Status::layout_mismatch);
}

}  // namespace
}  // namespace nanscope

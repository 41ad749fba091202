// index_copy_ (the static KV cache's update), where and the comparison functors, the
// mem-efficient attention forward, against the
// torch 2.11 sm_90 layouts in fixtures/aten_sm90_kernels.tsv.
#include <gtest/gtest.h>

#include "aten_fixture.hpp"

using namespace nanscope;
using namespace nanscope::decode;
using namespace aten_test;

namespace {

const KernelRow& index_copy_bf16() {
  return row("index_elementwise_kernel<128, 4, at::native::index_copy_kernel_impl<at::native::OpaqueType<2> >");
}

// A KV cache [b=2, h=4, L=16, d=8] bf16 updated at 3 positions of dim 2 from a dense source
// [2, 4, 3, 8]: TensorIterator's dims (fastest first) d, index, h, b; self restrided with
// stride 0 along the index dim; the closure's pointers after the calculator or before it.
Launch index_copy_launch(bool calc_first) {
  const auto& r = index_copy_bf16();
  Launch l(r.layout);
  const uint32_t calc = calc_first ? 0 : 24, ptrs = calc_first ? 608 : 0;
  l.set<int64_t>(0, 0, 2 * 4 * 3 * 8);
  put_offset_calc(l, 1, calc, 3, {8, 3, 4, 2},
                  {{2, 0, 2}, {0, 8, 16}, {16 * 8 * 2, 0, 3 * 8 * 2}, {4 * 16 * 8 * 2, 0, 4 * 3 * 8 * 2}});
  l.set<uint64_t>(1, ptrs, 0x10000).set<uint64_t>(1, ptrs + 8, 0x20000).set<uint64_t>(1, ptrs + 16, 0x30000);
  l.set<int64_t>(1, 632, 16).set<int64_t>(1, 640, 8);
  return l;
}

}  // namespace

TEST(DecodeAtenIndex, IndexCopyWritesAllOfSelfTypedByItsSource) {
  const auto m = match(index_copy_bf16());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out_type, OutType::bytes_only);
  for (bool calc_first : {true, false}) {
    const Launch l = index_copy_launch(calc_first);
    const Decoded d = decode_aten(m, l.view, kNoQuery);
    ASSERT_EQ(d.write_count, 1u) << d.reason;
    const Write& w = d.writes[0];
    EXPECT_EQ(w.ptr, 0x10000u);
    EXPECT_EQ(w.elements, 2u * 4 * 16 * 8);  // the whole cache: the indices are on the device
    EXPECT_EQ(w.span_bytes, 2u * 4 * 16 * 8 * 2);
    EXPECT_EQ(w.elem_size, 2u);
    EXPECT_EQ(w.dtype, DType::none);
    EXPECT_EQ(w.dtype_from, 0x30000u);
    ASSERT_EQ(d.read_count, 1u);
    EXPECT_EQ(d.reads[0], 0x30000u);
    EXPECT_EQ(d.read_elements[0], 2u * 4 * 3 * 8);
  }
}

TEST(DecodeAtenIndex, IndexCopyRefusesWhatItCannotPin) {
  const auto m = match(index_copy_bf16());
  // N disagrees with the calculator: neither placement fits.
  Launch l = index_copy_launch(true);
  l.set<int64_t>(0, 0, 7);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  // A self with a gap (dim stride past the rows it holds): no write claimed, and said so.
  Launch gap = index_copy_launch(true);
  gap.set<int64_t>(1, 640, 9);
  const Decoded g = decode_aten(m, gap.view, kNoQuery);
  EXPECT_EQ(g.write_count, 0u);
  EXPECT_EQ(g.reason, "index_copy destination not dense");
  // Other closures of the family (index_put) stay claimed and undecoded.
  const auto put = match(row("gpu_index_kernel<at::native::index_put_kernel_impl<at::native::OpaqueType<4> >"));
  EXPECT_EQ(put.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(put.reason, "closure not decoded");
  // The index_copy name with another closure size is not this layout.
  EXPECT_EQ(match(index_copy_bf16(), {{0, 8}, {8, 656}}).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenSelect, WhereReturnsItsValueType) {
  const auto nocast = match(row("gpu_kernel_impl_nocast<at::native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(bool, c10::BFloat16, c10::BFloat16)"));
  ASSERT_EQ(nocast.kind, MatchKind::matched) << nocast.reason;
  EXPECT_EQ(nocast.out_type, OutType::static_dtype);
  EXPECT_EQ(nocast.out, DType::bf16);
  const auto vec = match(row("vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::where_kernel_impl"));
  ASSERT_EQ(vec.kind, MatchKind::matched) << vec.reason;
  EXPECT_EQ(vec.out, DType::bf16);
  EXPECT_EQ(vec.in_skip & 1u, 1u);  // the condition is bool: no NaN to read
}

TEST(DecodeAtenSelect, CompareFunctorWritesBool) {
  const auto m = match(row("gpu_kernel_impl_nocast<at::native::(anonymous namespace)::CompareFunctor<long> >"));
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out_type, OutType::not_float);
}

// SDPA's mem-efficient backend: Q, K, V [2, 128, 8, 64] bf16 dense ([B, M, H, D]), O the same
// shape, the LSE [2, 8, 128] float.
TEST(DecodeAtenAttention, MemEfficientForwardOutputLseAndInputs) {
  const auto& r = row("fmha_cutlassF_bf16_aligned_64x64_rf_sm80");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out, DType::bf16);
  Launch l(r.layout);
  l.set<uint64_t>(0, 0, 0x1000).set<uint64_t>(0, 8, 0x2000).set<uint64_t>(0, 16, 0x3000);
  l.set<uint64_t>(0, 64, 0x4000).set<uint64_t>(0, 80, 0x5000);
  l.set<int32_t>(0, 96, 64).set<int32_t>(0, 100, 64).set<int32_t>(0, 104, 128).set<int32_t>(0, 108, 128);
  for (uint32_t at : {120u, 124u, 128u, 136u}) l.set<int32_t>(0, at, 8 * 64);   // strideM
  for (uint32_t at : {140u, 144u, 148u}) l.set<int32_t>(0, at, 64);              // strideH
  for (uint32_t at : {160u, 168u, 176u}) l.set<int64_t>(0, at, 128 * 8 * 64);   // strideB
  l.set<int32_t>(0, 192, 2).set<int32_t>(0, 196, 8);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 2u) << d.reason;
  expect_write(d.writes[0], 0x4000, 2 * 128 * 8 * 64, 2 * 128 * 8 * 64 * 2, DType::bf16);
  expect_write(d.writes[1], 0x5000, 2 * 8 * 128, 2 * 8 * 128 * 4, DType::f32);
  ASSERT_EQ(d.read_count, 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(d.read_elements[i], 2u * 128 * 8 * 64) << i;
  // O rows with a gap (o_strideM past H * D), or variable-length batches: refused.
  l.set<int32_t>(0, 136, 8 * 64 + 8);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  l.set<int32_t>(0, 136, 8 * 64).set<uint64_t>(0, 32, 0x6000);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).reason, "varlen attention not decoded");
}

// torch.nn.functional.grouped_mm's setup kernel (transformers 5's default MoE experts on Hopper):
// its typed pointers (A, B, output) are only offset into per-group pointer arrays, never
// dereferenced. The signature alone made `output` a bf16 output, scanned before the grouped GEMM
// wrote it (session 29, H100: a healthy Mixtral's finding "prepare_grouped_gemm_data ... 131072
// bf16, nan 38, origin unknown"). Decoded, it writes nothing floating and reads nothing floating.
TEST(DecodeAtenGroupedMm, TheSetupKernelWritesNoFloat) {
  for (const char* needle : {"prepare_grouped_gemm_data<cutlass::bfloat16_t, cutlass::bfloat16_t",
                             "prepare_grouped_gemm_data<cutlass::float_e4m3_t"}) {
    const auto& r = row(needle);
    const auto m = match(r);
    ASSERT_EQ(m.kind, MatchKind::matched) << needle << ": " << m.reason;
    EXPECT_STREQ(aten_family_name(m.family), "grouped_gemm_setup");
    Launch l(r.layout);
    l.set<uint64_t>(0, 0, 0x10000).set<uint64_t>(1, 0, 0x20000).set<uint64_t>(2, 0, 0x30000);
    const Decoded d = decode_aten(m, l.view, kNoQuery);
    EXPECT_EQ(d.status, Status::decoded);
    EXPECT_EQ(d.write_count, 0u);
    EXPECT_EQ(d.read_count, 0u);
  }
  // Another layout under the name (a future torch adding a parameter) is not this one.
  const auto& r = row("prepare_grouped_gemm_data<cutlass::bfloat16_t, cutlass::bfloat16_t");
  Layout longer = r.layout;
  longer.push_back({280, 8});
  EXPECT_EQ(match(r, longer).kind, MatchKind::layout_mismatch);
}

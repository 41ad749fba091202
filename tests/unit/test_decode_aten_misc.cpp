// ATen norm, softmax, index and attention decoders; family coverage of the fixture; cost.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "aten_fixture.hpp"
#include "test_decode_reads.hpp"

using namespace nanscope;
using namespace nanscope::decode;
using namespace aten_test;
using decode_test::expect_read;

namespace {

const KernelRow& ln_bf16() { return row("vectorized_layer_norm_kernel<c10::BFloat16, float, true>"); }
const KernelRow& softmax_bf16() {
  return row("softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 11, false, false>");
}
const KernelRow& flash_bf16() { return row("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t"); }

}  // namespace

TEST(DecodeAtenNorm, VectorizedLayerNormRowsFromGrid) {
  const auto m = match(ln_bf16());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out, DType::bf16);
  EXPECT_EQ(m.acc, DType::f32);
  Launch l(ln_bf16().layout);
  l.set<int32_t>(0, 0, 2048).set<float>(1, 0, 1e-6f).set<uint64_t>(2, 0, 0x100);
  l.set<uint64_t>(6, 0, 0x600).set<uint64_t>(7, 0, 0x700).grid(8);  // RMSNorm: mean is null
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 2u) << d.reason;
  expect_write(d.writes[0], 0x700, 8 * 2048, 8 * 2048 * 2, DType::bf16);
  expect_write(d.writes[1], 0x600, 8, 32, DType::f32);
  l.grid(8, 2);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  // double/double has an 8-byte eps and a shifted layout; each rejects the other's.
  const auto& dbl = row("vectorized_layer_norm_kernel<double, double, false>");
  EXPECT_EQ(match(dbl).kind, MatchKind::matched);
  EXPECT_EQ(match(dbl, ln_bf16().layout).kind, MatchKind::layout_mismatch);
  EXPECT_EQ(match(ln_bf16(), dbl.layout).kind, MatchKind::layout_mismatch);
  EXPECT_EQ(match(ln_bf16(), softmax_bf16().layout).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenNorm, RowwiseMomentsAndLayerNormForward) {
  const auto& rm = row("RowwiseMomentsCUDAKernel<c10::BFloat16>");
  const auto m = match(rm);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l(rm.layout);
  l.set<int64_t>(0, 0, 512).set<uint64_t>(3, 0, 0x300).set<uint64_t>(4, 0, 0x400).grid(16);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 2u);
  expect_write(d.writes[0], 0x300, 16, 32, DType::bf16);  // group norm: moments in T
  const auto& lnm = row("RowwiseMomentsCUDAKernel<c10::BFloat16, float, true>");
  const auto ml = match(lnm);
  ASSERT_EQ(ml.kind, MatchKind::matched) << ml.reason;
  EXPECT_EQ(ml.acc, DType::f32);  // layer norm: moments in T_ACC
  EXPECT_EQ(match(rm, lnm.layout).kind, MatchKind::layout_mismatch);  // eps is T vs T_ACC
  const auto& fwd = row("LayerNormForwardCUDAKernel<c10::BFloat16, float, true>");
  const auto mf = match(fwd);
  ASSERT_EQ(mf.kind, MatchKind::matched) << mf.reason;
  Launch lf(fwd.layout);
  lf.set<int64_t>(0, 0, 100).set<uint64_t>(6, 0, 0x6000).grid(3);
  const Decoded df = decode_aten(mf, lf.view, kNoQuery);
  ASSERT_EQ(df.write_count, 1u);
  expect_write(df.writes[0], 0x6000, 300, 600, DType::bf16);
  EXPECT_EQ(match(rm, fwd.layout).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenSoftmax, WarpForwardDenseRowsOnly) {
  const auto m = match(softmax_bf16());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l(softmax_bf16().layout);
  l.set<uint64_t>(0, 0, 0xD000).set<uint64_t>(1, 0, 0x5000);
  l.set<int32_t>(2, 0, 12).set<int32_t>(3, 0, 2000).set<int32_t>(4, 0, 2000);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u);
  expect_write(d.writes[0], 0xD000, 24000, 48000, DType::bf16);
  EXPECT_EQ(d.reads[0], 0x5000u);
  l.set<int32_t>(3, 0, 2048);  // rows r of one warp land at r * element_count, not r * stride
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  EXPECT_EQ(match(row("softmax_warp_forward<c10::Half, float, float, 8, true, false>")).out, DType::f32);
  EXPECT_EQ(match(softmax_bf16(), ln_bf16().layout).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenSoftmax, BlockForwardVariants) {
  const auto& r = row("cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l(r.layout);
  l.set<uint64_t>(0, 0, 0x100).set<int32_t>(2, 0, 50000).grid(4);
  expect_write(decode_aten(m, l.view, kNoQuery).writes[0], 0x100, 200000, 400000, DType::bf16);
  const auto& reg = row("cunn_SoftMaxForwardReg<");
  const auto mr = match(reg);
  ASSERT_EQ(mr.kind, MatchKind::matched) << mr.reason;
  Launch lr(reg.layout);
  lr.set<uint64_t>(0, 0, 0x100).set<int64_t>(2, 0, 1000).grid(2);
  EXPECT_EQ(decode_aten(mr, lr.view, kNoQuery).writes[0].elements, 2000u);
  EXPECT_EQ(match(r, softmax_bf16().layout).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenIndex, IndexSelectTensorInfoExtent) {
  const auto& r = row("indexSelectSmallIndex<c10::BFloat16, long, unsigned int, -1");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l(r.layout);
  // dst 5 x 7 with row stride 16 elements (a gap of 9 per row), selected along dim 0: the host
  // passes it reduced (sizes[0] = 1) and the 5 is the indices' collapsed size.
  l.set<uint64_t>(0, 0, 0xE000).set<uint32_t>(0, 8, 1).set<uint32_t>(0, 12, 7);
  l.set<uint32_t>(0, 108, 16).set<uint32_t>(0, 112, 1).set<int32_t>(0, 208, 2);
  l.set<uint32_t>(2, 8, 5).set<uint32_t>(2, 108, 1).set<int32_t>(2, 208, 1).set<int32_t>(3, 0, 0);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u) << d.reason;
  expect_write(d.writes[0], 0xE000, 35, (4 * 16 + 6 + 1) * 2, DType::bf16);
  l.set<uint32_t>(0, 108, 7);
  expect_write(decode_aten(m, l.view, kNoQuery).writes[0], 0xE000, 35, 70, DType::bf16);
  // Selected along dim 1 instead: dst [5, 1] reduced, 3 indices, so 5 x 3 written.
  l.set<uint32_t>(0, 8, 5).set<uint32_t>(0, 12, 1).set<uint32_t>(2, 8, 3).set<int32_t>(3, 0, 1);
  expect_write(decode_aten(m, l.view, kNoQuery).writes[0], 0xE000, 15, (4 * 7 + 2 + 1) * 2, DType::bf16);
  // The select dim not reduced, a select dim past dims, or a dims count past 25: not this layout.
  l.set<uint32_t>(0, 12, 7);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  l.set<uint32_t>(0, 12, 1).set<int32_t>(3, 0, 2);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  l.set<int32_t>(3, 0, 1).set<int32_t>(0, 208, 26);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  EXPECT_EQ(match(row("indexSelectSmallIndex<long, long, unsigned int")).out_type, OutType::not_float);
}

TEST(DecodeAtenIndex, GatherBytesOnlyWithDtypeFromInput) {
  const auto& r = row("vectorized_gather_kernel<16, int>");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l(r.layout);
  l.set<uint64_t>(0, 0, 0xF000).set<uint64_t>(1, 0, 0xC000).set<int32_t>(3, 0, 9);
  l.set<int64_t>(4, 0, 4096).set<int64_t>(7, 0, 4096);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].ptr, 0xF000u);
  EXPECT_EQ(d.writes[0].span_bytes, 9u * 4096u);
  EXPECT_EQ(d.writes[0].elem_size, 0u);
  EXPECT_EQ(d.writes[0].dtype, DType::none);
  EXPECT_EQ(d.writes[0].dtype_from, 0xC000u);
  l.set<int64_t>(7, 0, 8192);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
}

namespace {
const KernelRow& cat2() { return row("CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 2, 128, 1>"); }
// Output [4, 10] (strides {10, 1}) along dim 1; inputs of `widths` columns starting at `first`.
Launch cat_launch(const std::vector<uint32_t>& widths, uint32_t first) {
  Launch l(cat2().layout);  // metadata for batch 128: input[128] at 0, offset at 1024, ...
  l.set<uint64_t>(0, 0, 0x9000);
  uint32_t off = first;
  for (uint32_t i = 0; i < widths.size(); ++i) {
    l.set<uint64_t>(1, 8 * i, 0x1000 * (i + 1)).set<uint32_t>(1, 1024 + 4 * i, off);
    l.set<uint32_t>(1, 1536 + 4 * i, widths[i]).set<uint32_t>(1, 2048 + 4 * i, widths[i] * 4);
    off += widths[i];
  }
  l.set<uint32_t>(2, 0, 4).set<uint32_t>(2, 4, 10).set<uint32_t>(2, 16, 10).set<uint32_t>(2, 20, 1);
  l.set<int32_t>(3, 0, 1).set<uint32_t>(4, 0, 1);
  l.grid(132, static_cast<uint32_t>(widths.size()));
  return l;
}
}  // namespace

TEST(DecodeAtenIndex, CatWritesTheSlabItsInputsCover) {
  const auto m = match(cat2());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.elem_bytes, 2);
  EXPECT_EQ(match(row("CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<16u>, unsigned int, 4, 64, 64>")).kind, MatchKind::matched);
  EXPECT_EQ(match(row("CatArrayBatchedCopy_vectorized<")).kind, MatchKind::matched);
  // The whole output: 3 + 7 columns of 4 rows, dense.
  Launch all = cat_launch({3, 7}, 0);
  Decoded d = decode_aten(m, all.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u) << d.reason;
  EXPECT_EQ(d.writes[0].ptr, 0x9000u);
  EXPECT_EQ(d.writes[0].elements, 40u);
  EXPECT_EQ(d.writes[0].span_bytes, 80u);
  EXPECT_EQ(d.writes[0].elem_size, 2u);
  EXPECT_EQ(d.writes[0].dtype, DType::none);
  EXPECT_EQ(d.writes[0].dtype_from, 0x1000u);
  EXPECT_EQ(d.read_count, 2u);
  // A later batch: columns 6..9 only, rows with gaps.
  Launch tail = cat_launch({4}, 6);
  d = decode_aten(m, tail.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u) << d.reason;
  EXPECT_EQ(d.writes[0].ptr, 0x9000u + 6 * 2);
  EXPECT_EQ(d.writes[0].elements, 16u);
  EXPECT_EQ(d.writes[0].span_bytes, (3 * 10 + 3 + 1) * 2u);
  // nElements disagreeing with dimSize * rows, or inputs past the output: refused.
  all.set<uint32_t>(1, 2048, 11);
  EXPECT_EQ(decode_aten(m, all.view, kNoQuery).status, Status::layout_mismatch);
  Launch past = cat_launch({3, 8}, 0);
  EXPECT_EQ(decode_aten(m, past.view, kNoQuery).status, Status::layout_mismatch);
  EXPECT_EQ(match(cat2(), row("CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<16u>, unsigned int, 4, 64, 64>").layout).kind,
            MatchKind::layout_mismatch);
}

TEST(DecodeAtenAttention, FlashForwardOutputAndLse) {
  const auto m = match(flash_bf16());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out, DType::bf16);
  EXPECT_EQ(match(row("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t")).out, DType::f16);
  // b 2, seqlen_q 128, h 8, d 64; O is [b, s, h, d] with strides in elements.
  Launch l(flash_bf16().layout);
  l.set<int32_t>(0, 96, 8).set<uint64_t>(0, 112, 0xA0000).set<uint64_t>(0, 160, 0xB0000);
  l.set<int64_t>(0, 128, 128 * 8 * 64).set<int64_t>(0, 136, 8 * 64).set<int64_t>(0, 144, 64);
  l.set<int32_t>(0, 176, 2).set<int32_t>(0, 180, 128).set<int32_t>(0, 184, 300).set<int32_t>(0, 192, 64);
  Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 2u) << d.reason;
  expect_write(d.writes[0], 0xA0000, 2 * 128 * 8 * 64, 2 * 128 * 8 * 64 * 2, DType::bf16);
  expect_write(d.writes[1], 0xB0000, 2 * 8 * 128, 2 * 8 * 128 * 4, DType::f32);
  // O as a view of a wider tensor (row stride 3 * h * d): numel stays, the span grows.
  l.set<int64_t>(0, 128, 128 * 3 * 8 * 64).set<int64_t>(0, 136, 3 * 8 * 64);
  d = decode_aten(m, l.view, kNoQuery);
  const uint64_t last = uint64_t(128 * 3 * 8 * 64) + 127 * 3 * 8 * 64 + 7 * 64 + 63;
  expect_write(d.writes[0], 0xA0000, 2 * 128 * 8 * 64, (last + 1) * 2, DType::bf16);
  // The split-kv kernel without Split or Append_KV writes O and the LSE the same way.
  const auto& one_split = row("128, 4, cutlass::bfloat16_t> >, true, false, false, false, false, false, false, false>");
  const auto ms = match(one_split);
  ASSERT_EQ(ms.kind, MatchKind::matched) << ms.reason;
  EXPECT_EQ(ms.family, AtenFamily::flash_fwd);
  EXPECT_EQ(decode_aten(ms, l.view, kNoQuery).writes[0].span_bytes, d.writes[0].span_bytes);
  l.set<uint64_t>(0, 224, 0x1234);  // cu_seqlens_q: varlen
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  EXPECT_EQ(match(flash_bf16(), {{0, 464}}).kind, MatchKind::layout_mismatch);
  // Return_softmax also writes P through p_ptr: refused.
  const auto p = match(row("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, cutlass::bfloat16_t"));
  EXPECT_EQ(p.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(p.reason, "softmax matrix output not decoded");
}

// ---- read facts ---------------------------------------------------------------------------

TEST(DecodeAtenReads, NormInputsXGammaBetaAndMoments) {
  // LayerNorm: X is M x N of T, gamma and beta N of T.
  Launch l(ln_bf16().layout);
  l.set<int32_t>(0, 0, 2048).set<uint64_t>(2, 0, 0x100).set<uint64_t>(3, 0, 0x200).set<uint64_t>(4, 0, 0x300);
  l.set<uint64_t>(6, 0, 0x600).set<uint64_t>(7, 0, 0x700).grid(8);
  Decoded d = decode_aten(match(ln_bf16()), l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 3u);
  expect_read(d, 0, 0x100, DType::bf16, 8 * 2048);
  expect_read(d, 1, 0x200, DType::bf16, 2048);
  expect_read(d, 2, 0x300, DType::bf16, 2048);
  l.set<uint64_t>(4, 0, 0);  // RMSNorm has no beta: no read
  EXPECT_EQ(decode_aten(match(ln_bf16()), l.view, kNoQuery).read_count, 2u);
  // Group norm's moments: X only.
  const auto& rm = row("RowwiseMomentsCUDAKernel<c10::BFloat16>");
  Launch lr(rm.layout);
  lr.set<int64_t>(0, 0, 512).set<uint64_t>(2, 0, 0x200).set<uint64_t>(3, 0, 0x300).grid(16);
  d = decode_aten(match(rm), lr.view, kNoQuery);
  ASSERT_EQ(d.read_count, 1u);
  expect_read(d, 0, 0x200, DType::bf16, 16 * 512);
  // LayerNormForward: X, mean and rstd (M of T_ACC), gamma, beta.
  const auto& fwd = row("LayerNormForwardCUDAKernel<c10::BFloat16, float, true>");
  Launch lf(fwd.layout);
  lf.set<int64_t>(0, 0, 100).grid(3);
  for (uint32_t i = 1; i < 7; ++i) lf.set<uint64_t>(i, 0, 0x1000 * i);
  d = decode_aten(match(fwd), lf.view, kNoQuery);
  ASSERT_EQ(d.read_count, 5u);
  expect_read(d, 0, 0x1000, DType::bf16, 300);
  expect_read(d, 1, 0x2000, DType::f32, 3);
  expect_read(d, 2, 0x3000, DType::f32, 3);
  expect_read(d, 3, 0x4000, DType::bf16, 100);
  expect_read(d, 4, 0x5000, DType::bf16, 100);
}

TEST(DecodeAtenReads, SoftmaxSourceMirrorsDestinationWithTheInputType) {
  Launch l(softmax_bf16().layout);
  l.set<uint64_t>(0, 0, 0xD000).set<uint64_t>(1, 0, 0x5000);
  l.set<int32_t>(2, 0, 12).set<int32_t>(3, 0, 2000).set<int32_t>(4, 0, 2000);
  expect_read(decode_aten(match(softmax_bf16()), l.view, kNoQuery), 0, 0x5000, DType::bf16, 24000);
  // softmax_warp_forward<in = Half, out = float>: the source is f16, not the output's f32.
  const auto& half = row("softmax_warp_forward<c10::Half, float, float, 8, true, false>");
  Launch lh(half.layout);
  lh.set<uint64_t>(0, 0, 0xD000).set<uint64_t>(1, 0, 0x5000);
  lh.set<int32_t>(2, 0, 3).set<int32_t>(3, 0, 256).set<int32_t>(4, 0, 256);
  expect_read(decode_aten(match(half), lh.view, kNoQuery), 0, 0x5000, DType::f16, 768);
  // cunn_SoftMaxForwardReg<scalar_t, acc, out, ...>: scalar_t comes first there.
  const auto& reg = row("cunn_SoftMaxForwardReg<");
  Launch lr(reg.layout);
  lr.set<uint64_t>(0, 0, 0x100).set<uint64_t>(1, 0, 0x900).set<int64_t>(2, 0, 1000).grid(2);
  expect_read(decode_aten(match(reg), lr.view, kNoQuery), 0, 0x900, DType::bf16, 2000);
}

TEST(DecodeAtenReads, IndexSelectWholeSourceAndNoIntegerIndices) {
  const auto& r = row("indexSelectSmallIndex<c10::BFloat16, long, unsigned int, -1");
  Launch l(r.layout);
  l.set<uint64_t>(0, 0, 0xE000).set<uint32_t>(0, 8, 1).set<uint32_t>(0, 12, 7);
  l.set<uint32_t>(0, 108, 7).set<uint32_t>(0, 112, 1).set<int32_t>(0, 208, 2);
  l.set<uint32_t>(2, 8, 5).set<uint32_t>(2, 108, 1).set<int32_t>(2, 208, 1);
  // src 100 x 7 dense, reduced along dim 0 (sizes[0] = 1) with srcSelectDimSize 100.
  l.set<uint64_t>(1, 0, 0xC000).set<uint32_t>(1, 8, 1).set<uint32_t>(1, 12, 7);
  l.set<uint32_t>(1, 108, 7).set<uint32_t>(1, 112, 1).set<int32_t>(1, 208, 2);
  l.set<uint64_t>(2, 0, 0xB000).set<int32_t>(4, 0, 0).set<int64_t>(6, 0, 100);
  Decoded d = decode_aten(match(r), l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 1u);  // the long indices hold no NaN
  expect_read(d, 0, 0xC000, DType::bf16, 700);
  l.set<uint32_t>(1, 108, 8);  // rows 8 apart: a gap, the extent is unknown
  expect_read(decode_aten(match(r), l.view, kNoQuery), 0, 0xC000, DType::bf16, 0);
  l.set<uint32_t>(1, 108, 7).set<uint32_t>(1, 8, 3);  // the select dim was not reduced: not this layout
  expect_read(decode_aten(match(r), l.view, kNoQuery), 0, 0xC000, DType::bf16, 0);
  // index_select of long: neither tensor holds NaN.
  const auto& lr = row("indexSelectSmallIndex<long, long, unsigned int");
  EXPECT_EQ(decode_aten(match(lr), l.view, kNoQuery).read_count, 0u);
}

TEST(DecodeAtenReads, GatherAndCatSourcesAreUntyped) {
  const auto& r = row("vectorized_gather_kernel<16, int>");
  Launch g(r.layout);
  g.set<uint64_t>(0, 0, 0xF000).set<uint64_t>(1, 0, 0xC000).set<uint64_t>(2, 0, 0xB000).set<int32_t>(3, 0, 9);
  g.set<int64_t>(4, 0, 4096).set<int64_t>(7, 0, 4096);
  Decoded d = decode_aten(match(r), g.view, kNoQuery);
  ASSERT_EQ(d.read_count, 1u);  // idx (int) is no read
  expect_read(d, 0, 0xC000, DType::none, 0);
  // Cat: element size only; nElements exact for an input flagged isContiguous (at 20 * batch).
  Launch c = cat_launch({3, 7}, 0);
  d = decode_aten(match(cat2()), c.view, kNoQuery);
  expect_read(d, 0, 0x1000, DType::none, 0);
  c.set<uint8_t>(1, 20 * 128, 1).set<uint8_t>(1, 20 * 128 + 1, 1);
  d = decode_aten(match(cat2()), c.view, kNoQuery);
  expect_read(d, 0, 0x1000, DType::none, 12);
  expect_read(d, 1, 0x2000, DType::none, 28);
}

TEST(DecodeAtenReads, FlashQkvFromParams) {
  // b 2, s_q 128, h 8, s_k 300, h_k 2, d 64; Q [b, s, h, d] dense; K, V dense [b, s_k, h_k, d].
  Launch l(flash_bf16().layout);
  l.set<uint64_t>(0, 0, 0x1000).set<uint64_t>(0, 8, 0x2000).set<uint64_t>(0, 16, 0x3000);
  l.set<int64_t>(0, 24, 128 * 8 * 64).set<int64_t>(0, 48, 8 * 64).set<int64_t>(0, 72, 64);
  for (uint32_t kv = 1; kv < 3; ++kv)
    l.set<int64_t>(0, 24 + 8 * kv, 300 * 2 * 64).set<int64_t>(0, 48 + 8 * kv, 2 * 64).set<int64_t>(0, 72 + 8 * kv, 64);
  l.set<int32_t>(0, 96, 8).set<int32_t>(0, 100, 2).set<uint64_t>(0, 112, 0xA0000);
  l.set<int64_t>(0, 128, 128 * 8 * 64).set<int64_t>(0, 136, 8 * 64).set<int64_t>(0, 144, 64);
  l.set<int32_t>(0, 176, 2).set<int32_t>(0, 180, 128).set<int32_t>(0, 184, 300).set<int32_t>(0, 192, 64);
  Decoded d = decode_aten(match(flash_bf16()), l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 3u) << d.reason;
  expect_read(d, 0, 0x1000, DType::bf16, 2 * 128 * 8 * 64);
  expect_read(d, 1, 0x2000, DType::bf16, 2 * 300 * 2 * 64);
  expect_read(d, 2, 0x3000, DType::bf16, 2 * 300 * 2 * 64);
  // Q as a view of a packed QKV (row stride 3 * h * d): gaps, so unknown.
  l.set<int64_t>(0, 48, 3 * 8 * 64);
  expect_read(decode_aten(match(flash_bf16()), l.view, kNoQuery), 0, 0x1000, DType::bf16, 0);
  // cu_seqlens_k set, or the split-kv kernel (KV cache): K and V keep only their dtype.
  l.set<uint64_t>(0, 232, 0x77);
  expect_read(decode_aten(match(flash_bf16()), l.view, kNoQuery), 1, 0x2000, DType::bf16, 0);
  l.set<uint64_t>(0, 232, 0).set<int64_t>(0, 48, 8 * 64);
  const auto& one_split = row("128, 4, cutlass::bfloat16_t> >, true, false, false, false, false, false, false, false>");
  d = decode_aten(match(one_split), l.view, kNoQuery);
  expect_read(d, 0, 0x1000, DType::bf16, 2 * 128 * 8 * 64);
  expect_read(d, 1, 0x2000, DType::bf16, 0);
  expect_read(d, 2, 0x3000, DType::bf16, 0);
}

TEST(DecodeAtenClaims, UndecodedFamiliesGiveReasons) {
  struct Want {
    const char* needle;
    AtenFamily family;
  };
  for (const Want& w : {Want{"gpu_index_kernel<at::native::index_put_kernel_impl<", AtenFamily::index_elementwise},
                        Want{"128, 4, cutlass::bfloat16_t> >, true, false, false, false, false, false, true, false>", AtenFamily::flash_other},
                        Want{"128, 4, cutlass::bfloat16_t> >, true, false, false, false, false, false, false, true>", AtenFamily::flash_other},
                        Want{"flash_fwd_splitkv_combine_kernel<", AtenFamily::flash_other}}) {
    const auto m = match(row(w.needle));
    EXPECT_EQ(m.kind, MatchKind::layout_mismatch) << w.needle;
    EXPECT_EQ(m.family, w.family) << w.needle;
    EXPECT_FALSE(m.reason.empty());
    EXPECT_EQ(decode_aten(m, Launch(row(w.needle).layout).view, kNoQuery).status, Status::layout_mismatch);
  }
  for (const char* other : {"nll_loss2d_forward_no_reduce_kernel", "batch_norm_backward_reduce_kernel",
                            "one_shot_all_reduce_kernel", "cutlass::Kernel2"}) {
    const auto m = match(row(other));
    EXPECT_EQ(m.kind, MatchKind::not_aten) << other;
    EXPECT_EQ(m.reason, "not an ATen family");
  }
  // Demangling inside match_aten gives the same answer as a demangled name passed in.
  EXPECT_EQ(match_aten(ln_bf16().mangled, "", ln_bf16().layout).family, AtenFamily::layer_norm_vec);
}

namespace {
// Matches every row of a table; prints how many rows each family matched or refused.
std::map<std::string, std::pair<int, int>> family_counts(const std::vector<KernelRow>& rows) {
  std::map<std::string, std::pair<int, int>> counts;
  for (const auto& r : rows) {
    const auto m = match(r);
    if (m.kind == MatchKind::matched) ++counts[aten_family_name(m.family)].first;
    if (m.kind == MatchKind::layout_mismatch) ++counts[aten_family_name(m.family)].second;
  }
  return counts;
}
void print_counts(const char* what, const std::map<std::string, std::pair<int, int>>& counts) {
  std::printf("[aten coverage] %s: %zu families\n", what, counts.size());
  for (const auto& [name, c] : counts) std::printf("  %-26s matched %5d  refused %5d\n", name.c_str(), c.first, c.second);
}
}  // namespace

TEST(DecodeAtenCoverage, EveryDecodedFamilyMatchesInTheFixture) {
  const auto counts = family_counts(fixture_rows());
  print_counts("fixture", counts);
  int matched_families = 0;
  for (const auto& [name, c] : counts) matched_families += c.first > 0;
  EXPECT_EQ(matched_families, 19);  // every family with a decoder (index_elementwise: index_copy)
  EXPECT_EQ(counts.size(), 20u);    // plus the claimed, refused one (flash_other)
}

// The whole torch table, when a developer points at an unpacked copy (never in CI).
TEST(DecodeAtenCoverage, WholeTableWhenGiven) {
  const char* path = std::getenv("NANSCOPE_KERNEL_TSV");
  if (!path) GTEST_SKIP() << "set NANSCOPE_KERNEL_TSV to an unpacked torch kernel table";
  print_counts(path, family_counts(load_rows(path)));
}

TEST(DecodeAtenCost, FlashAndVectorized) {
  Launch l(flash_bf16().layout);
  l.set<int32_t>(0, 96, 8).set<uint64_t>(0, 112, 0xA0000).set<int32_t>(0, 176, 2);
  l.set<int32_t>(0, 180, 128).set<int32_t>(0, 192, 64).set<int64_t>(0, 144, 64);
  time_decode("flash_fwd", match(flash_bf16()), l.view, kNoQuery);
  const auto& vec = row("vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>");
  Launch lv(vec.layout);
  lv.set<int32_t>(0, 0, 1000).set<uint64_t>(2, 0, 0x1000);
  time_decode("vectorized", match(vec), lv.view, kNoQuery);
}

// ATen TensorIterator and reduction decoders against real torch 2.11 sm_90 layouts.
#include <gtest/gtest.h>

#include <limits>

#include "aten_fixture.hpp"
#include "test_decode_reads.hpp"
#include "decode/aten_internal.hpp"

using namespace nanscope;
using namespace nanscope::decode;
using namespace aten_test;
using decode_test::expect_read;

namespace {

const KernelRow& add_bf16() {
  return row("vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>");
}

}  // namespace

TEST(DecodeAtenVectorized, RealLayoutDecodesOutputAsDataZero) {
  const auto m = match(add_bf16());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.family, AtenFamily::vectorized);
  EXPECT_EQ(m.out, DType::bf16);
  EXPECT_EQ(m.nargs, 3);
  Launch l(add_bf16().layout);
  l.set<int32_t>(0, 0, 1000).set<uint64_t>(2, 0, 0x1000).set<uint64_t>(2, 8, 0x2000).set<uint64_t>(2, 16, 0x3000);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.status, Status::decoded);
  ASSERT_EQ(d.write_count, 1u);
  expect_write(d.writes[0], 0x1000, 1000, 2000, DType::bf16);
  EXPECT_EQ(d.writes[0].arg, 2u);
  ASSERT_EQ(d.read_count, 2u);
  EXPECT_EQ(d.reads[0], 0x2000u);
  EXPECT_EQ(d.reads[1], 0x3000u);
}

TEST(DecodeAtenVectorized, FunctorResultTypes) {
  EXPECT_EQ(match(row("vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor")).out, DType::f32);
  EXPECT_EQ(match(row("AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16")).out, DType::bf16);
  EXPECT_EQ(match(row("vectorized_elementwise_kernel<4, at::native::FillFunctor<float>")).out, DType::f32);
  // Lambdas: the parameter type, unless the op is a predicate.
  EXPECT_EQ(match(row("silu_kernel")).out, DType::bf16);
  const auto copy = match(row("vectorized_elementwise_kernel<4, at::native::direct_copy_kernel_cuda"));
  EXPECT_EQ(copy.out, DType::bf16);
  EXPECT_EQ(copy.nargs, 2);
  const auto cmp = match(row("BinaryFunctor<c10::BFloat16, c10::BFloat16, bool"));
  ASSERT_EQ(cmp.kind, MatchKind::matched);
  EXPECT_EQ(cmp.out_type, OutType::not_float);
  const auto lnot = match(row("logical_not"));
  ASSERT_EQ(lnot.kind, MatchKind::matched);
  EXPECT_EQ(lnot.out_type, OutType::not_float);
  Launch l(row("logical_not").layout);
  l.set<int32_t>(0, 0, 10).set<uint64_t>(2, 0, 0x1000);
  EXPECT_EQ(decode_aten(lnot, l.view, kNoQuery).write_count, 0u);
}

TEST(DecodeAtenVectorized, PredicatesAreNameComponentsNotSubstrings) {
  // "angle_kernel" and "masked_scale_kernel" contain "le_kernel"; they are not comparisons.
  const auto angle = match(row("angle_kernel_cuda"));
  ASSERT_EQ(angle.kind, MatchKind::matched) << angle.reason;
  EXPECT_EQ(angle.out, DType::f32);
  // Dropout's lambda(c10::BFloat16, bool): mixed types, so refused, never "no float output".
  const auto dropout = match(row("masked_scale_kernel<bool, c10::BFloat16, float>"));
  EXPECT_EQ(dropout.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(dropout.reason, "functor result type unknown");
  EXPECT_EQ(match(row("compare_scalar_kernel<float>")).out_type, OutType::not_float);
  // A complex lambda may return the real type (abs, angle): refused, not "no float output".
  EXPECT_EQ(match(row("acos_kernel_cuda")).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenVectorized, RejectsOtherLayouts) {
  // One array slot too few, the unrolled family's layout, a missing parameter.
  const auto a = match(add_bf16(), {{0, 4}, {4, 4}, {8, 16}});
  EXPECT_EQ(a.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(a.reason, "layout mismatch");
  const auto& unrolled = row("unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast");
  EXPECT_EQ(match(add_bf16(), unrolled.layout).kind, MatchKind::layout_mismatch);
  EXPECT_EQ(match(add_bf16(), {{0, 4}, {4, 4}}).kind, MatchKind::layout_mismatch);
  // And the decoder refuses a launch whose parameter count differs from the gated one.
  Launch l({{0, 4}, {4, 4}});
  EXPECT_EQ(decode_aten(match(add_bf16()), l.view, kNoQuery).status, Status::layout_mismatch);
}

namespace {
const KernelRow& abs_cast() { return row("unrolled_elementwise_kernel<at::native::AbsFunctor<float>"); }

Decoded abs_cast_with(uint8_t scalar_type, uint32_t elem_size) {
  Launch l(abs_cast().layout);
  l.set<int32_t>(0, 0, 64).set<uint64_t>(2, 0, 0xA000).set<uint64_t>(2, 8, 0xB000);
  l.set<uint8_t>(6, 0, scalar_type).set<uint32_t>(6, 4, elem_size);
  return decode_aten(match(abs_cast()), l.view, kNoQuery);
}
}  // namespace

TEST(DecodeAtenUnrolled, StoreWithCastDtypeIsFirstByteOfLastParam) {
  const auto m = match(abs_cast());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out_type, OutType::runtime);
  const Decoded bf = abs_cast_with(15, 2);
  ASSERT_EQ(bf.write_count, 1u);
  expect_write(bf.writes[0], 0xA000, 64, 128, DType::bf16);
  expect_write(abs_cast_with(6, 4).writes[0], 0xA000, 64, 256, DType::f32);
  expect_write(abs_cast_with(5, 2).writes[0], 0xA000, 64, 128, DType::f16);
  expect_write(abs_cast_with(7, 8).writes[0], 0xA000, 64, 512, DType::f64);
  // Bool output: decoded, nothing floating written. Unknown byte or inconsistent size: mismatch.
  const Decoded b = abs_cast_with(11, 1);
  EXPECT_EQ(b.status, Status::decoded);
  EXPECT_EQ(b.write_count, 0u);
  EXPECT_EQ(abs_cast_with(25, 1).status, Status::layout_mismatch);
  EXPECT_EQ(abs_cast_with(6, 2).status, Status::layout_mismatch);
}

TEST(DecodeAtenUnrolled, WithoutCastUsesFunctorAndRejectsVectorizedLayout) {
  const auto& r = row("unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.out_type, OutType::static_dtype);
  EXPECT_EQ(m.out, DType::f32);
  EXPECT_EQ(match(r, add_bf16().layout).kind, MatchKind::layout_mismatch);
  EXPECT_EQ(match(abs_cast(), r.layout).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenMultiOutput, TrivialAndStridedOutputs) {
  const auto& triv = row("unrolled_elementwise_kernel_for_multi_outputs<2, at::native::prelu_backward_kernel(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 5ul>, TrivialOffsetCalculator");
  const auto mt = match(triv);
  ASSERT_EQ(mt.kind, MatchKind::matched) << mt.reason;
  EXPECT_EQ(mt.num_outputs, 2);
  Launch lt(triv.layout);
  lt.set<int32_t>(0, 0, 12);
  for (uint32_t i = 0; i < 5; ++i) lt.set<uint64_t>(2, 8 * i, 0x1000 * (i + 1));
  const Decoded dt = decode_aten(mt, lt.view, kNoQuery);
  ASSERT_EQ(dt.write_count, 2u);
  expect_write(dt.writes[0], 0x1000, 12, 24, DType::bf16);
  expect_write(dt.writes[1], 0x2000, 12, 24, DType::bf16);
  EXPECT_EQ(dt.read_count, 3u);

  const auto& strided = row("unrolled_elementwise_kernel_for_multi_outputs<2, at::native::prelu_backward_kernel(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 5ul>, OffsetCalculator");
  const auto ms = match(strided);
  ASSERT_EQ(ms.kind, MatchKind::matched) << ms.reason;
  EXPECT_FALSE(ms.trivial_out);
  Launch ls(strided.layout);
  ls.set<int32_t>(0, 0, 12).set<uint64_t>(2, 0, 0x1000).set<uint64_t>(2, 8, 0x2000);
  // Shape 4 x 3; output 0 dense {1, 4}, output 1 with a gap {1, 8} (strides in elements).
  put_offset_calc(ls, 4, 0, 2, {4, 3}, {{1, 1}, {4, 8}});
  const Decoded ds = decode_aten(ms, ls.view, kNoQuery);
  ASSERT_EQ(ds.write_count, 2u);
  expect_write(ds.writes[0], 0x1000, 12, 24, DType::bf16);
  expect_write(ds.writes[1], 0x2000, 12, (3 + 2 * 8 + 1) * 2, DType::bf16);
  // A calculator whose sizes do not multiply to N is not this launch's.
  ls.set<int32_t>(0, 0, 13);
  EXPECT_EQ(decode_aten(ms, ls.view, kNoQuery).status, Status::layout_mismatch);
  EXPECT_EQ(match(strided, triv.layout).kind, MatchKind::layout_mismatch);
}

namespace {
const KernelRow& legacy_add() {
  return row("elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >");
}
// OffsetCalculator<3> at 0 of the 648-byte closure, data at align8(604) = 608.
Launch legacy_launch(int32_t n, const std::vector<uint32_t>& sizes,
                     const std::vector<std::vector<uint32_t>>& strides) {
  Launch l(legacy_add().layout);
  l.set<int32_t>(0, 0, n);
  put_offset_calc(l, 1, 0, 3, sizes, strides);
  l.set<uint64_t>(1, 608, 0x10000).set<uint64_t>(1, 616, 0x20000).set<uint64_t>(1, 624, 0x30000);
  return l;
}
LiveSet live3() { return LiveSet{{0x10000, 0x20000, 0x30000}}; }
}  // namespace

TEST(DecodeAtenLegacy, OffsetCalculatorExtentStridedAndBroadcast) {
  const auto m = match(legacy_add());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.nargs, 0);  // named functor: NARGS inferred from live pointers
  const LiveSet live = live3();
  // 8 x 5, byte strides: output dense {2, 16}, input 2 broadcast along dim 0 (stride 0).
  Launch dense = legacy_launch(40, {8, 5}, {{2, 2, 0}, {16, 16, 2}});
  Decoded d = decode_aten(m, dense.view, live.query());
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  expect_write(d.writes[0], 0x10000, 40, 80, DType::bf16);
  EXPECT_EQ(d.writes[0].arg, 1u);
  EXPECT_EQ(d.read_count, 2u);
  // Output rows with a gap: span 7*2 + 4*32 + 2, still 40 elements.
  Launch gap = legacy_launch(40, {8, 5}, {{2, 2, 0}, {32, 16, 2}});
  expect_write(decode_aten(m, gap.view, live.query()).writes[0], 0x10000, 40, 144, DType::bf16);
  // A broadcast (stride 0) dim of the output: 8 distinct elements in 16 bytes.
  Launch bcast = legacy_launch(40, {8, 5}, {{2, 2, 0}, {0, 16, 2}});
  expect_write(decode_aten(m, bcast.view, live.query()).writes[0], 0x10000, 8, 16, DType::bf16);
}

TEST(DecodeAtenLegacy, RefusesWhatItCannotProve) {
  const auto m = match(legacy_add());
  Launch l = legacy_launch(40, {8, 5}, {{2, 2, 0}, {16, 16, 2}});
  // No address query: NARGS of a named functor cannot be inferred.
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).status, Status::layout_mismatch);
  // A dead input pointer, or N that is not the calculator's numel.
  EXPECT_EQ(decode_aten(m, l.view, LiveSet{{0x10000, 0x20000}}.query()).status, Status::layout_mismatch);
  Launch wrong_n = legacy_launch(41, {8, 5}, {{2, 2, 0}, {16, 16, 2}});
  EXPECT_EQ(decode_aten(m, wrong_n.view, live3().query()).status, Status::layout_mismatch);
  // Corrupt divider magic.
  l.set<uint32_t>(1, 8, 12345);
  EXPECT_EQ(decode_aten(m, l.view, live3().query()).status, Status::layout_mismatch);
  // The cast variant's closure with a named functor is not decoded (its size is not known for
  // certain); the vectorized layout is not a legacy closure.
  const auto cast = match(row("elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<c10::BFloat16> >"));
  EXPECT_EQ(cast.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(cast.family, AtenFamily::legacy_cast);
  EXPECT_EQ(match(legacy_add(), add_bf16().layout).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenLegacy, LambdaArityGivesNargs) {
  const auto& r = row("elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.nargs, 2);
  EXPECT_EQ(m.out, DType::bf16);
  Launch l(r.layout);  // 536 bytes: OffsetCalculator<2>, data at 504
  l.set<int32_t>(0, 0, 6);
  put_offset_calc(l, 1, 0, 2, {3, 2}, {{2, 4}, {6, 12}});
  l.set<uint64_t>(1, 504, 0x5000).set<uint64_t>(1, 512, 0x6000);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u) << d.reason;
  expect_write(d.writes[0], 0x5000, 6, 12, DType::bf16);
}

namespace {
// ReduceOp with config at `c`: element size, num_outputs, a 1-D input calculator of `k`
// inputs and a 1-D output calculator of `r` outputs of `es` bytes.
Launch reduce_launch(const KernelRow& kr, uint32_t c, uint32_t r, uint32_t es, bool final_output,
                     uint64_t acc_buf, int32_t noutputs) {
  Launch l(kr.layout);
  const uint32_t s = kr.layout[0].second;
  l.set<int32_t>(0, c, 4).set<int32_t>(0, c + 4, 128).set<int32_t>(0, c + 8, static_cast<int32_t>(r));
  put_offset_calc(l, 0, c + 64, 1, {128}, {{4}});
  put_offset_calc(l, 0, c + 64 + 404, 2, {r}, {{es, 512}});
  l.set<uint64_t>(0, s - 64, 0x7000).set<uint64_t>(0, s - 56, 0x8000).set<uint64_t>(0, s - 48, 0x9000);
  l.set<uint64_t>(0, s - 40, acc_buf).set<uint8_t>(0, s - 7, final_output ? 1 : 0);
  l.set<int32_t>(0, s - 4, noutputs);
  return l;
}
const KernelRow& sum_bf16() {
  return row("reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, float>");
}
const KernelRow& welford() { return row("ReduceOp<float, at::native::WelfordOps<float, float, int, cuda::std::__4::pair<float, float> >"); }
// Converting copies take the source type and return the destination's (Copy.cu): the output
// type is the function's, never the lambda's parameter (a bf16 output read as f32 would be
// scanned over twice its bytes).
TEST(DecodeAtenVectorized, ConvertingCopiesWriteTheDestinationType) {
  const auto bf16 = match(row("vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda"));
  ASSERT_EQ(bf16.kind, MatchKind::matched);
  EXPECT_EQ(bf16.out, DType::bf16);
  const auto f16 = match(row("vectorized_elementwise_kernel<8, at::native::float16_copy_kernel_cuda"));
  ASSERT_EQ(f16.kind, MatchKind::matched);
  EXPECT_EQ(f16.out, DType::f16);
  // One lambda per fp8 format, numbered in Copy.cu's order: #1 e4m3fn, #2 e5m2 (from the H200
  // run of fp8_amax, `(x * scale).to(torch.float8_e4m3fn)` runs {lambda(float)#1}); #5 is e8m0fnu,
  // no DType: refused.
  const auto e4m3 = match(row("float8_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}"));
  ASSERT_EQ(e4m3.kind, MatchKind::matched) << e4m3.reason;
  EXPECT_EQ(e4m3.out, DType::f8e4m3);
  EXPECT_EQ(e4m3.in[0], DType::f32);
  const auto e5m2 = match(row("float8_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#2}"));
  ASSERT_EQ(e5m2.kind, MatchKind::matched) << e5m2.reason;
  EXPECT_EQ(e5m2.out, DType::f8e5m2);
  EXPECT_EQ(match(row("float8_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::Half)#5}")).kind,
            MatchKind::layout_mismatch);
}

}  // namespace

TEST(DecodeAtenReduce, TailOffsetsForBothStructSizes) {
  // 1048 bytes (ops 1, float ident, config at 8) and 1064 (Welford: config at 24), as torch
  // 2.11 lays them out: 4 bytes of padding before src in both.
  const auto ms = match(sum_bf16());
  ASSERT_EQ(ms.kind, MatchKind::matched) << ms.reason;
  EXPECT_EQ(ms.out, DType::f32);  // ReduceOp's 4th template argument, not the input type
  Launch ls = reduce_launch(sum_bf16(), 1048 - 68 - 972, 32, 4, true, 0, 1);
  Decoded d = decode_aten(ms, ls.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u) << d.reason;
  expect_write(d.writes[0], 0x8000, 32, 128, DType::f32);
  EXPECT_EQ(d.reads[0], 0x7000u);

  const auto mw = match(welford());
  ASSERT_EQ(mw.kind, MatchKind::matched) << mw.reason;
  EXPECT_TRUE(mw.second_output);
  Launch lw = reduce_launch(welford(), 1064 - 68 - 972, 10, 4, true, 0, 2);
  d = decode_aten(mw, lw.view, kNoQuery);
  ASSERT_EQ(d.write_count, 2u) << d.reason;
  expect_write(d.writes[0], 0x8000, 10, 40, DType::f32);
  expect_write(d.writes[1], 0x9000, 10, 40, DType::f32);
}

TEST(DecodeAtenReduce, PaddedHeadAndUnknownExtent) {
  const auto m = match(sum_bf16());
  // Config 0 mod 8 (a head of 4 more bytes): no padding before src.
  Launch padded = reduce_launch(sum_bf16(), 1048 - 64 - 972, 6, 4, true, 0, 1);
  const Decoded d = decode_aten(m, padded.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u) << d.reason;
  expect_write(d.writes[0], 0x8000, 6, 24, DType::f32);
  // Neither placement fits (num_outputs disagrees with the calculator): extent unknown.
  Launch bad = reduce_launch(sum_bf16(), 1048 - 68 - 972, 6, 4, true, 0, 1);
  bad.set<int32_t>(0, 8 + 8, 7);
  const Decoded b = decode_aten(m, bad.view, kNoQuery);
  EXPECT_EQ(b.status, Status::layout_mismatch);
  EXPECT_EQ(b.reason, "extent unknown");
}

TEST(DecodeAtenReduce, PartialsAndOutputTypes) {
  const auto m = match(sum_bf16());
  // Not final, with acc_buf: partials of arg_t in acc_buf, nothing reported.
  Launch acc = reduce_launch(sum_bf16(), 8, 6, 4, false, 0xAAAA, 1);
  const Decoded a = decode_aten(m, acc.view, kNoQuery);
  EXPECT_EQ(a.status, Status::decoded);
  EXPECT_EQ(a.write_count, 0u);
  // Not final, no acc_buf: partials stored in dst[0] as out_scalar_t.
  Launch inplace = reduce_launch(sum_bf16(), 8, 6, 4, false, 0, 1);
  EXPECT_EQ(decode_aten(m, inplace.view, kNoQuery).write_count, 1u);
  EXPECT_EQ(match(row("ReduceOp<double, at::native::func_wrapper_t<double")).out, DType::f64);
  const auto mx = match(row("ReduceOp<c10::BFloat16, at::native::MaxOps<c10::BFloat16>"));
  EXPECT_EQ(mx.out, DType::bf16);
  EXPECT_FALSE(mx.second_output);  // dst[1] holds int64 indices
  EXPECT_EQ(match(row("ReduceOp<bool, at::native::MinMaxOps<bool, bool, int>")).out_type, OutType::not_float);
  EXPECT_EQ(match(row("ReduceOp<c10::complex<double>")).out_type, OutType::not_float);
  EXPECT_EQ(match(sum_bf16(), {{0, 8}, {8, 1040}}).kind, MatchKind::layout_mismatch);
  EXPECT_EQ(match(sum_bf16(), {{0, 472}}).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenCost, LegacyInferenceAndReduce) {
  // NARGS inferred by trying 1..6 against a live set (a std::set here; the engine's map is
  // its own cost), then the 2-D calculator walk.
  const LiveSet live = live3();
  Launch l = legacy_launch(40, {8, 5}, {{2, 2, 0}, {16, 16, 2}});
  time_decode("elementwise (NARGS inferred)", match(legacy_add()), l.view, live.query());
  Launch r = reduce_launch(sum_bf16(), 8, 32, 4, true, 0, 1);
  time_decode("reduce", match(sum_bf16()), r.view, kNoQuery);
}

// ---- read facts: each input's dtype and extent ------------------------------------------------

namespace {
// A vectorized launch of `r` with N and data[i] = 0x1000 * (i + 1).
Decoded vectorized_reads(const KernelRow& r, int32_t n) {
  const auto m = match(r);
  EXPECT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l(r.layout);
  l.set<int32_t>(0, 0, n);
  for (uint32_t i = 0; 8 * i < r.layout[2].second; ++i) l.set<uint64_t>(2, 8 * i, 0x1000 * (i + 1));
  return decode_aten(m, l.view, kNoQuery);
}
}  // namespace

TEST(DecodeAtenReads, VectorizedInputsHaveTheFunctorsArgumentTypes) {
  // CUDAFunctor_add<T>::operator()(T, T): both inputs bf16, N each.
  Decoded d = vectorized_reads(add_bf16(), 1000);
  ASSERT_EQ(d.read_count, 2u);
  expect_read(d, 0, 0x2000, DType::bf16, 1000);
  expect_read(d, 1, 0x3000, DType::bf16, 1000);
  // BinaryFunctor<float, float, float, Mul>: a1, a2.
  d = vectorized_reads(row("vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor"), 7);
  expect_read(d, 0, 0x2000, DType::f32, 7);
  expect_read(d, 1, 0x3000, DType::f32, 7);
  // BinaryFunctor<bf16, bf16, bool, ...> (logical_xor): the inputs are bf16 though the output is bool.
  d = vectorized_reads(row("BinaryFunctor<c10::BFloat16, c10::BFloat16, bool"), 5);
  EXPECT_EQ(d.write_count, 0u);
  expect_read(d, 0, 0x2000, DType::bf16, 5);
  expect_read(d, 1, 0x3000, DType::bf16, 5);
  // AUnaryFunctor holds a1 (the scalar) and takes the tensor as a2.
  d = vectorized_reads(row("AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16"), 9);
  ASSERT_EQ(d.read_count, 1u);
  expect_read(d, 0, 0x2000, DType::bf16, 9);
  // Lambdas: the parameter types in order. FillFunctor reads nothing.
  d = vectorized_reads(row("silu_kernel"), 3);
  ASSERT_EQ(d.read_count, 1u);
  expect_read(d, 0, 0x2000, DType::bf16, 3);
  EXPECT_EQ(vectorized_reads(row("vectorized_elementwise_kernel<4, at::native::FillFunctor<float>"), 3).read_count, 0u);
  // logical_not(float): a float input, a bool output.
  expect_read(vectorized_reads(row("logical_not"), 4), 0, 0x2000, DType::f32, 4);
}

TEST(DecodeAtenReads, IntegerAndBoolInputsAreNanFreeReads) {
  // where(bool, bf16, bf16): the condition is never scanned, but the graph planner must know the
  // launch only reads it (else its pointer counts as a write to the end of its allocation).
  const Decoded d = vectorized_reads(row("vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::where_kernel_impl"), 6);
  ASSERT_EQ(d.read_count, 2u);
  expect_read(d, 0, 0x3000, DType::bf16, 6);
  expect_read(d, 1, 0x4000, DType::bf16, 6);
  ASSERT_EQ(d.no_nan_read_count, 1u);
  EXPECT_EQ(d.no_nan_reads[0], 0x2000u);
}

TEST(DecodeAtenReads, NamedFunctorInputPositions) {
  // Which template arguments are the tensor inputs: AUnary takes a2, BUnary a1, Binary both.
  FamilyMatch m;
  ASSERT_TRUE(decode::aten::functor_inputs("at::native::AUnaryFunctor<float, c10::BFloat16, float, F>", m));
  ASSERT_EQ(m.in_count, 1);
  EXPECT_EQ(m.in[0], DType::bf16);
  ASSERT_TRUE(decode::aten::functor_inputs("at::native::BUnaryFunctor<float, c10::BFloat16, float, F>", m));
  ASSERT_EQ(m.in_count, 1);
  EXPECT_EQ(m.in[0], DType::f32);
  ASSERT_TRUE(decode::aten::functor_inputs("at::native::BinaryFunctor<c10::Half, float, float, F>", m));
  ASSERT_EQ(m.in_count, 2);
  EXPECT_EQ(m.in[0], DType::f16);
  EXPECT_EQ(m.in[1], DType::f32);
  // Mixed lambda: an integer or bool parameter is no read; complex is a read of unknown type.
  ASSERT_TRUE(decode::aten::functor_inputs("f(at::TensorIteratorBase&)::{lambda(c10::BFloat16, bool, c10::complex<float>)#1}", m));
  EXPECT_EQ(m.in_count, 3);
  EXPECT_EQ(m.in_skip, 2);
  EXPECT_EQ(m.in[2], DType::none);
  EXPECT_FALSE(decode::aten::functor_inputs("at::native::CalcIgamma<float>", m));
}

TEST(DecodeAtenReads, AmbiguousOrMismatchedNamesGiveNone) {
  // A functor the name does not type (CalcIgamma-like): every input none/0.
  Launch l(add_bf16().layout);
  l.set<int32_t>(0, 0, 10).set<uint64_t>(2, 0, 0x1000).set<uint64_t>(2, 8, 0x2000).set<uint64_t>(2, 16, 0x3000);
  FamilyMatch m = match(add_bf16());
  m.in_known = false;
  Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 2u);
  expect_read(d, 0, 0x2000, DType::none, 0);
  expect_read(d, 1, 0x3000, DType::none, 0);
  // A name implying one input for a 3-slot array: the count disagrees, so nothing is claimed.
  m = match(add_bf16());
  m.in_count = 1;
  d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 2u);
  expect_read(d, 0, 0x2000, DType::none, 0);
  expect_read(d, 1, 0x3000, DType::none, 0);
  // Dropout's lambda(c10::BFloat16, bool) is refused for its output; the match says why.
  EXPECT_EQ(match(row("masked_scale_kernel<bool, c10::BFloat16, float>")).kind, MatchKind::layout_mismatch);
}

TEST(DecodeAtenReads, UnrolledLoadWithCastTypesFromTheLoaderBytes) {
  // unrolled_elementwise_kernel<CUDAFunctor_add<float>, ..., LoadWithCast<2>, StoreWithCast<1>>:
  // the loader (param 5, 12 bytes) holds ScalarType dtypes[2] then uint32_t element_sizes[2] at 4.
  const auto& r = row("unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<2>");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.load_cast, 2);
  EXPECT_TRUE(m.in_trivial);
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 256).set<uint64_t>(2, 0, 0x1000).set<uint64_t>(2, 8, 0x2000).set<uint64_t>(2, 16, 0x3000);
  l.set<uint8_t>(6, 0, 6).set<uint32_t>(6, 4, 4);                        // output Float
  l.set<uint8_t>(5, 0, 15).set<uint8_t>(5, 1, 6);                        // inputs BFloat16, Float
  l.set<uint32_t>(5, 4, 2).set<uint32_t>(5, 8, 4);
  Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.read_count, 2u);
  expect_read(d, 0, 0x2000, DType::bf16, 256);  // not the functor's float
  expect_read(d, 1, 0x3000, DType::f32, 256);
  // An int64 input holds no NaN: no read. A size disagreeing with its type byte: untyped.
  l.set<uint8_t>(5, 0, 4).set<uint32_t>(5, 4, 8);
  d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 1u);
  expect_read(d, 0, 0x3000, DType::f32, 256);
  l.set<uint8_t>(5, 0, 5).set<uint32_t>(5, 4, 4);  // Half with element size 4
  expect_read(decode_aten(m, l.view, kNoQuery), 0, 0x2000, DType::none, 0);
  // LoadWithCast<1> (8 bytes) of AbsFunctor<float>: the input is whatever the loader says.
  const auto ma = match(abs_cast());
  EXPECT_EQ(ma.load_cast, 1);
  Launch la(abs_cast().layout);
  la.set<int32_t>(0, 0, 64).set<uint64_t>(2, 0, 0xA000).set<uint64_t>(2, 8, 0xB000);
  la.set<uint8_t>(6, 0, 6).set<uint32_t>(6, 4, 4).set<uint8_t>(5, 0, 5).set<uint32_t>(5, 4, 2);
  expect_read(decode_aten(ma, la.view, kNoQuery), 0, 0xB000, DType::f16, 64);
}

TEST(DecodeAtenReads, UnrolledWithoutCastAndMultiOutput) {
  const auto& r = row("unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast");
  const auto m = match(r);
  EXPECT_EQ(m.load_cast, 0);
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 33).set<uint64_t>(2, 0, 0x1000).set<uint64_t>(2, 8, 0x2000).set<uint64_t>(2, 16, 0x3000);
  Decoded d = decode_aten(m, l.view, kNoQuery);
  expect_read(d, 0, 0x2000, DType::f32, 33);
  expect_read(d, 1, 0x3000, DType::f32, 33);
  // Not a trivial input calculator: the types stand, the extent is unknown.
  FamilyMatch strided = m;
  strided.in_trivial = false;
  expect_read(decode_aten(strided, l.view, kNoQuery), 1, 0x3000, DType::f32, 0);
  // prelu backward: 2 outputs, inputs data[2..4] of lambda(bf16, bf16, bf16), N each.
  const auto& mo = row("unrolled_elementwise_kernel_for_multi_outputs<2, at::native::prelu_backward_kernel(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 5ul>, TrivialOffsetCalculator");
  Launch lm(mo.layout);
  lm.set<int32_t>(0, 0, 12);
  for (uint32_t i = 0; i < 5; ++i) lm.set<uint64_t>(2, 8 * i, 0x1000 * (i + 1));
  d = decode_aten(match(mo), lm.view, kNoQuery);
  ASSERT_EQ(d.read_count, 3u);
  for (uint32_t i = 0; i < 3; ++i) expect_read(d, i, 0x1000 * (i + 3), DType::bf16, 12);
}

TEST(DecodeAtenReads, LegacyInputsDenseOrBroadcastFromStrides) {
  const auto m = match(legacy_add());
  const LiveSet live = live3();
  // 8 x 5: input 1 dense {2, 16}; input 2 broadcast along dim 0, dense {0, 2} over its 5.
  Launch l = legacy_launch(40, {8, 5}, {{2, 2, 0}, {16, 16, 2}});
  Decoded d = decode_aten(m, l.view, live.query());
  ASSERT_EQ(d.read_count, 2u) << d.reason;
  expect_read(d, 0, 0x20000, DType::bf16, 40);
  expect_read(d, 1, 0x30000, DType::bf16, 5);
  // Input 1 with row gaps {2, 32}, input 2 transposed-dense {10, 2}: gaps give 0, a
  // permutation that still packs densely gives its count.
  Launch g = legacy_launch(40, {8, 5}, {{2, 2, 10}, {16, 32, 2}});
  d = decode_aten(m, g.view, live.query());
  expect_read(d, 0, 0x20000, DType::bf16, 0);
  expect_read(d, 1, 0x30000, DType::bf16, 40);
  // Broadcast with a gap (stride 4 over 5 bf16): not dense, unknown.
  Launch b = legacy_launch(40, {8, 5}, {{2, 2, 0}, {16, 16, 4}});
  expect_read(decode_aten(m, b.view, live.query()), 1, 0x30000, DType::bf16, 0);
}

TEST(DecodeAtenReads, ReduceSourceIsScalarTOverBothCalculators) {
  const auto m = match(sum_bf16());
  EXPECT_EQ(m.in[0], DType::bf16);  // ReduceOp's 1st argument (scalar_t), not out_scalar_t
  // 128 reduced bf16 (byte stride 2) x 32 outputs whose inputs start 256 bytes apart: dense.
  Launch l = reduce_launch(sum_bf16(), 8, 32, 4, true, 0, 1);
  put_offset_calc(l, 0, 8 + 64, 1, {128}, {{2}});
  put_offset_calc(l, 0, 8 + 64 + 404, 2, {32}, {{4, 256}});
  Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.read_count, 1u) << d.reason;
  EXPECT_EQ(d.reads[0], 0x7000u);
  EXPECT_EQ(d.read_dtypes[0], DType::bf16);
  EXPECT_EQ(d.read_elements[0], 128u * 32u);
  // The shared helper's 4-byte input stride leaves gaps between bf16 elements: unknown.
  d = decode_aten(m, reduce_launch(sum_bf16(), 8, 32, 4, true, 0, 1).view, kNoQuery);
  EXPECT_EQ(d.read_dtypes[0], DType::bf16);
  EXPECT_EQ(d.read_elements[0], 0u);
  // config.num_inputs (c + 4) must be the input calculator's numel.
  l.set<int32_t>(0, 8 + 4, 64);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).read_elements[0], 0u);
  // A bool reduction's source holds no NaN: no read.
  const auto& any = row("ReduceOp<bool, at::native::MinMaxOps<bool, bool, int>");
  EXPECT_EQ(decode_aten(match(any), reduce_launch(any, any.layout[0].second - 68 - 972, 4, 1, true, 0, 1).view, kNoQuery).read_count, 0u);
}

// Intended infinities (docs/origin.md#nan-first-verdicts): a fill or masked_fill writes the one
// value its functor holds; the decoder reads it from the launch and marks a +-inf as intended.
namespace {

template <class T>
Decoded fill_with(const KernelRow& r, T value) {
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 256);
  l.template set<T>(1, 0, value);
  l.set<uint64_t>(2, 0, 0x1000);
  return decode_aten(match(r), l.view, kNoQuery);
}

}  // namespace

TEST(DecodeAtenIntent, FillWithInfinityIsIntended) {
  const auto& f32 = row("vectorized_elementwise_kernel<4, at::native::FillFunctor<float>");
  ASSERT_EQ(match(f32).constant, DType::f32);
  const Decoded neg = fill_with(f32, -std::numeric_limits<float>::infinity());
  ASSERT_EQ(neg.write_count, 1u);
  EXPECT_EQ(neg.writes[0].intended_inf, nanscope::decode::kIntendNegInf);
  EXPECT_EQ(fill_with(f32, std::numeric_limits<float>::infinity()).writes[0].intended_inf,
            nanscope::decode::kIntendPosInf);
  EXPECT_EQ(fill_with(f32, 0.0f).writes[0].intended_inf, 0u);
  EXPECT_EQ(fill_with(f32, std::numeric_limits<float>::lowest()).writes[0].intended_inf, 0u);  // finfo.min
  EXPECT_EQ(fill_with(f32, std::numeric_limits<float>::quiet_NaN()).writes[0].intended_inf, 0u);
  // fp16: the value is two bytes at param 1 (layout 1@4:2).
  const auto& f16 = row("vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>");
  ASSERT_EQ(match(f16).constant, DType::f16);
  EXPECT_EQ(fill_with<uint16_t>(f16, 0xfc00).writes[0].intended_inf, nanscope::decode::kIntendNegInf);
  EXPECT_EQ(fill_with<uint16_t>(f16, 0x7bff).writes[0].intended_inf, 0u);  // 65504, the largest finite
}

TEST(DecodeAtenIntent, UnrolledFillWithCast) {
  const auto& r = row("unrolled_elementwise_kernel<at::native::FillFunctor<float>, std::array<char*, 1ul>, 4, TrivialOffsetCalculator<0, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<0>, at::native::memory::StoreWithCast<1> >");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.constant, DType::f32);
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 64).set<float>(1, 0, -std::numeric_limits<float>::infinity()).set<uint64_t>(2, 0, 0xA000);
  l.set<uint8_t>(6, 0, 15).set<uint32_t>(6, 4, 2);  // the tensor is bf16: the value was cast on the way
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].dtype, DType::bf16);
  EXPECT_EQ(d.writes[0].intended_inf, nanscope::decode::kIntendNegInf);
}

TEST(DecodeAtenIntent, MaskedFillLambdaHoldsItsValue) {
  const auto& r = row("masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float, bool)#1}, std::array<char*, 3ul> >(int");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.constant, DType::f32);
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 128).set<float>(1, 0, -std::numeric_limits<float>::infinity());
  l.set<uint64_t>(2, 0, 0x1000).set<uint64_t>(2, 8, 0x2000).set<uint64_t>(2, 16, 0x3000);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].intended_inf, nanscope::decode::kIntendNegInf);
  ASSERT_EQ(d.read_count, 1u);  // self; the bool mask is a NaN-free read
  EXPECT_EQ(d.reads[0], 0x2000u);
}

TEST(DecodeAtenIntent, OtherFunctorsWriteNoConstant) {
  EXPECT_EQ(match(add_bf16()).constant, DType::none);
  EXPECT_EQ(nanscope::decode::aten::constant_functor("at::native::CUDAFunctor_add<float>"), DType::none);
  EXPECT_EQ(nanscope::decode::aten::infinity_of(nullptr, DType::f32), 0u);
  const uint8_t e5m2_neg_inf = 0xfc, e4m3_max = 0x7e;
  EXPECT_EQ(nanscope::decode::aten::infinity_of(reinterpret_cast<const char*>(&e5m2_neg_inf), DType::f8e5m2),
            nanscope::decode::kIntendNegInf);
  EXPECT_EQ(nanscope::decode::aten::infinity_of(reinterpret_cast<const char*>(&e4m3_max), DType::f8e4m3), 0u);
}

// From the H200 run of fp8_amax: `scores.masked_fill(~keys[:, None, :], -inf)` broadcasts its
// mask, so it runs the non-contiguous closure (656 bytes for NARGS 3: calculator, data at 608,
// the lambda's value at 632 then nvcc's pointer). It was the report's FIRST CAUSE, arithmetic.
TEST(DecodeAtenIntent, StridedMaskedFillHoldsItsValueAfterData) {
  const auto& r = row("elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float, bool)#1}>");
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  ASSERT_EQ(m.nargs, 3);
  EXPECT_EQ(m.constant, DType::f32);
  ASSERT_EQ(r.layout[1].second, 656u);
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 40);
  put_offset_calc(l, 1, 0, 3, {8, 5}, {{4, 4, 0}, {32, 32, 1}});
  l.set<uint64_t>(1, 608, 0x10000).set<uint64_t>(1, 616, 0x20000).set<uint64_t>(1, 624, 0x30000);
  l.set<float>(1, 632, -std::numeric_limits<float>::infinity()).set<uint64_t>(1, 640, 0x7f0000001000);
  const LiveSet live = live3();
  Decoded d = decode_aten(m, l.view, live.query());
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].intended_inf, nanscope::decode::kIntendNegInf);
  l.set<float>(1, 632, 0.0f);  // masked_fill(mask, 0): no intended infinity
  EXPECT_EQ(decode_aten(m, l.view, live.query()).writes[0].intended_inf, 0u);
  // A named functor's legacy closure: FillFunctor<float> (432 bytes, NARGS 1, value at 416).
  const auto& fill = row("elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::FillFunctor<float> >");
  const auto mf = match(fill);
  ASSERT_EQ(mf.kind, MatchKind::matched) << mf.reason;
  Launch f(fill.layout);
  f.set<int32_t>(0, 0, 40);
  put_offset_calc(f, 1, 0, 1, {8, 5}, {{4}, {32}});
  f.set<uint64_t>(1, 408, 0x10000).set<float>(1, 416, std::numeric_limits<float>::infinity());
  const LiveSet one{{0x10000}};
  const Decoded df = decode_aten(mf, f.view, one.query());
  ASSERT_EQ(df.status, Status::decoded) << df.reason;
  EXPECT_EQ(df.writes[0].intended_inf, nanscope::decode::kIntendPosInf);
}

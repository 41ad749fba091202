// The dynamic-casting elementwise closure (direct copies) and the range factories'
// elementwise_kernel_with_index, against real torch 2.11 sm_90 layouts; and what the graph
// planner takes from them.
#include <gtest/gtest.h>

#include <string>

#include "aten_fixture.hpp"
#include "decode/aten_internal.hpp"
#include "scan_overlap.hpp"
#include "test_decode_reads.hpp"

using namespace nanscope;
using namespace nanscope::decode;
using namespace aten_test;
using decode_test::expect_read;

namespace {

constexpr uint8_t kLong = 4, kHalf = 5, kFloat = 6, kBFloat16 = 15;

// direct_copy_kernel_cuda's copy lambda of one type (the k-th case of its AT_DISPATCH_V2).
const KernelRow& cast_copy(const std::string& case_and_type) {
  return row("gpu_kernel_impl<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::" +
             case_and_type);
}
const KernelRow& copy_float() { return cast_copy("{lambda()#7}::operator()() const::{lambda(float)#1}>"); }
const KernelRow& copy_bf16() { return cast_copy("{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>"); }
const KernelRow& copy_long() { return cast_copy("{lambda()#4}::operator()() const::{lambda(long)#1}>"); }

// A launch of the 536-byte closure: OffsetCalculator<2> at 0, data at 504 (out 0x5000, in
// 0x6000), dtypes at 521.
Launch cast_launch(const KernelRow& r, int32_t n, const std::vector<uint32_t>& sizes,
                   const std::vector<std::vector<uint32_t>>& strides, uint8_t out_st, uint8_t in_st) {
  Launch l(r.layout);
  l.set<int32_t>(0, 0, n);
  put_offset_calc(l, 1, 0, 2, sizes, strides);
  l.set<uint64_t>(1, 504, 0x5000).set<uint64_t>(1, 512, 0x6000);
  l.set<uint8_t>(1, 521, out_st).set<uint8_t>(1, 522, in_st);
  return l;
}

}  // namespace

TEST(DecodeAtenCast, RealCopyLayoutsMatchWithTheLambdasType) {
  struct Want {
    const KernelRow& r;
    uint8_t st;
    DType dt;
  };
  const KernelRow& cdouble = cast_copy("{lambda()#8}::operator()() const::{lambda(c10::complex<double>)#1}>");
  for (const Want& w : {Want{copy_float(), kFloat, DType::f32}, Want{copy_bf16(), kBFloat16, DType::bf16},
                        Want{copy_long(), kLong, DType::none}, Want{cdouble, 10, DType::none}}) {
    const auto m = match(w.r);
    ASSERT_EQ(m.kind, MatchKind::matched) << m.reason << " " << w.r.demangled.substr(0, 200);
    EXPECT_EQ(m.family, AtenFamily::legacy_cast);
    EXPECT_EQ(m.nargs, 2);
    EXPECT_EQ(m.out_st, w.st);
    EXPECT_EQ(m.out, w.dt);
    EXPECT_EQ(w.r.layout, (Layout{{0, 4}, {8, 536}}));
  }
  EXPECT_STREQ(aten_family_name(AtenFamily::legacy_cast), "elementwise_cast");
}

// The Llama decode step's copy: int64 positions, broadcast along one dim, into a float tensor.
TEST(DecodeAtenCast, LongToFloatCopyIsExactAndNamesTheIntegerInput) {
  const auto m = match(copy_float());
  // 8 x 2, byte strides {output, input}: the output dense (4, 32), the input broadcast in dim 1.
  Launch l = cast_launch(copy_float(), 16, {8, 2}, {{4, 8}, {32, 0}}, kFloat, kLong);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  expect_write(d.writes[0], 0x5000, 16, 64, DType::f32);
  EXPECT_EQ(d.writes[0].arg, 1u);
  EXPECT_FALSE(d.writes[0].no_nan);
  EXPECT_EQ(d.read_count, 0u) << "an int64 input holds no NaN: no origin input";
  ASSERT_EQ(d.no_nan_read_count, 1u);
  EXPECT_EQ(d.no_nan_reads[0], 0x6000u);
}

TEST(DecodeAtenCast, ExtentsForStridedAndBroadcastOutputs) {
  const auto m = match(copy_bf16());
  // 4 x 3 float input, dense (4, 16); bf16 output rows with a gap: 3*2 + 2*16 + 2 bytes.
  Launch gap = cast_launch(copy_bf16(), 12, {4, 3}, {{2, 4}, {16, 16}}, kBFloat16, kFloat);
  const Decoded d = decode_aten(m, gap.view, kNoQuery);
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  expect_write(d.writes[0], 0x5000, 12, 40, DType::bf16);
  expect_read(d, 0, 0x6000, DType::f32, 12);
  // The output broadcast along dim 0 (stride 0): 3 distinct elements in 6 bytes; the half input
  // strided with a gap: its extent is not dense, so unknown.
  Launch bcast = cast_launch(copy_bf16(), 12, {4, 3}, {{0, 2}, {2, 16}}, kBFloat16, kHalf);
  const Decoded b = decode_aten(m, bcast.view, kNoQuery);
  ASSERT_EQ(b.status, Status::decoded) << b.reason;
  expect_write(b.writes[0], 0x5000, 3, 6, DType::bf16);
  expect_read(b, 0, 0x6000, DType::f16, 0);
}

TEST(DecodeAtenCast, IntegerOutputIsAnExactWriteThatHoldsNoNaN) {
  const auto m = match(copy_long());
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  Launch l = cast_launch(copy_long(), 10, {10}, {{8, 4}}, kLong, kFloat);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  expect_untyped_write(d.writes[0], 0x5000, 10, 80, 8);
  EXPECT_TRUE(d.writes[0].no_nan);
  expect_read(d, 0, 0x6000, DType::f32, 10);
}

TEST(DecodeAtenCast, RefusesBytesThatAreNotThisClosure) {
  const auto m = match(copy_float());
  auto status = [&](int32_t n, uint8_t out_st, uint8_t in_st) {
    Launch l = cast_launch(copy_float(), n, {8, 2}, {{4, 8}, {32, 0}}, out_st, in_st);
    return decode_aten(m, l.view, kNoQuery);
  };
  EXPECT_EQ(status(16, kBFloat16, kLong).reason, "output ScalarType is not the copy's type");
  EXPECT_EQ(status(16, kFloat, 44).reason, "unknown ScalarType in the closure's dtypes");  // Float8_e8m0fnu
  EXPECT_EQ(status(16, kFloat, 200).status, Status::layout_mismatch);
  EXPECT_EQ(status(16, kFloat, kFloat).reason, "no input is cast: not the dynamic-casting closure");
  EXPECT_EQ(status(17, kFloat, kLong).reason, "closure does not fit an offset calculator");
  EXPECT_EQ(status(-1, kFloat, kLong).reason, "negative N");
}

TEST(DecodeAtenCast, RefusesNeighbourLayoutsAndOtherFunctors) {
  // clamp_min's lambda captures the scalar bound: a 552-byte closure.
  const auto& clamp = row("gpu_kernel_impl<at::native::clamp_min_kernel_cuda");
  EXPECT_EQ(clamp.layout, (Layout{{0, 4}, {8, 552}}));
  const auto mc = match(clamp);
  EXPECT_EQ(mc.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(mc.family, AtenFamily::legacy_cast);
  EXPECT_EQ(mc.reason, "functor not known to be captureless");
  // The copy's name with the capturing closure's size, and the nocast closure of three tensors.
  const auto wrong = match(copy_float(), clamp.layout);
  EXPECT_EQ(wrong.kind, MatchKind::layout_mismatch);
  EXPECT_EQ(wrong.reason, "closure size is not the captureless cast layout");
  EXPECT_EQ(match(copy_float(), {{0, 4}, {8, 648}}).kind, MatchKind::layout_mismatch);
  // neg's lambda is captureless too, but no table entry says so: refused, never assumed.
  EXPECT_EQ(match(row("gpu_kernel_impl<at::native::neg_kernel_cuda")).kind, MatchKind::layout_mismatch);
  // A named functor in the cast closure; the nocast copy stays the nocast family.
  EXPECT_EQ(match(row("gpu_kernel_impl<at::native::CUDAFunctor_add<c10::BFloat16> >")).family, AtenFamily::legacy_cast);
  EXPECT_EQ(match(row("elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda")).family,
            AtenFamily::legacy);
}

// --- elementwise_kernel_with_index -----------------------------------------------------------

namespace {

// The fixture row of `function`'s kernel for dispatch switch s, case k, index_t `index`.
const KernelRow& with_index(const std::string& index, const std::string& function, int s, int k) {
  const std::string at = "elementwise_kernel_with_index<" + index + ", at::native::" + function + "(";
  const std::string lambdas = "::{lambda()#" + std::to_string(s) + "}::operator()() const::{lambda()#" +
                              std::to_string(k) + "}::operator()() const::{lambda(long)#1}>(";
  for (const auto& r : fixture_rows())
    if (r.demangled.find(at) != std::string::npos && r.demangled.find(lambdas) != std::string::npos) return r;
  throw std::runtime_error("no fixture row: " + function);
}

Decoded decode_n(const KernelRow& r, int64_t n, uint64_t ptr = 0x7000) {
  Launch l(r.layout);
  if (r.layout[0].second == 8)
    l.set<int64_t>(0, 0, n);
  else
    l.set<int32_t>(0, 0, static_cast<int32_t>(n));
  l.set<uint64_t>(2, 0, ptr);
  return decode_aten(match(r), l.view, kNoQuery);
}

}  // namespace

TEST(DecodeAtenWithIndex, RealLayoutsMatchTheirDispatchCase) {
  struct Want {
    std::string index, function;
    int s, k;
    uint8_t st;
    uint32_t closure_at, closure;
  };
  const std::vector<Want> wants = {
      {"int", "arange_cuda_out", 1, 4, kLong, 8, 24},       {"long", "arange_cuda_out", 1, 4, kLong, 8, 24},
      {"int", "arange_cuda_out", 1, 3, 3, 8, 24},           {"int", "arange_cuda_out", 1, 7, kFloat, 8, 16},
      {"int", "arange_cuda_out", 1, 9, kBFloat16, 8, 16},   {"int", "range_cuda_out", 1, 7, kFloat, 8, 16},
      {"int", "linspace_cuda_out", 1, 4, kLong, 8, 48},     {"int", "linspace_cuda_out", 2, 2, kFloat, 8, 40},
      {"int", "linspace_cuda_out", 2, 6, kBFloat16, 8, 40}, {"int", "linspace_cuda_out", 2, 3, 10, 16, 80},
      {"int", "logspace_cuda_out", 1, 3, 3, 8, 48},         {"int", "logspace_cuda_out", 2, 3, 10, 16, 96},
  };
  for (const Want& w : wants) {
    const KernelRow& r = with_index(w.index, w.function, w.s, w.k);
    const auto m = match(r);
    ASSERT_EQ(m.kind, MatchKind::matched) << m.reason << " " << w.function << " " << w.s << "/" << w.k;
    EXPECT_EQ(m.family, AtenFamily::with_index);
    EXPECT_EQ(m.out_st, w.st) << w.function << " " << w.s << "/" << w.k;
    EXPECT_EQ(r.layout[1], (std::pair<uint32_t, uint32_t>{w.closure_at, w.closure})) << w.function;
    // Demangled here from the mangled name, as the engine does: the same match.
    EXPECT_EQ(nanscope::decode::match_aten(r.mangled, "", r.layout).out_st, w.st);
  }
}

TEST(DecodeAtenWithIndex, WritesNElementsOfTheCasesType) {
  // arange(int64) as in the decode step's positions: exact, no NaN to find.
  const Decoded pos = decode_n(with_index("int", "arange_cuda_out", 1, 4), 7);
  ASSERT_EQ(pos.status, Status::decoded) << pos.reason;
  ASSERT_EQ(pos.write_count, 1u);
  expect_untyped_write(pos.writes[0], 0x7000, 7, 56, 8);
  EXPECT_EQ(pos.writes[0].arg, 2u);
  EXPECT_TRUE(pos.writes[0].no_nan);
  const Decoded i32 = decode_n(with_index("int", "arange_cuda_out", 1, 3), 5);
  EXPECT_EQ(i32.writes[0].span_bytes, 20u);
  EXPECT_TRUE(i32.writes[0].no_nan);
  // Floating outputs are scanned with their type.
  const Decoded f = decode_n(with_index("int", "arange_cuda_out", 1, 7), 1000);
  expect_write(f.writes[0], 0x7000, 1000, 4000, DType::f32);
  EXPECT_FALSE(f.writes[0].no_nan);
  expect_write(decode_n(with_index("int", "arange_cuda_out", 1, 9), 33).writes[0], 0x7000, 33, 66, DType::bf16);
  expect_write(decode_n(with_index("int", "linspace_cuda_out", 2, 2), 50).writes[0], 0x7000, 50, 200, DType::f32);
  expect_write(decode_n(with_index("int", "linspace_cuda_out", 2, 6), 5).writes[0], 0x7000, 5, 10, DType::bf16);
  // Complex: no DType, but it can hold NaN: an element-size-only write, not marked no_nan.
  const Decoded c = decode_n(with_index("int", "linspace_cuda_out", 2, 3), 4);
  EXPECT_EQ(c.writes[0].span_bytes, 64u);
  EXPECT_FALSE(c.writes[0].no_nan);
  // The int64 index serves only N > INT_MAX; N = 0 writes nothing.
  const int64_t big = (int64_t{1} << 31) + 5;
  const Decoded l = decode_n(with_index("long", "arange_cuda_out", 1, 4), big);
  ASSERT_EQ(l.status, Status::decoded) << l.reason;
  EXPECT_EQ(l.writes[0].span_bytes, static_cast<uint64_t>(big) * 8);
  EXPECT_EQ(decode_n(with_index("long", "arange_cuda_out", 1, 4), 7).status, Status::layout_mismatch);
  EXPECT_EQ(decode_n(with_index("int", "arange_cuda_out", 1, 7), 0).write_count, 0u);
  EXPECT_EQ(decode_n(with_index("int", "arange_cuda_out", 1, 7), -3).reason, "negative N");
}

TEST(DecodeAtenWithIndex, RefusesOtherSizesFunctionsAndCases) {
  const KernelRow& i64 = with_index("int", "arange_cuda_out", 1, 4);
  const KernelRow& f32 = with_index("int", "arange_cuda_out", 1, 7);
  // The int64 case's name with the float case's 16-byte closure, and the other way round.
  EXPECT_EQ(match(i64, f32.layout).reason, "closure size does not fit the dispatch case's type");
  EXPECT_EQ(match(f32, i64.layout).kind, MatchKind::layout_mismatch);
  EXPECT_EQ(match(i64, {{0, 8}, {8, 24}, {32, 8}}).kind, MatchKind::layout_mismatch) << "int N is 4 bytes";
  // A case past the macro's list, a switch the function does not have, a function not listed.
  auto renamed = [&](const std::string& from, const std::string& to) {
    std::string d = i64.demangled;
    for (std::size_t at; (at = d.find(from)) != std::string::npos;) d.replace(at, from.size(), to);
    return nanscope::decode::match_aten("", d, i64.layout);
  };
  EXPECT_EQ(renamed("{lambda()#4}", "{lambda()#10}").reason, "dispatch case unknown");
  EXPECT_EQ(renamed("{lambda()#1}::operator()() const::{lambda()#4}", "{lambda()#2}::operator()() const::{lambda()#4}").reason,
            "function not in the range factory table");
  EXPECT_EQ(renamed("arange_cuda_out", "eye_cuda_out").reason, "function not in the range factory table");
  EXPECT_EQ(renamed("{lambda(long)#1}", "{lambda(long)#2}").reason, "lambda not decoded");
}

// --- what the graph planner takes from these decoders (scan_overlap's launch_writes) ------------

namespace {
// One graph-pool segment [0x100000, 0x300000): tensors packed in it.
uint64_t pool_end(uint64_t v) { return v >= 0x100000 && v < 0x300000 ? 0x300000 : 0; }
bool writes_any(const std::vector<overlap::Range>& writes, overlap::Range r) {
  for (const auto& w : writes)
    if (w.overlaps(r)) return true;
  return false;
}
}  // namespace

TEST(DecodeAtenPlanner, ExactRangesReplaceWritesToTheEndOfTheAllocation) {
  // arange's int64 positions at 0x100200 (7 elements); the next tensor at 0x100400.
  const Decoded pos = decode_n(with_index("int", "arange_cuda_out", 1, 4), 7, 0x100200);
  const overlap::Range neighbour{0x100400, 0x100500};
  EXPECT_TRUE(writes_any(overlap::launch_writes({0x100200}, {}, {}, pool_end), neighbour))
      << "undecoded, the pointer writes to the end of the segment";
  std::vector<overlap::KnownWrite> exact;
  std::vector<uint64_t> inputs;
  overlap::add_decoded_io(pos, exact, inputs);
  const auto w = overlap::launch_writes({0x100200}, exact, inputs, pool_end);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].lo, 0x100200u);
  EXPECT_EQ(w[0].hi, 0x100238u);
  EXPECT_FALSE(writes_any(w, neighbour));

  // The copy of those positions into float: its output exact, its int64 input only read.
  Launch l(copy_float().layout);
  l.set<int32_t>(0, 0, 7);
  put_offset_calc(l, 1, 0, 2, {7}, {{4, 8}});
  l.set<uint64_t>(1, 504, 0x100600).set<uint64_t>(1, 512, 0x100200).set<uint8_t>(1, 521, kFloat).set<uint8_t>(1, 522, kLong);
  const Decoded copy = decode_aten(match(copy_float()), l.view, kNoQuery);
  ASSERT_EQ(copy.status, Status::decoded) << copy.reason;
  exact.clear();
  inputs.clear();
  overlap::add_decoded_io(copy, exact, inputs);
  const auto cw = overlap::launch_writes({0x100600, 0x100200}, exact, inputs, pool_end);
  ASSERT_EQ(cw.size(), 1u);
  EXPECT_EQ(cw[0].lo, 0x100600u);
  EXPECT_EQ(cw[0].hi, 0x10061cu);
  EXPECT_FALSE(writes_any(cw, {0x100200, 0x100238})) << "the positions are read, not written";
  EXPECT_FALSE(writes_any(cw, {0x100700, 0x100800}));
}

TEST(DecodeAtenCost, CastCopyAndWithIndex) {
  Launch l = cast_launch(copy_float(), 16, {8, 2}, {{4, 8}, {32, 0}}, kFloat, kLong);
  time_decode("elementwise_cast", match(copy_float()), l.view, kNoQuery);
  const KernelRow& r = with_index("int", "arange_cuda_out", 1, 7);
  Launch li(r.layout);
  li.set<int32_t>(0, 0, 100).set<uint64_t>(2, 0, 0x7000);
  time_decode("elementwise_with_index", match(r), li.view, kNoQuery);
}

// transformers 5's MoE weighting, `proj_out * sample_weights_g.unsqueeze(-1)`: a bf16 tensor times
// a broadcast f32 column runs BinaryFunctor<float, float, float, MulFunctor<float>> in the casting
// closure of three tensors (648 bytes: OffsetCalculator<3>, data at 608, the 1-byte functor at
// 632, dtypes at 633). MulFunctor has no member, so the closure is the copy's with one more tensor
// (session 29, H100: it was the one undecoded writer a healthy Mixtral's gather misread).
TEST(DecodeAtenCast, AMultiplyWithAnEmptyFunctorIsDecodedLikeACopy) {
  const auto& r = row("gpu_kernel_impl<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >");
  EXPECT_EQ(r.layout, (Layout{{0, 4}, {8, 648}}));
  const auto m = match(r);
  ASSERT_EQ(m.kind, MatchKind::matched) << m.reason;
  EXPECT_EQ(m.family, AtenFamily::legacy_cast);
  EXPECT_EQ(m.nargs, 3);
  EXPECT_EQ(m.out, DType::f32);
  // [128, 4] f32 out dense (4, 16), bf16 in dense (2, 8), f32 weights broadcast along dim 0 (0, 4).
  Launch l(r.layout);
  l.set<int32_t>(0, 0, 512);
  put_offset_calc(l, 1, 0, 3, {4, 128}, {{4, 2, 0}, {16, 8, 4}});
  l.set<uint64_t>(1, 608, 0x5000).set<uint64_t>(1, 616, 0x6000).set<uint64_t>(1, 624, 0x7000);
  l.set<uint8_t>(1, 633, kFloat).set<uint8_t>(1, 634, kBFloat16).set<uint8_t>(1, 635, kFloat);
  const Decoded d = decode_aten(m, l.view, kNoQuery);
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  expect_write(d.writes[0], 0x5000, 512, 2048, DType::f32);
  expect_read(d, 0, 0x6000, DType::bf16, 512);
  expect_read(d, 1, 0x7000, DType::f32, 128);
  // Another ScalarType stored (mul(..., out=bf16)) is not what the name says: refused.
  l.set<uint8_t>(1, 633, kBFloat16);
  EXPECT_EQ(decode_aten(m, l.view, kNoQuery).reason, "output ScalarType is not the copy's type");
  // A comparison's functor keeps its op (CompareEqFunctor::op_) in a closure of the same size: no
  // table entry says it is empty, so it is refused, never assumed.
  const auto& eq = row("gpu_kernel_impl<at::native::BinaryFunctor<unsigned char, unsigned char, bool, at::native::(anonymous namespace)::CompareEqFunctor");
  EXPECT_EQ(eq.layout, r.layout);
  EXPECT_EQ(match(eq).reason, "functor not known to be captureless");
}

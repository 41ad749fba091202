// Intended infinities (docs/origin.md#nan-first-verdicts): the functors whose one written value
// sits in their first member, and that value's sign of infinity. A mask built with
// `torch.full(..., -inf)` or `masked_fill(mask, -inf)` writes -inf on purpose; the decoders read
// the value from the launch's own parameter bytes, so a fill with 0 or 1 is never called intended.
#include <array>
#include <cstring>

#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

// FillFunctor<scalar_t> { scalar_t value_; } (Fill.cu), any element type.
constexpr std::string_view kFill = "at::native::FillFunctor<";
// masked_fill_kernel's dispatch lambdas capture `value_` (scalar_t) only (Indexing.cu):
// [value_] GPU_LAMBDA(scalar_t src, bool mask) -> scalar_t.
constexpr std::array<std::string_view, 2> kMaskedFillScopes{
    "at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::",
    "at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::"};

// Each floating type's infinity: its bytes, and the bits of +inf (the sign is the top bit). The
// e4m3fn of PyTorch has no infinity.
struct InfinityBits {
  DType dt;
  uint32_t bytes;
  uint64_t pos_inf;
};
constexpr std::array<InfinityBits, 5> kInfinities{{{DType::f64, 8, 0x7ff0000000000000ull},
                                                   {DType::f32, 4, 0x7f800000u},
                                                   {DType::f16, 2, 0x7c00u},
                                                   {DType::bf16, 2, 0x7f80u},
                                                   {DType::f8e5m2, 1, 0x7cu}}};

}  // namespace

DType constant_functor(std::string_view functor) {
  OutType cls = OutType::not_float;
  DType dt = DType::none;
  if (!functor_result(functor, cls, dt) || cls != OutType::static_dtype) return DType::none;
  if (functor.substr(0, kFill.size()) == kFill) return dt;
  for (std::string_view scope : kMaskedFillScopes) {
    if (functor.substr(0, scope.size()) != scope) continue;
    // The innermost lambda is the kernel's (scalar_t, bool); the dispatch lambdas take nothing.
    FamilyMatch m;
    if (functor_inputs(functor, m) && m.in_count == 2 && (m.in_skip & 2u) && m.in[0] == dt) return dt;
  }
  return DType::none;
}

uint8_t infinity_of(const char* p, DType dt) {
  if (!p) return 0;
  for (const InfinityBits& t : kInfinities) {
    if (t.dt != dt) continue;
    uint64_t v = 0;
    std::memcpy(&v, p, t.bytes);  // little-endian: the value's low bytes
    const uint64_t sign = uint64_t{1} << (8 * t.bytes - 1);
    if ((v & ~sign) != t.pos_inf) return 0;
    return v & sign ? kIntendNegInf : kIntendPosInf;
  }
  return 0;
}

}  // namespace nanscope::decode::aten

// Range factories (ATen/native/cuda/RangeFactories.cu): arange, range, linspace and logspace
// launch elementwise_kernel_with_index<index_t, func_t>(index_t N, func_t f, result_type* data),
// which stores f(i) to data[i] for i in [0, N): the write is exactly N elements of the output
// type. That type is not in the name as a type, only as the AT_DISPATCH case whose lambda holds
// the kernel's lambda: "{lambda()#s}::operator()() const::{lambda()#k}" is case k of the s-th
// dispatch switch in the function (the switch is a lambda, each case a copy of the user's
// lambda, ATen/Dispatch.h). The closure's size, which the driver reports, must be the one the
// case's type gives its captures.
#include <algorithm>
#include <array>
#include <climits>
#include <span>

#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

// The case lists of the dispatch macros, in their expansion order (ATen/Dispatch.h):
// INTEGRAL_TYPES = Byte, Char, Int, Long, Short; ALL_TYPES = INTEGRAL then FLOATING (Double,
// Float); FLOATING_AND_COMPLEX = FLOATING then COMPLEX (ComplexDouble, ComplexFloat); the _AND
// types follow. Values are c10::ScalarType.
constexpr std::array<uint8_t, 5> kIntegral{0, 1, 3, 4, 2};
constexpr std::array<uint8_t, 8> kAllAndHalf{0, 1, 3, 4, 2, 7, 6, 5};
constexpr std::array<uint8_t, 9> kAllAndHalfBFloat16{0, 1, 3, 4, 2, 7, 6, 5, 15};
constexpr std::array<uint8_t, 6> kFloatingComplexAndHalfBFloat16{7, 6, 10, 9, 5, 15};

// What the kernel's lambda captures, in its capture list's order: the case's scalar_t, its
// accscalar_t (acc_type<scalar_t, true>), an int64_t (steps, halfway) or a float (the integer
// cases' step and base).
enum class Capture : uint8_t { scalar, acc, i64, f32 };

struct RangeFactory {
  std::string_view function;  // qualified, as demangled
  uint32_t dispatch;          // s of {lambda()#s}: which dispatch switch of the function
  std::span<const uint8_t> cases;
  std::array<Capture, 6> captures;
  uint8_t capture_count;
};

using C = Capture;
constexpr std::array<RangeFactory, 6> kRangeFactories{
    // AT_DISPATCH_ALL_TYPES_AND2(Half, BFloat16): [xstart, xstep]
    RangeFactory{"at::native::arange_cuda_out", 1, kAllAndHalfBFloat16, {C::acc, C::acc}, 2},
    // AT_DISPATCH_ALL_TYPES_AND(Half): [xstart, xstep]
    RangeFactory{"at::native::range_cuda_out", 1, kAllAndHalf, {C::acc, C::acc}, 2},
    // integral: [scalar_start, scalar_end, steps, float step, halfway]
    RangeFactory{"at::native::linspace_cuda_out", 1, kIntegral, {C::scalar, C::scalar, C::i64, C::f32, C::i64}, 5},
    // AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND2(Half, BFloat16): [start, end, steps, step, halfway]
    RangeFactory{"at::native::linspace_cuda_out", 2, kFloatingComplexAndHalfBFloat16,
                 {C::scalar, C::scalar, C::i64, C::scalar, C::i64}, 5},
    // integral: [scalar_start, scalar_end, float scalar_base, steps, float step, halfway]
    RangeFactory{"at::native::logspace_cuda_out", 1, kIntegral, {C::scalar, C::scalar, C::f32, C::i64, C::f32, C::i64}, 6},
    // floating and complex: [start, end, base, steps, step, halfway], all but steps/halfway scalar_t
    RangeFactory{"at::native::logspace_cuda_out", 2, kFloatingComplexAndHalfBFloat16,
                 {C::scalar, C::scalar, C::scalar, C::i64, C::scalar, C::i64}, 6},
};

// sizeof(acc_type<T, /*is_cuda=*/true>) (ATen/AccumulateType.h): int64_t for the integer
// types, float for Half and BFloat16, T for float and double; 0 for the rest.
uint32_t acc_size(const ScalarInfo& s) {
  if (s.st <= 4 || s.st == 7) return 8;
  return s.st == 5 || s.st == 6 || s.st == 15 ? 4 : 0;
}

// The closure's size and alignment: the captures at their natural alignment, then the 8 bytes
// nvcc's extended-lambda wrapper appends (the table's sizes 16 to 96 all agree). False when a
// capture's type is not known.
bool closure_layout(const RangeFactory& f, const ScalarInfo& s, uint32_t& size, uint32_t& align) {
  uint32_t end = 0;
  align = 8;
  for (uint32_t i = 0; i < f.capture_count; ++i) {
    uint32_t bytes = 0, a = 0;
    switch (f.captures[i]) {
      case Capture::scalar: bytes = s.size, a = s.align; break;
      case Capture::acc: bytes = a = acc_size(s); break;
      case Capture::i64: bytes = a = 8; break;
      case Capture::f32: bytes = a = 4; break;
    }
    if (!bytes) return false;
    end = align_to(end, a) + bytes;
    align = std::max(align, a);
  }
  size = align_to(align_to(end, 8) + 8, align);
  return true;
}

// "<function>(<params>)::{lambda()#s}::operator()() const::{lambda()#k}::operator()()
// const::{lambda(long)#1}": the function, s and k. False for any other shape.
bool parse_functor(std::string_view functor, std::string_view& function, uint32_t& s, uint32_t& k) {
  const std::size_t open = functor.find('(');
  const std::size_t close = functor.find(')', open);  // the parameters hold no parentheses
  if (open == std::string_view::npos || close == std::string_view::npos) return false;
  function = functor.substr(0, open);
  std::string_view rest = functor.substr(close + 1), params;
  uint32_t number = 0;
  if (rest.substr(0, 2) != "::") return false;
  rest.remove_prefix(2);
  auto step = [&]() {
    if (rest.substr(0, kLambdaStep.size()) != kLambdaStep) return false;
    rest.remove_prefix(kLambdaStep.size());
    return true;
  };
  if (!take_lambda(rest, params, s) || !params.empty() || !step()) return false;
  if (!take_lambda(rest, params, k) || !params.empty() || !step()) return false;
  return take_lambda(rest, params, number) && params == "long" && number == 1 && rest.empty();
}

const RangeFactory* find_factory(std::string_view function, uint32_t dispatch) {
  for (const RangeFactory& f : kRangeFactories)
    if (f.function == function && f.dispatch == dispatch) return &f;
  return nullptr;
}

}  // namespace

// elementwise_kernel_with_index<index_t, func_t>: params 0:sizeof(index_t), the closure at its
// alignment, the data pointer 8-aligned after it.
FamilyMatch match_with_index(std::string_view dem, const Layout& l) {
  constexpr AtenFamily kFamily = AtenFamily::with_index;
  const auto args = template_args(dem);
  const uint32_t index = args.size() != 2 ? 0 : args[0] == "int" ? 4 : args[0] == "long" ? 8 : 0;
  if (!index) return mismatch(kFamily, "layout mismatch");
  std::string_view function;
  uint32_t dispatch = 0, case_no = 0;
  if (!parse_functor(args[1], function, dispatch, case_no)) return mismatch(kFamily, "lambda not decoded");
  const RangeFactory* f = find_factory(function, dispatch);
  if (!f) return mismatch(kFamily, "function not in the range factory table");
  const ScalarInfo* s = case_no >= 1 && case_no <= f->cases.size() ? scalar_info(f->cases[case_no - 1]) : nullptr;
  uint32_t size = 0, align = 0;
  if (!s || !closure_layout(*f, *s, size, align)) return mismatch(kFamily, "dispatch case unknown");
  const uint32_t at = align_to(index, align);
  if (l != Layout{{0, index}, {at, size}, {align_to(at + size, 8), 8}})
    return mismatch(kFamily, "closure size does not fit the dispatch case's type");
  FamilyMatch m = matched(kFamily, l);
  m.out_st = s->st;
  m.out = s->dtype;
  m.out_type = s->dtype == DType::none ? OutType::not_float : OutType::static_dtype;
  m.index_bytes = static_cast<uint8_t>(index);
  return m;
}

// data[0, N) of the case's type. gpu_kernel_with_index takes the int64_t kernel only for
// N > INT_MAX, so a smaller N there means the bytes are not what they seem.
Decoded decode_with_index(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const int64_t n = m.index_bytes == 8 ? load<int64_t>(v.params[0], 0) : load<int32_t>(v.params[0], 0);
  if (n < 0) return Decoded::mismatch("negative N");
  if (m.index_bytes == 8 && n <= INT_MAX) return Decoded::mismatch("int64 index with an N that fits int");
  const ScalarInfo* s = scalar_info(m.out_st);
  if (!s) return Decoded::mismatch("layout mismatch");
  const uint64_t ptr = load<uint64_t>(v.params[2], 0);
  Decoded d;
  const auto elements = static_cast<uint64_t>(n);
  if (ptr && elements) d.add_write(scalar_write(ptr, elements, (elements - 1) * s->size, *s, 2));
  return d;
}

}  // namespace nanscope::decode::aten

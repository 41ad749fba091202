// Shared pieces of the ATen decoders (not part of the contract): name parsing used at match
// time, and byte readers / ATen struct arithmetic used per launch.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "decode/aten.hpp"

namespace nanscope::decode::aten {

// ---- match time (names) ----------------------------------------------------------------------

inline FamilyMatch mismatch(AtenFamily f, std::string_view why) {
  FamilyMatch m;
  m.kind = MatchKind::layout_mismatch;
  m.family = f;
  m.reason = why;
  return m;
}

inline FamilyMatch matched(AtenFamily f, const Layout& l) {
  FamilyMatch m;
  m.kind = MatchKind::matched;
  m.family = f;
  m.param_count = static_cast<uint32_t>(l.size());
  return m;
}

// The demangled name's qualified function name without "void " and without any
// "(anonymous namespace)::" component, e.g. "at::native::unrolled_elementwise_kernel".
std::string qualified_name(std::string_view demangled);
// The top-level template arguments of the first template argument list after `from`.
std::vector<std::string_view> template_args(std::string_view text, std::size_t from = 0);
// The element type a type name stands for: static_dtype (with `dt`), not_float, or (unknown
// text) runtime is never returned; unknown gives false.
bool classify_type(std::string_view type, OutType& cls, DType& dt);
// The result type of a TensorIterator functor as written in the name (named functors carry it;
// lambdas carry only their parameter types, see aten_names.cpp). False: not knowable.
bool functor_result(std::string_view functor, OutType& cls, DType& dt);
// An input's element type from its type name: floating (dt set), integer or bool (skip: it
// holds no NaN, so it is no read worth reporting), or anything else (dt none, still a read).
void input_type(std::string_view type, DType& dt, bool& skip);
// The types of a TensorIterator functor's tensor inputs, in order, into m.in / in_skip /
// in_count / in_known: named functors by which template arguments their operator() takes
// (Loops.cuh, the ufunc functors), lambdas by their parameter types. False: not knowable.
bool functor_inputs(std::string_view functor, FamilyMatch& m);
// The type of the one value a functor writes when its first member holds it (FillFunctor<T>,
// masked_fill_kernel's lambda capturing `value_`); none for any other functor (aten_intent.cpp).
DType constant_functor(std::string_view functor);
// kIntend* bits for a value of type `dt` at `p`: +inf, -inf, or 0 (finite, NaN, no such type).
uint8_t infinity_of(const char* p, DType dt);
// The number of parameters of the last "{lambda(...)#n}" in `functor`; -1 when there is none.
int lambda_arity(std::string_view functor);
// Removes "{lambda(<params>)#<n>}" from the front of `s`: `params` gets the parameter text,
// `number` n. False (s unchanged) when s does not start with one.
bool take_lambda(std::string_view& s, std::string_view& params, uint32_t& number);
// What joins a lambda to one defined inside it in a demangled name.
inline constexpr std::string_view kLambdaStep = "::operator()() const::";
// N of "std::array<char*, Nul>" in `text`; 0 when absent.
int char_array_size(std::string_view text);

// ---- per launch (bytes) ----------------------------------------------------------------------

template <class T>
inline T load(const char* p, uint32_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof(T));
  return v;
}

// OffsetCalculator<NARGS, uint32_t> (OffsetCalculator.cuh): int dims; IntDivider<uint32_t>
// sizes_[25] of {divisor, m1, shift}; uint32_t strides_[25][NARGS].
inline constexpr uint32_t kMaxDims = 25;
inline constexpr uint32_t kDividerBytes = 12;
inline constexpr uint32_t kStridesAt = 4 + kMaxDims * kDividerBytes;  // 304
constexpr uint32_t offset_calc_size(uint32_t nargs) { return kStridesAt + kMaxDims * 4 * nargs; }
constexpr uint32_t align_to(uint32_t x, uint32_t a) { return (x + a - 1) / a * a; }

// The non-contiguous elementwise closures (CUDALoops.cuh), captures in order of first use:
// OffsetCalculator<NARGS> at 0, std::array<char*, NARGS> data after it 8-aligned, the functor;
// gpu_kernel_impl's dynamic-casting lambda then std::array<ScalarType, NARGS> dtypes. nvcc's
// extended-lambda wrapper appends 8 bytes. With a captureless (one-byte) functor the dtypes
// follow it directly: 536 bytes for NARGS 2, as the table's direct_copy rows have.
constexpr uint32_t legacy_data_at(uint32_t nargs) { return align_to(offset_calc_size(nargs), 8); }
constexpr uint32_t cast_dtypes_at(uint32_t nargs) { return legacy_data_at(nargs) + 8 * nargs + 1; }
constexpr uint32_t cast_closure_size(uint32_t nargs) { return align_to(cast_dtypes_at(nargs) + nargs, 8) + 8; }
static_assert(cast_closure_size(2) == 536 && cast_closure_size(3) == 648);

struct CalcExtent {
  uint64_t numel = 0;     // product of all sizes (the iteration count)
  uint64_t distinct = 0;  // product of sizes over dims where arg `k` moves (stride != 0)
  uint64_t max_off = 0;   // largest offset of arg `k`, in the calculator's stride unit
};
// False when the bytes are not a valid calculator (dims out of range, a divisor that is 0 or
// whose magic numbers do not match it: IntDivider's constructor fixes m1 and shift).
bool offset_calc_extent(const char* oc, uint32_t nargs, uint32_t k, CalcExtent& out);

// The dims along which one tensor moves (size > 1, stride != 0), for dense_elements. Arrays
// are left uninitialised: only [0, n) is read.
struct DimList {
  uint32_t n = 0;
  bool empty = false;     // a size is 0: nothing is read
  bool overflow = false;  // more dims than the list holds
  uint64_t size[2 * kMaxDims];
  uint64_t stride[2 * kMaxDims];
  void add(uint64_t sz, uint64_t st) {
    if (sz == 0) empty = true;
    if (sz <= 1 || st == 0) return;
    if (n == 2 * kMaxDims) {
      overflow = true;
      return;
    }
    size[n] = sz;
    stride[n++] = st;
  }
};
// Adds arg `k`'s dims of a calculator that offset_calc_extent accepted.
void add_calc_dims(const char* oc, uint32_t nargs, uint32_t k, DimList& d);
// The elements a tensor touches when they pack densely from its base (its moving dims, ordered
// by stride, each continue the previous one, the smallest stride being `unit`): then the launch
// reads exactly [ptr, ptr + elements * itemsize). 0 (unknown) for gaps, overlap or no dims info.
// A broadcast tensor (stride 0 in some dims) counts only the dims where it moves. Sorts `d`.
uint64_t dense_elements(DimList& d, uint64_t unit);
// The same for a 4-D tensor whose innermost dim is contiguous (attention's [b, s, h, d]):
// sizes n0..n3, element strides s0..s2 of the outer three; a negative stride gives 0.
uint64_t dense_4d(uint64_t n0, int64_t s0, uint64_t n1, int64_t s1, uint64_t n2, int64_t s2, uint64_t n3);

// A dense or strided write of `numel` elements whose last element starts `last_byte` past ptr.
Write make_write(uint64_t ptr, uint64_t numel, uint64_t last_byte, DType dt, uint32_t esize,
                 uint32_t arg);

// One c10::ScalarType (aten_scalar.cpp): its value, its C++ name as demangled, size and
// alignment, its DType (none: integer, bool, complex, quantized), and whether it holds no NaN.
struct ScalarInfo {
  uint8_t st;
  std::string_view cpp;
  uint8_t size, align;
  DType dtype;
  bool no_nan;  // integer, bool or quantized
};
inline constexpr uint8_t kNoScalarType = 0xff;
const ScalarInfo* scalar_info(uint8_t st);            // null: a value the decoders do not know
const ScalarInfo* scalar_info(std::string_view cpp);  // null: not a scalar type name
// make_write with the type's dtype and size; a NaN-free type's write is marked no_nan.
Write scalar_write(uint64_t ptr, uint64_t numel, uint64_t last_byte, const ScalarInfo& s, uint32_t arg);
inline Write dense_write(uint64_t ptr, uint64_t numel, DType dt, uint32_t arg) {
  const uint32_t es = static_cast<uint32_t>(dtype_size(dt));
  return make_write(ptr, numel, numel ? (numel - 1) * es : 0, dt, es, arg);
}

// Matchers that live beside their decoders (the rest are in aten_table.cpp).
FamilyMatch match_with_index(std::string_view demangled, const Layout&);  // aten_range.cpp

// Per-family decoders (aten_elementwise.cpp, aten_reduce.cpp, aten_misc.cpp, aten_range.cpp).
using DecodeFn = Decoded (*)(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_vectorized(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_unrolled(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_multi_output(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_legacy(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_legacy_cast(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_with_index(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_reduce(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_layer_norm_vec(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_rowwise_moments(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_layer_norm_fwd(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_softmax_warp(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_softmax_block(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_index_select(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_gather(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_cat(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_index_copy(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_grouped_gemm_setup(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_flash_fwd(const FamilyMatch&, const LaunchView&, const AddressQuery&);
Decoded decode_mem_eff(const FamilyMatch&, const LaunchView&, const AddressQuery&);

}  // namespace nanscope::decode::aten

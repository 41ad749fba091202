// Kernel signature analysis: from a CUDA kernel's mangled symbol name (as
// CUpti_CallbackData::symbolName gives it) decide which parameters are
// floating-point output buffers (non-const pointers to a floating type) and
// which are inputs (pointers to const floating type). Everything else is
// `other`. No function here throws; malformed input yields has_params=false or
// parameters with role `other`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope {

enum class DType : uint8_t { f64 = 0, f32 = 1, f16 = 2, bf16 = 3, f8e4m3 = 4, f8e5m2 = 5, none = 255 };

const char* dtype_name(DType);  // "f64","f32","f16","bf16","f8e4m3","f8e5m2","none"
std::size_t dtype_size(DType);  // bytes of one scalar element (8,4,2,2,1,1; 0 for none)

enum class ParamRole : uint8_t { output, input, other };

struct ParamSig {
  std::string type;  // demangled type text as written, e.g. "float const*"
  ParamRole role = ParamRole::other;
  DType dtype = DType::none;  // scalar element type for float pointers (float4* -> f32, __half2* -> f16)
  uint32_t vector_width = 1;  // 4 for float4, 2 for __half2/float2/__nv_bfloat162, 1 otherwise
  bool read_only = false;     // a pointer to const of any type (`void const*`, `float const*`): only read
};

struct KernelSignature {
  std::string demangled;    // full demangled name; for C names the name itself
  std::string name;         // short name without params/return type, e.g. "foo<float>"
  bool has_params = false;  // false for extern "C" / unmangled names (Triton): nothing known
  std::vector<ParamSig> params;
  std::size_t output_count() const;
};

// abi::__cxa_demangle; returns the input unchanged if not mangled or invalid.
std::string demangle(std::string_view mangled);
// demangle + parse. Names without the `_Z` prefix, or that fail to demangle,
// give has_params=false.
KernelSignature parse_kernel_signature(std::string_view mangled);
// Parse an already demangled name such as "void foo<float>(float*, float const*, int)".
KernelSignature parse_demangled(std::string_view demangled);
// Whether a parameter that is neither a typed input nor output could carry pointers nanscope
// does not see (structs, arrays, void*, pointers to integers are fine: they hold no NaN).
// Builtin scalars and pointers to non-floating types cannot.
bool may_hide_pointers(std::string_view type);
// The element type of a scalar type name as written in a demangled name ("c10::BFloat16",
// "float", "cutlass::half_t"); DType::none for anything that is not a scalar floating type
// (vector types such as float4 included: a template argument names one scalar).
DType scalar_dtype(std::string_view type);

}  // namespace nanscope

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

#include "scan_abi.h"

namespace nanscope {

// Element types, from the one list in scan_abi.h: a DType's value is its nanscope_scan_dtype
// (and nanscope_dtype_t) code, so it crosses the C API and the device ABI by a cast.
#define NANSCOPE_DTYPE_ENUMERATOR_(suffix, name, code, bytes) name = code,
enum class DType : uint8_t { NANSCOPE_SCAN_DTYPES(NANSCOPE_DTYPE_ENUMERATOR_) none = 255 };
#undef NANSCOPE_DTYPE_ENUMERATOR_

const char* dtype_name(DType);  // the log's dtype string ("f64", "bf16", ...); "none"
std::size_t dtype_size(DType);  // bytes of one scalar element; 0 for none

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

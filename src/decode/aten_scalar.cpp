// c10::ScalarType as the ATen decoders meet it: a runtime byte (StoreWithCast, LoadWithCast, the
// dynamic-casting lambda's dtypes) or a C++ type name in a kernel's demangled name.
#include <array>

#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

// torch/headeronly/core/ScalarType.h (torch 2.11): the value, then the type as the demangler
// spells it (int8_t is "signed char", int64_t "long"). c10::complex<T> is alignas(2 sizeof(T)).
// Left out: the sub-byte, bits and dummy types, and the floating formats no DType covers
// (Float8_e5m2fnuz 25, Float8_e4m3fnuz 26, Float8_e8m0fnu 44): they stay unknown bytes.
constexpr std::array<ScalarInfo, 21> kScalarTypes{
    ScalarInfo{0, "unsigned char", 1, 1, DType::none, true},
    ScalarInfo{1, "signed char", 1, 1, DType::none, true},
    ScalarInfo{2, "short", 2, 2, DType::none, true},
    ScalarInfo{3, "int", 4, 4, DType::none, true},
    ScalarInfo{4, "long", 8, 8, DType::none, true},
    ScalarInfo{5, "c10::Half", 2, 2, DType::f16, false},
    ScalarInfo{6, "float", 4, 4, DType::f32, false},
    ScalarInfo{7, "double", 8, 8, DType::f64, false},
    ScalarInfo{8, "c10::complex<c10::Half>", 4, 4, DType::none, false},
    ScalarInfo{9, "c10::complex<float>", 8, 8, DType::none, false},
    ScalarInfo{10, "c10::complex<double>", 16, 16, DType::none, false},
    ScalarInfo{11, "bool", 1, 1, DType::none, true},
    ScalarInfo{12, "c10::qint8", 1, 1, DType::none, true},
    ScalarInfo{13, "c10::quint8", 1, 1, DType::none, true},
    ScalarInfo{14, "c10::qint32", 4, 4, DType::none, true},
    ScalarInfo{15, "c10::BFloat16", 2, 2, DType::bf16, false},
    ScalarInfo{23, "c10::Float8_e5m2", 1, 1, DType::f8e5m2, false},
    ScalarInfo{24, "c10::Float8_e4m3fn", 1, 1, DType::f8e4m3, false},
    ScalarInfo{27, "unsigned short", 2, 2, DType::none, true},
    ScalarInfo{28, "unsigned int", 4, 4, DType::none, true},
    ScalarInfo{29, "unsigned long", 8, 8, DType::none, true},
};

}  // namespace

const ScalarInfo* scalar_info(uint8_t st) {
  for (const ScalarInfo& s : kScalarTypes)
    if (s.st == st) return &s;
  return nullptr;
}

const ScalarInfo* scalar_info(std::string_view cpp) {
  for (const ScalarInfo& s : kScalarTypes)
    if (s.cpp == cpp) return &s;
  return nullptr;
}

Write scalar_write(uint64_t ptr, uint64_t numel, uint64_t last_byte, const ScalarInfo& s, uint32_t arg) {
  Write w = make_write(ptr, numel, last_byte, s.dtype, s.size, arg);
  w.no_nan = s.no_nan;
  return w;
}

}  // namespace nanscope::decode::aten

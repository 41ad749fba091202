// Tests for may_hide_pointers (src/signature.cpp): which parameter types, neither a typed input
// nor a typed output, could carry pointers nanscope does not see. The type texts are written as
// the demangler prints them.
#include <gtest/gtest.h>

#include <string_view>

#include "signature.hpp"

namespace nanscope {
namespace {

TEST(HiddenPointers, BuiltinScalarsCannot) {
  for (std::string_view t : {"int", "unsigned int", "float", "long", "bool", "double", "char",
                             "unsigned long", "long long", "unsigned long long", "short",
                             "unsigned char", "signed char", "__half", "__nv_bfloat16", "c10::Half",
                             "c10::BFloat16", "int const", "size_t"})
    EXPECT_FALSE(may_hide_pointers(t)) << t;
}

TEST(HiddenPointers, PointersToScalarsCannot) {
  // Integers and bools cannot be non-finite; pointers to floating types are typed elsewhere.
  for (std::string_view t : {"int const*", "int*", "unsigned char const*", "long*", "bool const*",
                             "int* __restrict__", "int const* __restrict__", "float const&",
                             "unsigned int volatile*"})
    EXPECT_FALSE(may_hide_pointers(t)) << t;
}

TEST(HiddenPointers, OpaqueAndAggregateTypesMay) {
  for (std::string_view t : {"void*", "void const*", "float**", "int**", "float const* const*",
                             "cublasLt::cublasSplitKParams<float>", "std::array<char*, 2ul>",
                             "at::native::FillFunctor<float>",
                             "at::native::(anonymous namespace)::Params",
                             "at::detail::Array<char*, 3>", "Params const&", "Params*"})
    EXPECT_TRUE(may_hide_pointers(t)) << t;
}

}  // namespace
}  // namespace nanscope

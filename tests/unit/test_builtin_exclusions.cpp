// Tests for src/builtin_exclusions.cpp: XLA's autotuner kernels (redzone checks, buffer
// comparisons) in every spelling XLA has used, demangled and as C names, are excluded with a
// reason; ordinary kernels, including ones whose names merely mention a comparison or a redzone,
// are not. Also the name cutting the table matches against.
#include <gtest/gtest.h>

#include <string>

#include "builtin_exclusions.hpp"
#include "signature.hpp"

namespace nanscope {
namespace {

// As the kernel table sees it: demangled when the name is mangled, else the name itself.
std::string displayed(const std::string& name) {
  const KernelSignature sig = parse_kernel_signature(name);
  return sig.demangled.empty() ? name : sig.demangled;
}

TEST(KernelNameParts, CutsScopeAndOwnNameOutOfADemangledName) {
  const KernelNameParts p = kernel_name_parts(
      "void stream_executor::gpu::(anonymous namespace)::xla_fp_comparison<float>(float*, float*, float, unsigned "
      "long long, int*)");
  EXPECT_EQ(p.scope, "stream_executor::gpu::(anonymous namespace)");
  EXPECT_EQ(p.name, "xla_fp_comparison");
}

TEST(KernelNameParts, AFreeFunctionAndACNameHaveNoScope) {
  EXPECT_EQ(kernel_name_parts("redzone_checker(unsigned char*, unsigned char, unsigned long long, unsigned int*)").name,
            "redzone_checker");
  EXPECT_EQ(kernel_name_parts("void redzone_checker(unsigned char*)").name, "redzone_checker");
  EXPECT_EQ(kernel_name_parts("__xla_fp32_comparison").name, "__xla_fp32_comparison");
  EXPECT_TRUE(kernel_name_parts("__xla_fp32_comparison").scope.empty());
}

TEST(KernelNameParts, TemplatesInTheScopeAndTheReturnTypeAreNotTheName) {
  const KernelNameParts p =
      kernel_name_parts("std::enable_if<true, void>::type ns::Outer<int, (a::b)1>::run<float, 4>(float*, int)");
  EXPECT_EQ(p.scope, "ns::Outer<int, (a::b)1>");
  EXPECT_EQ(p.name, "run");
}

TEST(KernelNameParts, UnbalancedBracketsGiveNoName) {
  EXPECT_TRUE(kernel_name_parts("void f<int(float*)").name.empty());
  EXPECT_FALSE(builtin_exclusion("void xla_fp_comparison<int(float*)"));
}

TEST(BuiltinExclusion, TheComparisonKernelOfTheMeasuredJaxRun) {
  const auto why = builtin_exclusion(
      "void stream_executor::gpu::(anonymous namespace)::xla_fp_comparison<float>(float*, float*, float, unsigned "
      "long long, int*)");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "XLA autotuner kernel (buffer comparison)");
}

TEST(BuiltinExclusion, MangledComparisonKernelsOfEveryType) {
  // stream_executor::gpu::xla_fp_comparison<T> / xla_int_comparison<T>, as nvcc mangles them.
  for (const char* mangled : {"_ZN15stream_executor3gpu12_GLOBAL__N_117xla_fp_comparisonIfEEvPT_S4_fyPi",
                              "_ZN15stream_executor3gpu17xla_fp_comparisonIdEEvPT_S3_fmPi",
                              "_ZN15stream_executor3gpu18xla_int_comparisonIaEEvPT_S3_fmPi"}) {
    const std::string name = displayed(mangled);
    ASSERT_NE(name, mangled) << "did not demangle";
    const auto why = builtin_exclusion(name);
    ASSERT_TRUE(why) << name;
    EXPECT_EQ(*why, "XLA autotuner kernel (buffer comparison)");
  }
}

TEST(BuiltinExclusion, OlderComparisonSpellings) {
  // xla::gpu::buffer_comparator's kernels, and the PTX entries (C names) before them.
  for (const char* name : {"xla::gpu::buffer_comparator::(anonymous namespace)::xla_fp16_comparison(__half*, "
                           "__half*, float, unsigned long, int*)",
                           "xla::gpu::buffer_comparator::(anonymous namespace)::xla_fp8_e4m3fn_comparison("
                           "unsigned char*, unsigned char*, float, unsigned long, int*)",
                           "__xla_fp32_comparison", "__xla_bf16_comparison", "__xla_int8_comparison",
                           "__xla_fp8_e5m2_comparison"})
    EXPECT_EQ(builtin_exclusion(name).value_or(""), "XLA autotuner kernel (buffer comparison)") << name;
}

TEST(BuiltinExclusion, RedzoneCheckers) {
  for (const std::string& name :
       {std::string("redzone_checker(unsigned char*, unsigned char, unsigned long long, unsigned int*)"),
        displayed("_Z15redzone_checkerPhhyPj"),
        std::string("redzone_checker"),  // the PTX entry of older XLA
        std::string("(anonymous namespace)::redzone_checker_kernel(unsigned char*, unsigned char, unsigned long, "
                    "unsigned int*)"),
        std::string("void stream_executor::gpu::RedzoneCheckKernel_redzone(unsigned char*)"),
        // jaxlib 0.11.2 on the H200 (session 23): it was named a candidate writer of the program's NaN
        std::string("stream_executor::gpu::RedzoneAllocatorKernelImpl(unsigned char*, unsigned char, unsigned long, "
                    "unsigned int*)")})
    EXPECT_EQ(builtin_exclusion(name).value_or(""), "XLA autotuner kernel (redzone check)") << name;
  EXPECT_EQ(displayed("_Z15redzone_checkerPhhyPj"),
            "redzone_checker(unsigned char*, unsigned char, unsigned long long, unsigned int*)");
}

TEST(BuiltinExclusion, TheAutotunersBufferFill) {
  EXPECT_EQ(builtin_exclusion("stream_executor::gpu::RepeatBufferKernelImpl(char*, long, long)").value_or(""),
            "XLA autotuner kernel (buffer fill)");
  EXPECT_FALSE(builtin_exclusion("void my::RepeatBufferKernelImpl(char*, long, long)"));  // not stream_executor's
}

TEST(BuiltinExclusion, TheAutotunersTimerDelay) {
  // jaxlib 0.11.2 on the H200 (session 24), as the driver names it.
  EXPECT_EQ(builtin_exclusion("stream_executor::gpu::(anonymous namespace)::DelayKernel(stream_executor::"
                              "GpuSemaphoreState volatile*, stream_executor::GpuSemaphoreState)")
                .value_or(""),
            "XLA autotuner kernel (GPU timer delay: waits on a host semaphore, no numbers)");
  EXPECT_FALSE(builtin_exclusion("void my::DelayKernel(float*, int)"));  // not stream_executor's
  EXPECT_FALSE(builtin_exclusion("void DelayKernel(float*)"));
}

TEST(BuiltinExclusion, OrdinaryKernelsAreNotExcluded) {
  for (const char* name : {
           "void at::native::vectorized_elementwise_kernel<4, at::native::CompareEqFunctor<float>, "
           "std::array<char*, 3ul> >(int, at::native::CompareEqFunctor<float>, std::array<char*, 3ul>)",
           "void at::native::(anonymous namespace)::compare_scalar_kernel<float>(float*, float const*, float)",
           "void my_redzone_checker(float*, int)",      // a user's kernel: not XLA's name
           "void redzone_checker_v2(float*, int)",
           "void fused::xla_comparison_helper(float*)",  // not "xla_..._comparison"
           "void xla_comparison(float*)",                // nothing between prefix and suffix
           "void ns::redzone_checker_test::run(float*)",  // "redzone_checker" as a scope, not the name
           "void buffer_comparator_like(float*)",
           "loop_add_fusion", "triton_gemm_dot", "nvjet_sm90_tst_128x128", "void my::xla_fp_comparisons(float*)"}) {
    EXPECT_FALSE(builtin_exclusion(name)) << name;
  }
}

// The kernels the jaxlib 0.11.2 run launched while autotuning (session 23, 24): each one's reason
// marks its thread as autotuning (KernelTable::autotuning_on_this_thread); no other reason does.
TEST(BuiltinExclusion, EveryAutotunerReasonMarksItsThreadAutotuning) {
  for (const char* name : {"stream_executor::gpu::RepeatBufferKernelImpl(char*, long, long)",
                           "stream_executor::gpu::RedzoneAllocatorKernelImpl(unsigned char*, unsigned char, unsigned "
                           "long, unsigned int*)",
                           "void stream_executor::gpu::xla_fp_comparison<float>(float*, float*, float, unsigned long, "
                           "int*)",
                           "stream_executor::gpu::(anonymous namespace)::DelayKernel(stream_executor::GpuSemaphoreState "
                           "volatile*, stream_executor::GpuSemaphoreState)"}) {
    const auto why = builtin_exclusion(name);
    ASSERT_TRUE(why) << name;
    EXPECT_TRUE(is_xla_autotuner(*why)) << *why;
  }
  EXPECT_FALSE(is_xla_autotuner("excluded by NANSCOPE_KERNEL_FILTER"));
  EXPECT_FALSE(is_xla_autotuner(""));
}

}  // namespace
}  // namespace nanscope

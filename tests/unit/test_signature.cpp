// Tests for src/signature.cpp. The mangled names below were produced by nvcc
// 13.0 (-arch=sm_90, read from the cubin symbol table) from small kernels that
// mimic the real ones (PyTorch, vLLM, flash-attention), not written by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>

#include "signature.hpp"

namespace nanscope {
namespace {

// One letter per parameter: 'o' output, 'i' input, '-' other.
std::string roles(const KernelSignature& s) {
  std::string r;
  for (const auto& p : s.params)
    r.push_back(p.role == ParamRole::output ? 'o' : p.role == ParamRole::input ? 'i' : '-');
  return r;
}

// One word per parameter: the dtype name with "xN" for vectors, "-" for none.
std::string elems(const KernelSignature& s) {
  std::string r;
  for (const auto& p : s.params) {
    if (!r.empty()) r += ' ';
    r += p.dtype == DType::none ? "-" : dtype_name(p.dtype);
    if (p.vector_width != 1) {
      r += 'x';
      r += std::to_string(p.vector_width);
    }
  }
  return r;
}

// Parameter types joined with " | ".
std::string types(const KernelSignature& s) {
  std::string r;
  for (const auto& p : s.params) {
    if (!r.empty()) r += " | ";
    r += p.type;
  }
  return r;
}

// One expected parse. `in` is mangled when it starts with "_Z", else already
// demangled. A null field is not checked.
struct Case {
  const char* in;
  const char* roles;
  const char* elems = nullptr;
  const char* name = nullptr;
  const char* demangled = nullptr;
  const char* types = nullptr;
};

KernelSignature parse(std::string_view in) {
  return in.substr(0, 2) == "_Z" ? parse_kernel_signature(in) : parse_demangled(in);
}

void check(std::initializer_list<Case> cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    const KernelSignature s = parse(c.in);
    EXPECT_TRUE(s.has_params);
    EXPECT_EQ(roles(s), c.roles);
    if (c.elems) {
      EXPECT_EQ(elems(s), c.elems);
    }
    if (c.name) {
      EXPECT_EQ(s.name, c.name);
    }
    if (c.demangled) {
      EXPECT_EQ(s.demangled, c.demangled);
    }
    if (c.types) {
      EXPECT_EQ(types(s), c.types);
    }
    std::size_t outputs = 0;
    for (const char* r = c.roles; *r; ++r) outputs += *r == 'o';
    EXPECT_EQ(s.output_count(), outputs);
  }
}

TEST(Signature, DtypeNamesAndSizes) {
  EXPECT_STREQ(dtype_name(DType::f64), "f64");
  EXPECT_STREQ(dtype_name(DType::f32), "f32");
  EXPECT_STREQ(dtype_name(DType::f16), "f16");
  EXPECT_STREQ(dtype_name(DType::bf16), "bf16");
  EXPECT_STREQ(dtype_name(DType::f8e4m3), "f8e4m3");
  EXPECT_STREQ(dtype_name(DType::f8e5m2), "f8e5m2");
  EXPECT_STREQ(dtype_name(DType::none), "none");
  EXPECT_STREQ(dtype_name(static_cast<DType>(77)), "none");
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f8e4m3), 1u);
  EXPECT_EQ(dtype_size(DType::f8e5m2), 1u);
  EXPECT_EQ(dtype_size(DType::none), 0u);
}

TEST(Signature, Demangle) {
  EXPECT_EQ(demangle("_Z6kernelPfPKfi"), "kernel(float*, float const*, int)");
  EXPECT_EQ(demangle("c_kernel"), "c_kernel");
  EXPECT_EQ(demangle("_Z"), "_Z");
  EXPECT_EQ(demangle("_Zgarbage!!"), "_Zgarbage!!");
  EXPECT_EQ(demangle(""), "");
}

TEST(Signature, SimpleKernels) {
  check({
      {.in = "_Z6kernelPfPKfi",
       .roles = "oi-",
       .elems = "f32 f32 -",
       .name = "kernel",
       .demangled = "kernel(float*, float const*, int)",
       .types = "float* | float const* | int"},
      // A double by value is not a buffer: no dtype.
      {.in = "_Z8k_doublePdPKddl",
       .roles = "oi--",
       .elems = "f64 f64 - -",
       .demangled = "k_double(double*, double const*, double, long)"},
  });
}

TEST(Signature, Templates) {
  check({
      {.in = "_Z2tkIfLi4EEvPT_PKS0_i",
       .roles = "oi-",
       .name = "tk<float, 4>",
       .demangled = "void tk<float, 4>(float*, float const*, int)"},
      {.in = "_Z2tkIdLi2EEvPT_PKS0_i", .roles = "oi-", .elems = "f64 f64 -", .name = "tk<double, 2>"},
      // Wrap<float> by value is a struct: other, even though it holds a float*.
      {.in = "_Z8k_structIfEv4WrapIT_EPS1_",
       .roles = "-o",
       .name = "k_struct<float>",
       .demangled = "void k_struct<float>(Wrap<float>, float*)"},
      // Template argument printed as "Shape<2> >" with the demangler's space.
      {.in = "_Z6kshiftI5ShapeILi2EEEvPfT_", .roles = "o-", .name = "kshift<Shape<2> >"},
      // A template-dependent decltype parameter is other.
      {.in = "_Z3kdtIfEvPT_PDTpltlS0_ELi1EEPKS0_",
       .roles = "o-i",
       .name = "kdt<float>",
       .types = "float* | decltype (float{}+(1))* | float const*"},
  });
}

TEST(Signature, HalfAndBfloat16) {
  check({
      {.in = "_Z6k_halfP6__halfPKS_P7__half2PKS3_S_",
       .roles = "oioi-",
       .elems = "f16 f16 f16x2 f16x2 -",
       .demangled = "k_half(__half*, __half const*, __half2*, __half2 const*, __half)"},
      {.in = "_Z4k_bfP13__nv_bfloat16PKS_P14__nv_bfloat162S0_",
       .roles = "oioo",
       .elems = "bf16 bf16 bf16x2 bf16",
       .demangled = "k_bf(__nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat162*, __nv_bfloat16*)"},
      {.in = "_Z2tkI6__halfLi8EEvPT_PKS1_i", .roles = "oi-", .elems = "f16 f16 -", .name = "tk<__half, 8>"},
      {.in = "_Z2tkI13__nv_bfloat16Li8EEvPT_PKS1_i", .roles = "oi-", .elems = "bf16 bf16 -"},
      // Typedef spellings, as a hand-written demangled name may have them.
      {.in = "k(half*, nv_bfloat16 const*, half2*, nv_bfloat162*)",
       .roles = "oioo",
       .elems = "f16 bf16 f16x2 bf16x2"},
  });
}

TEST(Signature, Fp8) {
  check({
      // __nv_fp8_storage_t* is unsigned char*: other.
      {.in = "_Z5k_fp8P13__nv_fp8_e4m3PK13__nv_fp8_e5m2PhP15__nv_fp8x2_e4m3",
       .roles = "oi-o",
       .elems = "f8e4m3 f8e5m2 - f8e4m3x2",
       .demangled = "k_fp8(__nv_fp8_e4m3*, __nv_fp8_e5m2 const*, unsigned char*, __nv_fp8x2_e4m3*)"},
      {.in = "_Z4krefRfPKN3c1013Float8_e4m3fnEPS1_PNS0_15Float8_e5m2fnuzEPK13__nv_fp8_e4m3",
       .roles = "-io-i",
       .elems = "- f8e4m3 f8e4m3 - f8e4m3",
       .demangled = "kref(float&, c10::Float8_e4m3fn const*, c10::Float8_e4m3fn*, c10::Float8_e5m2fnuz*, "
                    "__nv_fp8_e4m3 const*)"},
      {.in = "_ZN4vllm23scaled_fp8_quant_kernelIN3c108BFloat16ENS1_13Float8_e4m3fnEEEvPT0_PKT_PKfl",
       .roles = "oii-",
       .elems = "f8e4m3 bf16 f32 -",
       .name = "vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>",
       .types = "c10::Float8_e4m3fn* | c10::BFloat16 const* | float const* | long"},
      {.in = "_ZN4vllm23scaled_fp8_quant_kernelIfN3c1011Float8_e5m2EEEvPT0_PKT_PKfl",
       .roles = "oii-",
       .elems = "f8e5m2 f32 f32 -"},
      // fnuz is a different encoding: not a known float type.
      {.in = "_ZN4vllm23scaled_fp8_quant_kernelIfN3c1015Float8_e4m3fnuzEEEvPT0_PKT_PKfl",
       .roles = "-ii-",
       .elems = "- f32 f32 -",
       .types = "c10::Float8_e4m3fnuz* | float const* | float const* | long"},
  });
}

TEST(Signature, VectorTypes) {
  check({
      {.in = "_Z4k_f4P6float4PKS_P6float2PK7double2",
       .roles = "oioi",
       .elems = "f32x4 f32x4 f32x2 f64x2",
       .demangled = "k_f4(float4*, float4 const*, float2*, double2 const*)"},
  });
}

TEST(Signature, NonBufferPointersAreOther) {
  check({
      {.in = "_Z4k_ppPPfPKPKfRfRS1_Ph",
       .roles = "-----",
       .elems = "- - - - -",
       .demangled = "k_pp(float**, float const* const*, float&, float const&, unsigned char*)"},
      {.in = "_Z7k_fnptrPFffEPFvPfPKfES1_",
       .roles = "--o",
       .demangled = "k_fnptr(float (*)(float), void (*)(float*, float const*), float*)",
       .types = "float (*)(float) | void (*)(float*, float const*) | float*"},
      {.in = "_Z5k_arrPA4_fPiPKimb",
       .roles = "-----",
       .demangled = "k_arr(float (*) [4], int*, int const*, unsigned long, bool)"},
      {.in =
           "k(float&&, long double*, c10::complex<float>*, float __vector(4)*, float AS1*, float* restrict*, "
           "decltype(nullptr)*, ...)",
       .roles = "--------"},
  });
}

TEST(Signature, Qualifiers) {
  check({
      {.in = "_Z10k_volatilePVfPVKdPf",
       .roles = "oio",
       .elems = "f32 f64 f32",
       .demangled = "k_volatile(float volatile*, double const volatile*, float*)"},
      // Top-level const/restrict/volatile do not change the role; source order works too.
      {.in = "k(float* const, float const* restrict, float* __restrict__, const float* __restrict, "
             "volatile __half* volatile, float const volatile restrict*, ::float*)",
       .roles = "oioioio"},
  });
}

TEST(Signature, PyTorchElementwise) {
  check({
      {.in = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_"
             "6detail5ArrayIPcLi2EEEEEviT0_T1_",
       .roles = "---",
       .types = "int | at::native::CUDAFunctor_add<float> | at::detail::Array<char*, 2>"},
      {.in = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c104HalfEEENS_"
             "6detail5ArrayIPcLi2EEEEEviT0_T1_",
       .roles = "---",
       .types = "int | at::native::CUDAFunctor_add<c10::Half> | at::detail::Array<char*, 2>"},
      {.in = "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_10launch_allEvEUlfE_NS_"
             "6detail5ArrayIPcLi2EEEEEviT0_T1_",
       .roles = "---",
       .name = "at::native::vectorized_elementwise_kernel<4, at::native::launch_all()::{lambda(float)#1}, "
               "at::detail::Array<char*, 2> >",
       .types = "int | at::native::launch_all()::{lambda(float)#1} | at::detail::Array<char*, 2>"},
      {.in = "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_10launch_allEvEUliE_EEviT1_",
       .roles = "--",
       .name = "at::native::elementwise_kernel<128, 4, at::native::launch_all()::{lambda(int)#1}>",
       .types = "int | at::native::launch_all()::{lambda(int)#1}"},
  });
}

TEST(Signature, PyTorchSoftmaxAnonymousNamespace) {
  check({
      {.in = "_ZN2at6native36_GLOBAL__N__d5293014_4_k_cu_686e64cf19cunn_SoftMaxForwardILi8EN3c104HalfEfS4_"
             "NS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
       .roles = "oi-",
       .elems = "f16 f16 -",
       .name = "at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half, float, c10::Half, "
               "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>",
       .types = "c10::Half* | c10::Half const* | int"},
      {.in = "_ZN2at6native36_GLOBAL__N__d5293014_4_k_cu_686e64cf19cunn_SoftMaxForwardILi8EfffNS1_"
             "22SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
       .roles = "oi-",
       .elems = "f32 f32 -"},
      {.in = "_ZN37_GLOBAL__N__9677d410_5_k2_cu_3fd680596anon_kEPfPKf",
       .roles = "oi",
       .name = "(anonymous namespace)::anon_k",
       .demangled = "(anonymous namespace)::anon_k(float*, float const*)"},
      // at:: aliases.
      {.in = "k(at::Half*, at::BFloat16 const*, c10::BFloat16*)", .roles = "oio", .elems = "f16 bf16 bf16"},
  });
}

TEST(Signature, VllmKernels) {
  check({
      {.in = "_ZN4vllm15rms_norm_kernelIN3c108BFloat16ELi8EEEvPT_PKS3_S6_fii",
       .roles = "oii---",
       .elems = "bf16 bf16 bf16 - - -",
       .name = "vllm::rms_norm_kernel<c10::BFloat16, 8>",
       .demangled = "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, "
                    "c10::BFloat16 const*, float, int, int)"},
      {.in = "_ZN4vllm15rms_norm_kernelIN3c104HalfELi8EEEvPT_PKS3_S6_fii",
       .roles = "oii---",
       .elems = "f16 f16 f16 - - -"},
      {.in =
           "_ZN4vllm25paged_attention_v1_kernelIN3c108BFloat16EhLi128ELi16ELi128ELNS_18Fp8KVCacheDataTypeE1E"
           "Lb0ELi0EEEvPT_PKS4_PKT0_SA_ifPKiSC_iPKfiiiSE_SE_iiiii",
       .roles = "oi-------i---ii-----",
       .elems = "bf16 bf16 - - - - - - - f32 - - - f32 f32 - - - - -",
       .name = "vllm::paged_attention_v1_kernel<c10::BFloat16, unsigned char, 128, 16, 128, "
               "(vllm::Fp8KVCacheDataType)1, false, 0>"},
      {.in = "_ZN4vllm25paged_attention_v1_kernelIffLi64ELi16ELi128ELNS_18Fp8KVCacheDataTypeE0ELb1ELi0EEEvPT_"
             "PKS2_PKT0_S8_ifPKiSA_iPKfiiiSC_SC_iiiii",
       .roles = "oiii-----i---ii-----"},
  });
}

TEST(Signature, StructParamsHaveNoOutputs) {
  check({
      {.in = "_ZN5flash16flash_fwd_kernelINS_23Flash_fwd_kernel_traitsILi128ELi64E6__halfEELb0ELb1EEEvNS_"
             "16Flash_fwd_paramsE",
       .roles = "-",
       .name = "flash::flash_fwd_kernel<flash::Flash_fwd_kernel_traits<128, 64, __half>, false, true>",
       .demangled = "void flash::flash_fwd_kernel<flash::Flash_fwd_kernel_traits<128, 64, __half>, false, "
                    "true>(flash::Flash_fwd_params)"},
  });
}

TEST(Signature, LambdasAndOperatorNames) {
  check({
      {.in = "_Z5applyIZ2govEUlfiE_EvT_Pf",
       .roles = "-o",
       .name = "apply<go()::{lambda(float, int)#1}>",
       .demangled = "void apply<go()::{lambda(float, int)#1}>(go()::{lambda(float, int)#1}, float*)",
       .types = "go()::{lambda(float, int)#1} | float*"},
      {.in = "_Z4kfunIZNK8LauncherclEiEUlfE_EvT_PfPKd",
       .roles = "-oi",
       .name = "kfun<Launcher::operator()(int) const::{lambda(float)#1}>"},
      {.in = "_Z3kopIXadL_Zlt1AS0_EEEvPfS0_",
       .roles = "o-",
       .name = "kop<&(operator<(A, A))>",
       .demangled = "void kop<&(operator<(A, A))>(float*, A)"},
      // Hand-written forms the real demangler may also produce.
      {.in = "void k<Foo<Bar<int>>, operator>>, operator,>(float*, Baz<(1)>(2)>, double const*)",
       .roles = "o-i",
       .name = "k<Foo<Bar<int>>, operator>>, operator,>",
       .types = "float* | Baz<(1)>(2)> | double const*"},
      {.in = "decltype (foo<int>()) bar<decltype(a->b)>(float*)",
       .roles = "o",
       .name = "bar<decltype(a->b)>"},
      {.in = "k(float*, int) [clone .constprop.0]", .roles = "o-", .name = "k"},
  });
}

TEST(Signature, NoParams) {
  check({
      {.in = "_Z5emptyv", .roles = "", .name = "empty", .demangled = "empty()"},
      {.in = "k(void)", .roles = ""},
  });
  for (const char* c :
       {"c_kernel", "triton_poi_fused_add_mul_0", "triton_red_fused__softmax_1", "", "_Z", "_Zfoo(float*)"}) {
    const auto s = parse_kernel_signature(c);
    EXPECT_FALSE(s.has_params) << c;
    EXPECT_TRUE(s.params.empty()) << c;
    EXPECT_EQ(s.demangled, c);
    EXPECT_EQ(s.name, c);
  }
  // A mangled variable, not a function.
  const auto v = parse_kernel_signature("_ZN3fooE");
  EXPECT_EQ(v.demangled, "foo");
  EXPECT_FALSE(v.has_params);
  // A scope in parentheses is not a parameter list.
  const auto ns = parse_demangled("(anonymous namespace)::thing");
  EXPECT_FALSE(ns.has_params);
  EXPECT_EQ(ns.name, "(anonymous namespace)::thing");
}

// libstdc++'s __cxa_demangle refuses mangled names over 1024 characters (a
// stack guard, GCC PR 87675); such kernels come back with nothing known.
TEST(Signature, OverlongNamesAreUnknown) {
  auto make = [](int n) {
    std::string m = "_Z11long_kernelI8TypeListIJ";
    char buf[64];
    for (int i = 0; i < n; ++i) {
      std::snprintf(buf, sizeof buf, "38AVeryLongStructNameNumber%03dForTesting", i);
      m += buf;
    }
    return m + "EEEvPfPKfi";
  };
  const std::string fits = make(20);
  ASSERT_LE(fits.size(), 1024u);
  check({{.in = fits.c_str(), .roles = "oi-"}});

  const std::string big = make(40);  // 1637 characters, as nvcc produced it
  ASSERT_EQ(big.size(), 1637u);
  const auto s = parse_kernel_signature(big);
  EXPECT_FALSE(s.has_params);
  EXPECT_EQ(s.demangled, big);
}

TEST(Signature, FuzzNeverThrows) {
  const std::string seeds[] = {
      "_Z6kernelPfPKfi",
      "_ZN4vllm15rms_norm_kernelIN3c108BFloat16ELi8EEEvPT_PKS3_S6_fii",
      "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_10launch_allEvEUlfE_NS_"
      "6detail5ArrayIPcLi2EEEEEviT0_T1_",
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half>(c10::Half*, c10::Half "
      "const*, int)",
      "void kop<&(operator<(A, A))>(float*, A)",
      "k_fnptr(float (*)(float), void (*)(float*, float const*), float*)",
  };
  const std::string alphabet = "_ZNPKRSEILTfdivcahtn0123456789<>()[]{},:*& #'\"operatorconst";
  std::mt19937 rng(12345);
  auto run = [](const std::string& in) {
    EXPECT_NO_THROW({
      const auto a = parse_kernel_signature(in);
      const auto b = parse_demangled(in);
      const auto c = demangle(in);
      (void)a.output_count();
      (void)b.output_count();
      for (const auto& p : b.params) (void)dtype_name(p.dtype);
    });
  };
  for (const auto& seed : seeds) {
    for (std::size_t n = 0; n <= seed.size(); ++n) run(seed.substr(0, n));  // every truncation
    for (int round = 0; round < 300; ++round) {                             // random point mutations
      std::string m = seed;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !m.empty(); ++e) m[rng() % m.size()] = alphabet[rng() % alphabet.size()];
      run(m);
    }
  }
  for (int round = 0; round < 3000; ++round) {  // random strings, some with the _Z prefix
    std::string s = (round % 2) ? "_Z" : "";
    const std::size_t len = rng() % 200;
    for (std::size_t i = 0; i < len; ++i)
      s.push_back((round % 3) ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() % 256));
    run(s);
  }
  // Embedded NUL, huge and deeply nested inputs.
  run(std::string("_Z6kernel\0PfPKfi", 16));
  run("_Z" + std::string(100000, 'P') + "f");
  run(std::string(200000, '(') + std::string(200000, '<'));
  run("k(" + std::string(100000, ',') + ")");
  // Shapes that would be quadratic with a naive bracket or trim scan.
  run(std::string(200000, '<') + std::string(200000, ')'));
  run("(" + std::string(200000, '<') + std::string(200000, ')'));
  std::string pairs;
  for (int i = 0; i < 100000; ++i) pairs += "() ";
  run(pairs + std::string(100000, ' '));
}

// Pointers to const of any type are only read: a graph scan need not wait for such a kernel,
// and a watch need not be rescanned after it.
TEST(Signature, PointersToConstAreReadOnly) {
  const KernelSignature s = parse_demangled("void k(void const*, void*, int const*, float const*, float*, "
                                            "int const**, Params, int)");
  ASSERT_TRUE(s.has_params);
  ASSERT_EQ(s.params.size(), 8u);
  const std::vector<bool> expected{true, false, true, true, false, false, false, false};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(s.params[i].read_only, expected[i]) << s.params[i].type;
  EXPECT_EQ(s.params[0].role, ParamRole::other);  // read-only, but no floating type: not an input
  EXPECT_EQ(s.params[3].role, ParamRole::input);
}

}  // namespace
}  // namespace nanscope

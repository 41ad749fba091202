// Launch decoding (hooks/launch_params): parameter structs of every hooked launch API, the
// per-thread default stream of the _ptsz forms, and both parameter forms (kernelParams and the
// packed `extra` buffer). CPU only: the driver's structs are filled by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "launch_params.hpp"

using namespace nanscope;

namespace {
void* const kFunc = reinterpret_cast<void*>(0x1234);
const CUstream kStream = reinterpret_cast<CUstream>(0x5678);
}  // namespace

TEST(LaunchParams, DecodesCuLaunchKernel) {
  void* args[1] = {nullptr};
  cuLaunchKernel_params p{};
  p.f = static_cast<CUfunction>(kFunc);
  p.hStream = kStream;
  p.kernelParams = args;
  LaunchArgs a;
  ASSERT_TRUE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, a));
  EXPECT_EQ(a.function, kFunc);
  EXPECT_EQ(a.stream, kStream);
  EXPECT_EQ(a.kernel_params, args);
  EXPECT_EQ(a.extra, nullptr);
}

TEST(LaunchParams, PtszNullStreamIsThePerThreadStream) {
  cuLaunchKernel_params p{};
  p.f = static_cast<CUfunction>(kFunc);
  LaunchArgs a;
  ASSERT_TRUE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &p, a));
  EXPECT_EQ(a.stream, CU_STREAM_PER_THREAD);
  ASSERT_TRUE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, a));
  EXPECT_EQ(a.stream, nullptr);  // the legacy stream stays the legacy stream
  cuLaunchCooperativeKernel_params c{};
  ASSERT_TRUE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, &c, a));
  EXPECT_EQ(a.stream, CU_STREAM_PER_THREAD);
}

TEST(LaunchParams, DecodesCuLaunchKernelExThroughItsConfig) {
  CUlaunchConfig cfg{};
  cfg.hStream = kStream;
  cuLaunchKernelEx_params p{};
  p.config = &cfg;
  p.f = static_cast<CUfunction>(kFunc);
  LaunchArgs a;
  ASSERT_TRUE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &p, a));
  EXPECT_EQ(a.stream, kStream);
  cuLaunchKernelEx_params no_config{};
  ASSERT_TRUE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, &no_config, a));
  EXPECT_EQ(a.stream, CU_STREAM_PER_THREAD);
}

TEST(LaunchParams, RejectsOtherCallbacks) {
  LaunchArgs a;
  int dummy = 0;
  EXPECT_FALSE(decode_launch(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &dummy, a));
}

TEST(LaunchParams, ParamBytesFromKernelParams) {
  float* out = reinterpret_cast<float*>(0xdead0000);
  int n = 7;
  void* args[2] = {&out, &n};
  LaunchArgs a;
  a.kernel_params = args;
  const std::vector<std::pair<uint32_t, uint32_t>> layout = {{0, 8}, {8, 4}};
  const char* p0 = param_bytes(a, layout, 0);
  ASSERT_NE(p0, nullptr);
  uint64_t v = 0;
  std::memcpy(&v, p0, 8);
  EXPECT_EQ(v, 0xdead0000u);
  EXPECT_EQ(param_bytes(a, layout, 2), nullptr);  // no such parameter
}

TEST(LaunchParams, ParamBytesFromTheExtraBuffer) {
  // The packed form: parameters at their driver offsets in one buffer.
  alignas(8) unsigned char buffer[24] = {};
  const uint64_t ptr = 0xbeef0000;
  const int n = 42;
  std::memcpy(buffer, &n, 4);
  std::memcpy(buffer + 8, &ptr, 8);
  size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  LaunchArgs a;
  a.extra = extra;
  const std::vector<std::pair<uint32_t, uint32_t>> layout = {{0, 4}, {8, 8}, {16, 8}};
  uint64_t v = 0;
  ASSERT_NE(param_bytes(a, layout, 1), nullptr);
  std::memcpy(&v, param_bytes(a, layout, 1), 8);
  EXPECT_EQ(v, ptr);
  int got = 0;
  std::memcpy(&got, param_bytes(a, layout, 0), 4);
  EXPECT_EQ(got, 42);
  size = 16;  // a buffer too short for parameter 2 must not be read past its end
  EXPECT_EQ(param_bytes(a, layout, 2), nullptr);
}

TEST(LaunchParams, NoParameterFormMeansUnknown) {
  LaunchArgs a;
  const std::vector<std::pair<uint32_t, uint32_t>> layout = {{0, 8}};
  EXPECT_EQ(param_bytes(a, layout, 0), nullptr);
}

// Copy and memset decoding (hooks/launch_params: decode_copy, copy_cbids): kinds, API names,
// addresses and sizes of every hooked cuMemcpy*/cuMemset* form, the per-thread default stream of
// the _ptds/_ptsz forms, and that every id copy_cbids() enables decodes. CPU only: the driver's
// structs are filled by hand.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "launch_params.hpp"

using namespace nanscope;

namespace {
const CUstream kStream = reinterpret_cast<CUstream>(0x5678);
constexpr CUdeviceptr kDst = 0x7f0000001000, kSrc = 0x7f0000802000;
int host_data[4] = {};
using Kind = CopyArgs::Kind;
}  // namespace

TEST(CopyParams, HostToDevice) {
  cuMemcpyHtoD_v2_params p{};
  p.dstDevice = kDst;
  p.srcHost = host_data;
  p.ByteCount = 4096;
  CopyArgs c;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &p, c));
  EXPECT_EQ(c.kind, Kind::host_to_device);
  EXPECT_STREQ(c.api, "cuMemcpyHtoD");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.src, 0u);  // a host address is not a device source
  EXPECT_EQ(c.bytes, 4096u);
  EXPECT_EQ(c.stream, nullptr);  // synchronous: the legacy stream
  EXPECT_EQ(c.set_bytes, 0u);

  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds, &p, c));
  EXPECT_STREQ(c.api, "cuMemcpyHtoD");
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(CopyParams, HostToDeviceAsync) {
  cuMemcpyHtoDAsync_v2_params p{};
  p.dstDevice = kDst;
  p.srcHost = host_data;
  p.ByteCount = 16;
  p.hStream = kStream;
  CopyArgs c;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &p, c));
  EXPECT_EQ(c.kind, Kind::host_to_device);
  EXPECT_STREQ(c.api, "cuMemcpyHtoDAsync");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.bytes, 16u);
  EXPECT_EQ(c.stream, kStream);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, &p, c));
  EXPECT_STREQ(c.api, "cuMemcpyHtoDAsync");
  EXPECT_EQ(c.stream, kStream);  // a given stream stays the given stream

  p.hStream = nullptr;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, &p, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &p, c));
  EXPECT_EQ(c.stream, nullptr);  // the legacy stream stays the legacy stream
}

TEST(CopyParams, DeviceToDevice) {
  cuMemcpyDtoD_v2_params p{};
  p.dstDevice = kDst;
  p.srcDevice = kSrc;
  p.ByteCount = 1 << 20;
  CopyArgs c;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &p, c));
  EXPECT_EQ(c.kind, Kind::device_to_device);
  EXPECT_STREQ(c.api, "cuMemcpyDtoD");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.src, kSrc);
  EXPECT_EQ(c.bytes, 1u << 20);
  EXPECT_EQ(c.stream, nullptr);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, &p, c));
  EXPECT_EQ(c.src, kSrc);
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);

  cuMemcpyDtoDAsync_v2_params a{};
  a.dstDevice = kDst;
  a.srcDevice = kSrc;
  a.ByteCount = 8;
  a.hStream = kStream;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &a, c));
  EXPECT_EQ(c.kind, Kind::device_to_device);
  EXPECT_STREQ(c.api, "cuMemcpyDtoDAsync");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.src, kSrc);
  EXPECT_EQ(c.bytes, 8u);
  EXPECT_EQ(c.stream, kStream);
  a.hStream = nullptr;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz, &a, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(CopyParams, UnifiedCopies) {
  cuMemcpy_params p{};
  p.dst = kDst;
  p.src = kSrc;
  p.ByteCount = 100;
  CopyArgs c;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, &p, c));
  EXPECT_EQ(c.kind, Kind::unified);
  EXPECT_STREQ(c.api, "cuMemcpy");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.src, kSrc);
  EXPECT_EQ(c.bytes, 100u);
  EXPECT_EQ(c.stream, nullptr);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds, &p, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);

  cuMemcpyAsync_params a{};
  a.dst = kDst;
  a.src = kSrc;
  a.ByteCount = 12;
  a.hStream = kStream;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &a, c));
  EXPECT_EQ(c.kind, Kind::unified);
  EXPECT_STREQ(c.api, "cuMemcpyAsync");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.src, kSrc);
  EXPECT_EQ(c.bytes, 12u);
  EXPECT_EQ(c.stream, kStream);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, &a, c));
  EXPECT_EQ(c.stream, kStream);
  a.hStream = nullptr;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, &a, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(CopyParams, MemsetBytesAreCountTimesElementSize) {
  CopyArgs c;
  cuMemsetD8_v2_params d8{};
  d8.dstDevice = kDst;
  d8.uc = 0xff;
  d8.N = 100;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &d8, c));
  EXPECT_EQ(c.kind, Kind::set);
  EXPECT_STREQ(c.api, "cuMemsetD8");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.src, 0u);
  EXPECT_EQ(c.bytes, 100u);
  EXPECT_EQ(c.set_bytes, 1u);
  EXPECT_EQ(c.set_value, 0xffu);
  EXPECT_EQ(c.stream, nullptr);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds, &d8, c));
  EXPECT_STREQ(c.api, "cuMemsetD8");
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);

  cuMemsetD16_v2_params d16{};
  d16.dstDevice = kDst;
  d16.us = 0x7e00;  // an f16 NaN pattern
  d16.N = 10;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, &d16, c));
  EXPECT_EQ(c.kind, Kind::set);
  EXPECT_STREQ(c.api, "cuMemsetD16");
  EXPECT_EQ(c.bytes, 20u);
  EXPECT_EQ(c.set_bytes, 2u);
  EXPECT_EQ(c.set_value, 0x7e00u);
  EXPECT_EQ(c.stream, nullptr);

  cuMemsetD32_v2_params d32{};
  d32.dstDevice = kDst;
  d32.ui = 0x7fc00000;  // an f32 NaN pattern
  d32.N = 16;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &d32, c));
  EXPECT_EQ(c.kind, Kind::set);
  EXPECT_STREQ(c.api, "cuMemsetD32");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.bytes, 64u);
  EXPECT_EQ(c.set_bytes, 4u);
  EXPECT_EQ(c.set_value, 0x7fc00000u);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds, &d32, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(CopyParams, AsyncMemsets) {
  CopyArgs c;
  cuMemsetD32Async_params d32{};
  d32.dstDevice = kDst;
  d32.ui = 0xffffffffu;
  d32.N = 3;
  d32.hStream = kStream;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, &d32, c));
  EXPECT_EQ(c.kind, Kind::set);
  EXPECT_STREQ(c.api, "cuMemsetD32Async");
  EXPECT_EQ(c.dst, kDst);
  EXPECT_EQ(c.bytes, 12u);
  EXPECT_EQ(c.set_bytes, 4u);
  EXPECT_EQ(c.set_value, 0xffffffffu);
  EXPECT_EQ(c.stream, kStream);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz, &d32, c));
  EXPECT_EQ(c.stream, kStream);
  d32.hStream = nullptr;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz, &d32, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, &d32, c));
  EXPECT_EQ(c.stream, nullptr);

  cuMemsetD16Async_params d16{};
  d16.dstDevice = kDst;
  d16.us = 0xffff;
  d16.N = 5;
  d16.hStream = kStream;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, &d16, c));
  EXPECT_STREQ(c.api, "cuMemsetD16Async");
  EXPECT_EQ(c.bytes, 10u);
  EXPECT_EQ(c.set_bytes, 2u);
  EXPECT_EQ(c.set_value, 0xffffu);
  EXPECT_EQ(c.stream, kStream);

  cuMemsetD8Async_params d8{};
  d8.dstDevice = kDst;
  d8.uc = 0;
  d8.N = 7;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, &d8, c));
  EXPECT_STREQ(c.api, "cuMemsetD8Async");
  EXPECT_EQ(c.bytes, 7u);
  EXPECT_EQ(c.set_bytes, 1u);
  EXPECT_EQ(c.set_value, 0u);
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(CopyParams, EachDecodeStartsFresh) {
  CopyArgs c;
  cuMemcpyDtoDAsync_v2_params copy{};
  copy.dstDevice = kDst;
  copy.srcDevice = kSrc;
  copy.ByteCount = 64;
  copy.hStream = kStream;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &copy, c));
  cuMemsetD8_v2_params set{};
  set.dstDevice = kDst + 64;
  set.uc = 1;
  set.N = 4;
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &set, c));
  EXPECT_EQ(c.src, 0u);          // nothing left from the copy
  EXPECT_EQ(c.stream, nullptr);
  EXPECT_EQ(c.dst, kDst + 64);
  ASSERT_TRUE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &copy, c));
  EXPECT_EQ(c.set_bytes, 0u);    // nothing left from the memset
  EXPECT_EQ(c.set_value, 0u);
}

TEST(CopyParams, RejectsLaunchesAndOtherCallbacks) {
  cuLaunchKernel_params launch{};
  CopyArgs c;
  EXPECT_FALSE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &launch, c));
  EXPECT_FALSE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &launch, c));
  int dummy = 0;
  EXPECT_FALSE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &dummy, c));
  EXPECT_FALSE(decode_copy(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &dummy, c));
}

// Every form the hook enables, with what a zeroed parameter struct must decode to.
TEST(CopyParams, EveryEnabledIdDecodes) {
  struct Form {
    CUpti_CallbackId cbid;
    Kind kind;
    const char* api;
    bool per_thread;
  };
  const std::vector<Form> forms = {
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, Kind::host_to_device, "cuMemcpyHtoD", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds, Kind::host_to_device, "cuMemcpyHtoD", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, Kind::host_to_device, "cuMemcpyHtoDAsync", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, Kind::host_to_device, "cuMemcpyHtoDAsync", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, Kind::device_to_device, "cuMemcpyDtoD", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, Kind::device_to_device, "cuMemcpyDtoD", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, Kind::device_to_device, "cuMemcpyDtoDAsync", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz, Kind::device_to_device, "cuMemcpyDtoDAsync", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpy, Kind::unified, "cuMemcpy", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds, Kind::unified, "cuMemcpy", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, Kind::unified, "cuMemcpyAsync", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, Kind::unified, "cuMemcpyAsync", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, Kind::set, "cuMemsetD8", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds, Kind::set, "cuMemsetD8", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, Kind::set, "cuMemsetD16", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds, Kind::set, "cuMemsetD16", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, Kind::set, "cuMemsetD32", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds, Kind::set, "cuMemsetD32", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, Kind::set, "cuMemsetD8Async", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, Kind::set, "cuMemsetD8Async", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, Kind::set, "cuMemsetD16Async", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz, Kind::set, "cuMemsetD16Async", true},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, Kind::set, "cuMemsetD32Async", false},
      {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz, Kind::set, "cuMemsetD32Async", true},
  };
  const std::vector<CUpti_CallbackId>& ids = copy_cbids();
  EXPECT_EQ(std::set<CUpti_CallbackId>(ids.begin(), ids.end()).size(), ids.size()) << "duplicate ids";
  std::set<CUpti_CallbackId> expected;
  for (const Form& f : forms) expected.insert(f.cbid);
  EXPECT_EQ(std::set<CUpti_CallbackId>(ids.begin(), ids.end()), expected);

  alignas(16) unsigned char zero[128] = {};  // larger than any of the structs
  for (CUpti_CallbackId id : ids) {
    CopyArgs c;
    ASSERT_TRUE(decode_copy(id, zero, c)) << "cbid " << id;
    const std::string api = c.api;
    EXPECT_FALSE(api.empty()) << "cbid " << id;
    EXPECT_EQ(api.find("_v2"), std::string::npos) << api;
    EXPECT_EQ(api.find("_pt"), std::string::npos) << api;
    LaunchArgs l;
    EXPECT_FALSE(read_launch_args(id, zero, l)) << "cbid " << id;  // never taken for a launch
  }
  for (const Form& f : forms) {
    CopyArgs c;
    ASSERT_TRUE(decode_copy(f.cbid, zero, c)) << f.api;
    EXPECT_EQ(c.kind, f.kind) << f.api;
    EXPECT_STREQ(c.api, f.api);
    EXPECT_EQ(c.stream, f.per_thread ? CU_STREAM_PER_THREAD : nullptr) << f.api << " cbid " << f.cbid;
    EXPECT_EQ(c.set_bytes != 0, f.kind == Kind::set) << f.api;
  }
}

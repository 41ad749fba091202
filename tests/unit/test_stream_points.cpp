// The driver calls held eager scans must not outlive (hooks/stream_points): each table entry's
// stream, the per-thread default stream of the _ptsz/_ptds forms, the legacy stream of the
// synchronous forms, and a copy to the host's source bytes. CPU only: structs filled by hand.
#include <gtest/gtest.h>

#include <set>

#include "launch_params.hpp"
#include "stream_points.hpp"

using namespace nanscope;

namespace {
const CUstream kStream = reinterpret_cast<CUstream>(0x5678);
}

TEST(StreamPoints, EventRecordNamesItsStream) {
  cuEventRecord_params p{nullptr, kStream};
  StreamCall c;
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &p, c));
  EXPECT_EQ(c.point, eager::Point::stream_point);
  EXPECT_EQ(c.stream, kStream);
  cuEventRecord_ptsz_params q{nullptr, nullptr};
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz, &q, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(StreamPoints, WaitingStreamAndSynchronisation) {
  cuStreamWaitEvent_params w{kStream, nullptr, 0};
  StreamCall c;
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &w, c));
  EXPECT_EQ(c.stream, kStream);
  cuStreamSynchronize_params s{kStream};
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &s, c));
  EXPECT_EQ(c.point, eager::Point::stream_point);
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr, c));
  EXPECT_EQ(c.point, eager::Point::context_point);
  cuStreamBeginCapture_v2_params b{kStream, CU_STREAM_CAPTURE_MODE_GLOBAL};
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &b, c));
  EXPECT_EQ(c.point, eager::Point::context_point);  // a capture must not take any held scan in
}

TEST(StreamPoints, CopiesToTheHostReadTheirSource) {
  char host[64];
  cuMemcpyDtoHAsync_v2_params a{host, 0x9000, 64, kStream};
  StreamCall c;
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, &a, c));
  EXPECT_EQ(c.point, eager::Point::host_read);
  EXPECT_EQ(c.stream, kStream);
  EXPECT_EQ(c.source.lo, 0x9000u);
  EXPECT_EQ(c.source.hi, 0x9040u);
  cuMemcpyDtoH_v2_params s{host, 0x9000, 64};
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &s, c));
  EXPECT_EQ(c.stream, nullptr);  // synchronous: the legacy stream
  ASSERT_TRUE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds, &s, c));
  EXPECT_EQ(c.stream, CU_STREAM_PER_THREAD);
}

TEST(StreamPoints, TableIsApartFromTheOtherHooks) {
  // Each cbid once, and none that the launch, graph, allocation or copy hooks already take (their
  // enter sites are read where they are hooked).
  std::set<CUpti_CallbackId> seen;
  for (CUpti_CallbackId id : stream_point_cbids()) {
    EXPECT_TRUE(seen.insert(id).second) << id;
    EXPECT_EQ(driver_hook(id), DriverHook::none) << id;
    CopyArgs copy;
    char params[256] = {};
    EXPECT_FALSE(decode_copy(id, params, copy)) << id;
  }
  EXPECT_GT(seen.size(), 60u);
  StreamCall c;
  EXPECT_FALSE(decode_stream_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nullptr, c));
}

// A launch call's record from its API-enter site to its exit site (hooks/launch_record): the
// number left in the callback's correlationData brings the exit site the record its enter site
// began; any mismatch (no enter site, another call's slot) begins a new record, never reading
// more than a number from the slot. CPU only: the callback data is filled by hand.
#include <gtest/gtest.h>

#include "launch_record.hpp"

using namespace nanscope;

namespace {

void* const kFunc = reinterpret_cast<void*>(0x1234);

struct Call {
  void* args[1] = {nullptr};
  cuLaunchKernel_params params{};
  uint64_t slot = 0;  // CUPTI's correlationData of this call
  CUpti_CallbackData cb{};
  explicit Call(uint32_t correlation) {
    params.f = static_cast<CUfunction>(kFunc);
    params.kernelParams = args;
    cb.functionParams = &params;
    cb.correlationId = correlation;
    cb.correlationData = &slot;
  }
};

const KernelInfo* const kKernel = reinterpret_cast<const KernelInfo*>(0x42);  // never read

}  // namespace

TEST(LaunchRecord, ExitSiteTakesTheRecordItsEnterSiteBegan) {
  Call call(7);
  LaunchRecord* enter = LaunchRecord::at_enter(call.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  ASSERT_NE(enter, nullptr);
  EXPECT_EQ(enter->args.function, kFunc);
  EXPECT_NE(call.slot, 0u);
  enter->kernel = kKernel;  // what the enter site resolved
  LaunchRecord* exit = LaunchRecord::at_exit(call.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  ASSERT_EQ(exit, enter);
  EXPECT_EQ(exit->kernel, kKernel);  // not resolved again
}

TEST(LaunchRecord, ExitSiteWithoutItsEnterSiteBeginsANewRecord) {
  Call earlier(8);
  LaunchRecord::at_enter(earlier.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)->kernel = kKernel;
  Call call(9);  // enabled mid-call: no enter site, an empty slot
  LaunchRecord* exit = LaunchRecord::at_exit(call.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(exit->kernel, nullptr);
  EXPECT_EQ(exit->args.function, kFunc);
}

TEST(LaunchRecord, AnotherCallsNumberIsNotTaken) {
  Call first(10);
  LaunchRecord::at_enter(first.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)->kernel = kKernel;
  Call second(11);
  second.slot = first.slot;  // the right number, the wrong call
  EXPECT_EQ(LaunchRecord::at_exit(second.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)->kernel, nullptr);
  Call third(12);
  third.cb.correlationData = nullptr;
  EXPECT_NE(LaunchRecord::at_exit(third.cb, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), nullptr);
}

TEST(LaunchRecord, OnlyLaunchesHaveOne) {
  Call call(13);
  cuMemAlloc_v2_params alloc{};
  call.cb.functionParams = &alloc;
  EXPECT_EQ(LaunchRecord::at_enter(call.cb, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2), nullptr);
  EXPECT_EQ(call.slot, 0u);
  EXPECT_EQ(LaunchRecord::at_exit(call.cb, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2), nullptr);
}

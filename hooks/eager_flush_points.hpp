// Held eager scans (NANSCOPE_EAGER_BATCH): the enter sites of the driver calls they must run
// before (eager_batch_points.cpp). Each call becomes an eager::Event for ScanSubmitter, and
// src/eager_batch.cpp says which held scans go first.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <vector>

#include "contexts.hpp"
#include "eager_batch.hpp"
#include "kernel_table.hpp"
#include "launch_params.hpp"
#include "launch_record.hpp"
#include "scan_submitter.hpp"
#include "task_builder.hpp"

namespace nanscope {

class EagerFlushPoints {
 public:
  EagerFlushPoints(ScanSubmitter& scans, TaskBuilder& tasks, Allocations& allocs)
      : scans_(scans), tasks_(tasks), allocs_(allocs) {}

  // A launch that may write what they read; a decoded copy or set; a free or unmap (driver_hook
  // free); a graph launch or a call of the stream-point table.
  void on_launch_enter(const CUpti_CallbackData& cb, LaunchRecord& launch);
  void on_copy_enter(const CopyArgs& c);
  void on_free_enter(CUpti_CallbackId cbid, const void* params);
  void on_stream_call(CUstream stream, eager::Point point, eager::Range source = {});

 private:
  bool known_launch_writes(LaunchRecord& launch, std::vector<eager::Range>& out);

  ScanSubmitter& scans_;
  TaskBuilder& tasks_;
  Allocations& allocs_;
};

}  // namespace nanscope

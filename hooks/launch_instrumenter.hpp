// Stream launches: a kernel launch callback becomes a scan task (TaskBuilder) and one scan
// launch right after it on the app's stream (ScanSubmitter); inside a stream capture the scan
// becomes the next graph node. Copies and memsets into tracked buffers are followed by a rescan.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <optional>
#include <vector>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "eager_tier.hpp"
#include "event_log.hpp"
#include "kernel_table.hpp"
#include "launch_params.hpp"
#include "launch_record.hpp"
#include "scan_submitter.hpp"
#include "task_builder.hpp"

namespace nanscope {

// Kernel launches and copies: the scan task of each and its submission (ScanSubmitter); what an
// undecoded launch may write (note_opaque); the rescan after a copy or set.
class LaunchInstrumenter {
 public:
  LaunchInstrumenter(const Config& cfg, TaskBuilder& tasks, ScanSubmitter& scans, Contexts& contexts,
                     Allocations& allocs, KernelTable& kernels, Counters& counters, EagerTier& eager_tier, EventLog& log)
      : cfg_(cfg), tasks_(tasks), scans_(scans), contexts_(contexts), allocs_(allocs), kernels_(kernels),
        counters_(counters), eager_tier_(eager_tier), log_(log) {}

  // API-exit site of a kernel launch, with the record its enter site began (LaunchRecord::at_exit).
  void on_launch(const CUpti_CallbackData& cb, LaunchRecord& launch);
  // A copy or memset into a buffer whose state is tracked (NaN origin).
  void on_copy(const CopyArgs& c, const CUpti_CallbackData& cb);

 private:
  // Only the words that may hide a pointer: a typed output is judged by its own scan, a typed
  // input is only read.
  // `clock`: the exit site's, whose opaque parts it laps.
  void note_opaque(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id, CUcontext ctx, PartClock& clock);
  bool sampled_out(const KernelInfo& k, const LaunchArgs& a, uint64_t launch_id);
  bool xla_autotuning(const KernelInfo& k, const LaunchArgs& a);
  static void note_judged_inputs(ContextState& cs, const std::vector<uint64_t>& words, OpaqueWrite& writer);
  void watch_torch();  // attaches to torch's allocator once it is there; says once if it cannot
  void note_copy_writer(const CopyArgs& c, ContextState& cs, uint32_t pseudo);
  void copy_origin(const CopyArgs& c, ContextState& cs, nanscope_scan_task& task);
  uint64_t set_task(const CopyArgs& c, nanscope_scan_task& task) const;
  uint64_t rescan_task(const TrackedBuffer& dst, nanscope_scan_task& task);
  std::optional<DType> typed_source(const CopyArgs& c, ContextState& cs) const;

  const Config& cfg_;
  TaskBuilder& tasks_;
  ScanSubmitter& scans_;
  Contexts& contexts_;
  Allocations& allocs_;
  KernelTable& kernels_;
  Counters& counters_;
  EagerTier& eager_tier_;
  EventLog& log_;
};

}  // namespace nanscope

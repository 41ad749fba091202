// One kernel launch call as nanscope sees it, built once at the call's API-enter site and passed
// explicitly to its exit site (LaunchInstrumenter::on_launch) and to the collectors of its scan
// task (TaskDraft::launch): the callback's arguments, read once; the kernel, resolved by the
// first site that needs it; what its kernel-family decoder says it writes and reads, decoded at
// most once (the enter site's write model for held eager scans and the exit site's task read the
// same parameters, so a second decode would say the same).
#pragma once
#include <cupti.h>

#include <optional>
#include <vector>

#include "decode/written.hpp"
#include "launch_params.hpp"
#include "scan_overlap.hpp"

namespace nanscope {

class Allocations;  // contexts.hpp
class Coverage;     // coverage.hpp
struct KernelInfo;  // kernel_table.hpp

// What a kernel-family decoder (src/decode: ATen, Triton) says one launch writes and reads;
// nullopt when the kernel has no decoder or more parameters than a decoded launch reads. A
// refused layout comes back with status layout_mismatch and its reason.
std::optional<decode::Decoded> decode_launch(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs);
// A refused launch's reason in full, for its kernel's one not_inspected line: an XLA kernel's
// names the thunks it was looked up in, the words' count and the grid; others' is `reason`.
std::string refusal_detail(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs, std::string_view reason);
// A refused launch's kernel listed in the coverage once, with its refusal_detail (eager launches
// and graph nodes alike); returns that detail when it was listed now, else empty.
std::string list_refusal(Coverage& coverage, const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs,
                         std::string_view reason);

// A decode as the write models see it (overlap::launch_writes): the decoder's writes whose extent
// it knows, appended to `exact`, and the inputs it names, appended to `inputs`. False (nothing
// appended) when the launch is not decoded. The second form decodes a graph node's launch.
bool decoded_io(const std::optional<decode::Decoded>& decoded, std::vector<overlap::KnownWrite>& exact,
                std::vector<uint64_t>& inputs);
bool decoded_io(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs,
                std::vector<overlap::KnownWrite>& exact, std::vector<uint64_t>& inputs);

class LaunchRecord {
 public:
  LaunchRecord() = default;
  LaunchRecord(const KernelInfo& k, const LaunchArgs& a) : args(a), kernel(&k) {}

  // The record of a launch callback's call: at the enter site a new one, its number left in the
  // callback's correlationData (the same slot at both sites of one call); at the exit site the
  // one its enter site began, or a new one when the numbers or correlation ids differ (callbacks
  // enabled mid-call, another launch between the two sites on this thread). Null for a cbid that
  // is not a launch. The record lives in the calling thread's slot until its next launch call.
  static LaunchRecord* at_enter(const CUpti_CallbackData& cb, CUpti_CallbackId cbid);
  static LaunchRecord* at_exit(const CUpti_CallbackData& cb, CUpti_CallbackId cbid);

  LaunchArgs args;
  const KernelInfo* kernel = nullptr;  // null until a site resolves it (TaskBuilder::kernel_info)
  // decode_launch of this launch, made on first use (launch_decode.cpp).
  const std::optional<decode::Decoded>& decoded(const Allocations& allocs);

 private:
  static LaunchRecord* begin(const CUpti_CallbackData& cb, CUpti_CallbackId cbid);
  uint32_t correlation_id_ = 0;
  uint64_t number_ = 0;  // what the enter site left in correlationData
  bool decoded_once_ = false;
  std::optional<decode::Decoded> decoded_;
};

}  // namespace nanscope

#include "launch_record.hpp"

#include <algorithm>

namespace nanscope {

namespace {

constexpr uint32_t kMaxDecodedParams = 128;

bool is_live(const void* allocs, uint64_t ptr) { return static_cast<const Allocations*>(allocs)->is_device(ptr); }

// The launch call between its two sites on this thread (one call at a time per thread), and the
// number of the last one begun here.
thread_local LaunchRecord t_record;
thread_local uint64_t t_numbered = 0;

}  // namespace

std::optional<decode::Decoded> decode_launch(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs) {
  if (k.decoder == Decoder::none || k.params.size() > kMaxDecodedParams) return std::nullopt;
  const char* params[kMaxDecodedParams];
  for (uint32_t i = 0; i < k.params.size(); ++i) params[i] = param_bytes(a, k.params, i);
  decode::LaunchView view;
  view.params = params;
  view.count = static_cast<uint32_t>(k.params.size());
  std::copy(a.grid, a.grid + 3, view.grid);
  std::copy(a.block, a.block + 3, view.block);
  return k.decoder == Decoder::triton ? decode::decode_triton(*k.triton, k.params, view)
                                      : decode::decode_aten(k.aten, view, decode::AddressQuery{is_live, &allocs});
}

bool decoded_io(const std::optional<decode::Decoded>& decoded, std::vector<overlap::KnownWrite>& exact,
                std::vector<uint64_t>& inputs) {
  if (!decoded || decoded->status != decode::Status::decoded) return false;
  overlap::add_decoded_io(*decoded, exact, inputs);
  return true;
}

bool decoded_io(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs,
                std::vector<overlap::KnownWrite>& exact, std::vector<uint64_t>& inputs) {
  return decoded_io(decode_launch(k, a, allocs), exact, inputs);
}

const std::optional<decode::Decoded>& LaunchRecord::decoded(const Allocations& allocs) {
  if (!decoded_once_ && kernel) {
    decoded_ = decode_launch(*kernel, args, allocs);
    decoded_once_ = true;
  }
  return decoded_;
}

LaunchRecord* LaunchRecord::begin(const CUpti_CallbackData& cb, CUpti_CallbackId cbid) {
  LaunchArgs args;
  if (!read_launch_args(cbid, cb.functionParams, args)) return nullptr;
  LaunchRecord& r = t_record;  // field by field: no copy of a whole decode on every launch
  r.args = args;
  r.kernel = nullptr;
  r.correlation_id_ = cb.correlationId;
  r.number_ = ++t_numbered;
  r.decoded_once_ = false;
  r.decoded_.reset();
  return &r;
}

LaunchRecord* LaunchRecord::at_enter(const CUpti_CallbackData& cb, CUpti_CallbackId cbid) {
  LaunchRecord* r = begin(cb, cbid);
  if (r && cb.correlationData) *cb.correlationData = r->number_;
  return r;
}

LaunchRecord* LaunchRecord::at_exit(const CUpti_CallbackData& cb, CUpti_CallbackId cbid) {
  // Only a number is read from correlationData, never followed: a slot the enter site did not
  // fill cannot point anywhere.
  const bool same_call = cb.correlationData && t_record.number_ && *cb.correlationData == t_record.number_ &&
                         t_record.correlation_id_ == cb.correlationId;
  if (same_call && driver_hook(cbid) == DriverHook::launch) return &t_record;
  return begin(cb, cbid);
}

}  // namespace nanscope

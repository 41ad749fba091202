#include "launch_record.hpp"

namespace nanscope {

namespace {

// The launch call between its two sites on this thread (one call at a time per thread), and the
// number of the last one begun here.
thread_local LaunchRecord t_record;
thread_local uint64_t t_numbered = 0;

}  // namespace

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

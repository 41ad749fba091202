// Driver calls that held eager scans must not outlive (NANSCOPE_EAGER_BATCH): stream and context
// synchronisation, event records, a stream waiting for an event, host functions, stream memory
// operations, begin capture, copies to the host and the copies nanscope does not decode. One
// table (kStreamPoints in stream_points.cpp) drives enabling them and reading their parameters;
// kernel launches, the decoded copies and frees are read where they are already hooked.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <vector>

#include "eager_batch.hpp"

namespace nanscope {

struct StreamCall {
  eager::Point point = eager::Point::stream_point;
  CUstream stream = nullptr;  // the legacy stream for calls that name none; CU_STREAM_PER_THREAD for
                              // a per-thread form's null stream
  eager::Range source{};      // a copy to the host: the device bytes it reads, when the call says
};

// Reads a call of the table; false for other cbids.
bool decode_stream_call(CUpti_CallbackId cbid, const void* params, StreamCall& out);
const std::vector<CUpti_CallbackId>& stream_point_cbids();

}  // namespace nanscope

// Whether a stream is capturing, as every decision of ours that differs for graph nodes asks it.
#pragma once
#include <cuda.h>

namespace nanscope {

// True only when the driver said the stream is not capturing. A failed query counts as capturing:
// nothing of ours may become a node of the app's graph, and no eager-only decision is taken for
// what may be a graph node.
inline bool surely_not_capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace nanscope

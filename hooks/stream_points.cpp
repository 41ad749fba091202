#include "stream_points.hpp"

#include <iterator>

namespace nanscope {

namespace {

using P = eager::Point;

struct StreamPointForm {
  CUpti_CallbackId cbid;
  P point;
  bool per_thread;  // a _ptsz/_ptds form: a null stream is the per-thread default stream
  void (*read)(const void* params, StreamCall& out);
};

// The stream a call's parameters name (`hStream` or `stream`), or none: the legacy stream (the
// synchronous forms), and the device bytes a copy to the host reads.
template <class Params>
void read_call(const void* params, StreamCall& out) {
  auto* p = static_cast<const Params*>(params);
  if constexpr (requires { p->hStream; }) out.stream = p->hStream;
  else if constexpr (requires { p->stream; }) out.stream = p->stream;
  if constexpr (requires { p->srcDevice; p->ByteCount; }) out.source = {p->srcDevice, p->srcDevice + p->ByteCount};
}

void read_nothing(const void*, StreamCall&) {}  // a call without parameters (cuCtxSynchronize)

#define NS_POINT(name, point, per_thread) \
  {CUPTI_DRIVER_TRACE_CBID_##name, point, per_thread, read_call<name##_params>}
constexpr bool kPt = true, kLegacy = false;

const StreamPointForm kStreamPoints[] = {
    // The stream's earlier work must have run, or can be seen from the host or another stream.
    NS_POINT(cuEventRecord, P::stream_point, kLegacy),
    NS_POINT(cuEventRecord_ptsz, P::stream_point, kPt),
    NS_POINT(cuEventRecordWithFlags, P::stream_point, kLegacy),
    NS_POINT(cuEventRecordWithFlags_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamSynchronize, P::stream_point, kLegacy),
    NS_POINT(cuStreamSynchronize_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamQuery, P::stream_point, kLegacy),
    NS_POINT(cuStreamQuery_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamDestroy_v2, P::stream_point, kLegacy),
    // The waiting stream: it may be joining a capture, which must not take our held scans in.
    NS_POINT(cuStreamWaitEvent, P::stream_point, kLegacy),
    NS_POINT(cuStreamWaitEvent_ptsz, P::stream_point, kPt),
    NS_POINT(cuLaunchHostFunc, P::stream_point, kLegacy),
    NS_POINT(cuLaunchHostFunc_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamAddCallback, P::stream_point, kLegacy),
    NS_POINT(cuStreamAddCallback_ptsz, P::stream_point, kPt),
    // Begin capture: every stream of the context, since a capture forbids (and is broken by) work
    // on the legacy stream, and a stream may join the capture through an event.
    NS_POINT(cuStreamBeginCapture, P::context_point, kLegacy),
    NS_POINT(cuStreamBeginCapture_ptsz, P::context_point, kPt),
    NS_POINT(cuStreamBeginCapture_v2, P::context_point, kLegacy),
    NS_POINT(cuStreamBeginCapture_v2_ptsz, P::context_point, kPt),
    NS_POINT(cuStreamBeginCaptureToGraph, P::context_point, kLegacy),
    NS_POINT(cuStreamBeginCaptureToGraph_ptsz, P::context_point, kPt),
    NS_POINT(cuStreamWaitValue32_v2, P::stream_point, kLegacy),
    NS_POINT(cuStreamWaitValue32_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamWaitValue64_v2, P::stream_point, kLegacy),
    NS_POINT(cuStreamWaitValue64_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamWriteValue32_v2, P::stream_point, kLegacy),
    NS_POINT(cuStreamWriteValue32_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamWriteValue64_v2, P::stream_point, kLegacy),
    NS_POINT(cuStreamWriteValue64_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuStreamBatchMemOp_v2, P::stream_point, kLegacy),
    NS_POINT(cuStreamBatchMemOp_v2_ptsz, P::stream_point, kPt),
    {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, P::context_point, kLegacy, read_nothing},
    NS_POINT(cuCtxSynchronize_v2, P::context_point, kLegacy),
    // Copies to the host: the host acts on what it reads.
    NS_POINT(cuMemcpyDtoH_v2, P::host_read, kLegacy),
    NS_POINT(cuMemcpyDtoH_v2_ptds, P::host_read, kPt),
    NS_POINT(cuMemcpyDtoHAsync_v2, P::host_read, kLegacy),
    NS_POINT(cuMemcpyDtoHAsync_v2_ptsz, P::host_read, kPt),
    NS_POINT(cuMemcpyAtoH_v2, P::host_read, kLegacy),
    NS_POINT(cuMemcpyAtoH_v2_ptds, P::host_read, kPt),
    NS_POINT(cuMemcpyAtoHAsync_v2, P::host_read, kLegacy),
    NS_POINT(cuMemcpyAtoHAsync_v2_ptsz, P::host_read, kPt),
    // Copies and sets nanscope does not decode: anything on their stream.
    NS_POINT(cuMemcpy2D_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy2D_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemcpy2DUnaligned_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy2DUnaligned_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemcpy2DAsync_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy2DAsync_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemcpy3D_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy3D_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemcpy3DAsync_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy3DAsync_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemcpyPeer, P::stream_point, kLegacy),
    NS_POINT(cuMemcpyPeer_ptds, P::stream_point, kPt),
    NS_POINT(cuMemcpyPeerAsync, P::stream_point, kLegacy),
    NS_POINT(cuMemcpyPeerAsync_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemcpy3DPeer, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy3DPeer_ptds, P::stream_point, kPt),
    NS_POINT(cuMemcpy3DPeerAsync, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy3DPeerAsync_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemcpyDtoA_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpyDtoA_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemcpyBatchAsync_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpyBatchAsync_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemcpy3DBatchAsync_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemcpy3DBatchAsync_v2_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemsetD2D8_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemsetD2D8_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemsetD2D16_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemsetD2D16_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemsetD2D32_v2, P::stream_point, kLegacy),
    NS_POINT(cuMemsetD2D32_v2_ptds, P::stream_point, kPt),
    NS_POINT(cuMemsetD2D8Async, P::stream_point, kLegacy),
    NS_POINT(cuMemsetD2D8Async_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemsetD2D16Async, P::stream_point, kLegacy),
    NS_POINT(cuMemsetD2D16Async_ptsz, P::stream_point, kPt),
    NS_POINT(cuMemsetD2D32Async, P::stream_point, kLegacy),
    NS_POINT(cuMemsetD2D32Async_ptsz, P::stream_point, kPt),
};
#undef NS_POINT

}  // namespace

bool decode_stream_call(CUpti_CallbackId cbid, const void* params, StreamCall& out) {
  for (const StreamPointForm& f : kStreamPoints) {
    if (f.cbid != cbid) continue;
    out = StreamCall{};
    out.point = f.point;
    f.read(params, out);
    if (!out.stream && f.per_thread) out.stream = CU_STREAM_PER_THREAD;
    return true;
  }
  return false;
}

const std::vector<CUpti_CallbackId>& stream_point_cbids() {
  static const std::vector<CUpti_CallbackId> ids = [] {
    std::vector<CUpti_CallbackId> v;
    for (const StreamPointForm& f : kStreamPoints) v.push_back(f.cbid);
    return v;
  }();
  return ids;
}

}  // namespace nanscope

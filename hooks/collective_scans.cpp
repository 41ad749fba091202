// NCCL collectives (hooks/nccl_intercept.*, docs/multi-gpu.md): recvbuff is scanned on the
// collective's stream once its kernels are enqueued (after the call, or after the outermost
// ncclGroupEnd for a call inside a group), by the same path as a GEMM's D; sendbuff is its
// input. A rank that only sends (ncclSend, ncclReduce off the root) has its sendbuff looked
// at instead, so the report can see the contributors that receive nothing. The facts of each
// scan (op, communicator, sequence number, peers) are filed with it for its findings
// (src/launch_facts.hpp).
#include "library_scans.hpp"
#include "nccl_intercept.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

CollectiveExtent extent_of(const nccl::CollectiveCall& c) {
  if (!c.positioned) return {};
  return collective_extent(c.op, c.count, c.where.rank, c.where.nranks, c.root_or_peer);
}

}  // namespace

// Before the call, on its stream: sendbuff's state slot, and its initial scan when no scan
// judged it yet. Here, not after the call: an in-place collective (PyTorch's all_reduce) has
// overwritten it by then.
void LibraryScans::before_collective(nccl::CollectiveCall& c) {
  ToolScope scope;
  const CollectiveExtent e = extent_of(c);
  if (!cfg_.origin || !e.ok || !e.send_elements || !e.recv_elements || c.dtype == DType::none) return;
  const uint64_t bytes = e.send_elements * dtype_size(c.dtype);
  if (!allocs_.holds(c.sendbuff, bytes)) return;  // not an input nanscope can judge: origin unknown
  CUcontext ctx = nullptr;
  ContextState* cs = cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx ? contexts_.get(ctx) : nullptr;
  if (!cs || !cs->buffer_states()) return;
  const auto stream = reinterpret_cast<CUstream>(c.stream);
  nanscope_scan_task none{};  // no outputs yet: the initial scan reads what is sent
  LaunchPlan plan;
  c.send_ref = tasks_.input_ref(*cs, stream, none, c.sendbuff, c.dtype, e.send_elements, &plan);
  c.send_ref_set = true;
  for (uint32_t i = 0; i < plan.initial_count; ++i) scans_.submit_initial(*cs, plan.initial[i], stream, 0);
}

void LibraryScans::on_collective(const nccl::CollectiveCall& c) {
  ToolScope scope;
  const CollectiveExtent e = extent_of(c);
  const bool receives = e.ok && e.recv_elements > 0;
  LibraryScan s;
  s.api = c.api, s.call_id = c.call_id, s.stream = c.stream;
  s.ptr = receives ? c.recvbuff : c.sendbuff;
  s.elements = receives ? e.recv_elements : e.send_elements;
  s.dtype = c.dtype;
  s.refused = c.not_scanned                ? c.not_scanned
              : !c.positioned              ? "communicator rank unknown"
              : !e.ok                      ? e.why
              : c.dtype == DType::none     ? "not a floating-point datatype"
              : !s.elements                ? "nothing written or sent on this rank"
                                           : nullptr;
  s.outside = receives ? "recvbuff outside its allocation" : "sendbuff outside its allocation";
  s.judge = receives;
  s.own_launch_id = true;
  LibraryInput send;
  if (receives && e.send_elements) {
    send = {c.sendbuff, c.dtype, e.send_elements, allocs_.holds(c.sendbuff, e.send_elements * dtype_size(c.dtype)),
            c.send_ref_set, c.send_ref};
    s.inputs = &send, s.input_count = 1;
  }
  CollectiveFacts facts;
  facts.op = c.op;
  facts.role = receives ? CollectiveRole::recv : CollectiveRole::send;
  facts.where = c.where;
  facts.peers = collective_peers(c.op, c.where.rank, c.where.nranks, c.root_or_peer);
  facts.send_read = e.send_elements > 0;
  s.collective = &facts;
  if (!scan_output(s)) return;
  if (!c.where.known && !log_.said(schema::Once::nccl_comm_unseen))
    warn_once(log_, schema::Once::nccl_comm_unseen,
              "an NCCL communicator was in use before nanscope saw it created; its `comm` id comes from the order "
              "this process first used such communicators (equal across ranks only if they all use them in the "
              "same order)");
}

}  // namespace nanscope

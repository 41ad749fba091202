// Interception of NCCL's collectives (ncclAllReduce, ncclReduceScatter, ncclAllGather,
// ncclBroadcast, ncclBcast, ncclReduce, ncclSend, ncclRecv), its groups (ncclGroupStart /
// ncclGroupEnd) and its communicator creation (ncclCommInitRank, ncclCommInitRankConfig,
// ncclCommInitRankScalable, ncclCommInitAll, ncclCommSplit), by GOT patching as the cuBLAS
// wrappers are (got_patch.hpp). Each collective wrapper gives the call its position on its
// communicator (src/collective.hpp), tells the sink before the call (so sendbuff's state is
// judged while it still holds what is sent), marks the thread as inside the call
// (library_call.hpp: the NCCL kernels launched are the call's), calls the original, and
// tells the sink again after it returned: at once, or at the outermost ncclGroupEnd for a
// call inside a group (the kernels launch there). Arguments, results and status codes are
// never changed; nothing here waits on another rank. docs/multi-gpu.md.
#pragma once
#include <cstddef>
#include <cstdint>

#include "collective.hpp"
#include "got_patch.hpp"
#include "library_call.hpp"

namespace nanscope::nccl {

// One collective call on this rank.
struct CollectiveCall {
  const char* api = nullptr;   // "ncclAllReduce", ...
  CollectiveOp op = CollectiveOp::all_reduce;
  uint64_t call_id = 0;        // the LibraryCall that launched its kernels (ncclGroupEnd's in a group)
  uint64_t stream = 0;
  uint64_t sendbuff = 0, recvbuff = 0;
  uint64_t count = 0;          // as passed (all_gather: sendcount; reduce_scatter: recvcount)
  int datatype = -1;           // ncclDataType_t
  DType dtype = DType::none;   // nccl_scalar_dtype(datatype)
  int red_op = -1;             // ncclRedOp_t, -1 for the ops without one
  int root_or_peer = 0;        // root (broadcast, reduce), peer (send, recv), else 0
  uint64_t comm = 0;
  CommPosition where;          // rank, nranks, comm hash and seq (positioned false: unknown)
  bool positioned = false;
  uint32_t kernels_launched = 0;
  const char* not_scanned = nullptr;  // set for a call that returned success but cannot be scanned
  // The sink's own, from before() to after(): the engine keeps sendbuff's state slot here.
  uint32_t send_ref = 0;
  bool send_ref_set = false;
};

// before(): on the calling thread, before the original, its stream still before the call's
// kernels. after(): once the call's kernels are enqueued (after the call, or the outermost
// ncclGroupEnd), with the thread's marker cleared. Both must be thread-safe; fn == nullptr
// unregisters. Never freed: a wrapper on another thread may still hold the previous one.
struct CollectiveSink {
  void (*before)(void* ctx, CollectiveCall& call) = nullptr;
  void (*after)(void* ctx, const CollectiveCall& call) = nullptr;
  void* ctx = nullptr;
};
void set_collective_sink(const CollectiveSink* sink);

const got::Hook* hooks(std::size_t* count);
// Patches every loaded importer of the NCCL functions (libtorch_cuda.so imports them from
// its libnccl.so.2), never libnccl itself; finds ncclCommUserRank / ncclCommCount next to the
// originals. Cheap when nothing new was loaded.
got::Report patch_all(bool force = false);

// The communicators seen so far (their creation, their call counts).
CommTable& comms();

// For tests: set an original directly (no GOT), the two helpers, get a wrapper by name.
bool set_original(const char* name, void* fn);
void set_helpers(void* comm_user_rank, void* comm_count);
void* wrapper(const char* name);
// What dlsym hands a program looking `name` up (got::Library::adopt): the wrapper, or nullptr.
void* adopt(const char* name, void* fn);

}  // namespace nanscope::nccl

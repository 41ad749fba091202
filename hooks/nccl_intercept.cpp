#include "nccl_intercept.hpp"

#include <atomic>

#include "got_library.hpp"

namespace nanscope::nccl {
namespace {

// NCCL's types as its ABI has them (nccl.h, 2.19 to 2.28): handles are pointers, enums ints,
// ncclUniqueId 128 bytes passed by value. Declared here so nothing needs nccl.h to build.
using Result = int;  // ncclResult_t
constexpr Result kSuccess = 0;
constexpr Result kInProgress = 7;  // a nonblocking communicator: the work may not be enqueued yet
using Comm = void*;
using Stream = void*;
using Config = void*;  // ncclConfig_t*
struct UniqueId {
  char internal[128];
};

#define NS_NCCL_HOOKS(X)                                                                                \
  X(ncclAllReduce) X(ncclReduceScatter) X(ncclAllGather) X(ncclBroadcast) X(ncclBcast) X(ncclReduce)   \
  X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd) X(ncclCommInitRank)                        \
  X(ncclCommInitRankConfig) X(ncclCommInitRankScalable) X(ncclCommInitAll) X(ncclCommSplit)

enum Id : int { NS_NCCL_HOOKS(NS_GOT_ID) kHookCount };
constexpr const char* kNames[] = {NS_NCCL_HOOKS(NS_GOT_NAME)};

using QueryFn = Result (*)(Comm, int*);
std::atomic<QueryFn> g_user_rank{nullptr}, g_count{nullptr};

struct Traits {
  static constexpr std::size_t kCount = kHookCount;
  using Sink = CollectiveSink;
  static const got::Hook* table();
  // libnccl's own calls between its entry points are not the application's collectives.
  static got::Options options(bool force) { return got::options_skipping(force, {"libnccl.so", "libnanscope"}); }
  static void after_walk();
};
using Lib = got::Library<Traits>;

// Plain zero-initialised thread-local: no TLS constructor. Allocated on the thread's first
// group and kept for the thread's life (a few bytes; NCCL groups are per thread).
thread_local CollectiveGroup<CollectiveCall>* t_group = nullptr;
CollectiveGroup<CollectiveCall>& group() {
  if (!t_group) t_group = new CollectiveGroup<CollectiveCall>;
  return *t_group;
}


CommTable& table() {
  static CommTable* t = new CommTable;  // never destroyed: wrappers may run during exit
  return *t;
}

bool query_comm(uint64_t comm, int* rank, int* nranks) {
  const QueryFn user_rank = g_user_rank.load(), count = g_count.load();
  const Comm c = reinterpret_cast<Comm>(comm);
  return user_rank && count && user_rank(c, rank) == kSuccess && count(c, nranks) == kSuccess;
}

void tell_after(const CollectiveSink* sink, const CollectiveCall& c) {
  try {
    if (sink && sink->after) sink->after(sink->ctx, c);
  } catch (...) {  // never into the host application
  }
}

// The common path of every collective: its position, the sink before, the call inside the
// marker, the sink after (now, or at the group's end).
template <class Call>
Result intercept(Id id, CollectiveCall c, Call&& call) {
  c.api = kNames[id];
  c.dtype = nccl_scalar_dtype(c.datatype);
  // Counted whether or not anyone observes, so that every rank numbers the same calls.
  try {
    if (auto pos = table().next(c.comm, c.op, c.root_or_peer, query_comm)) c.where = *pos, c.positioned = true;
  } catch (...) {
  }
  const CollectiveSink* sink = Lib::observer();
  if (!sink || libcall::current()) return call();  // no observer, or nested in another library's call
  try {
    if (sink->before) sink->before(sink->ctx, c);
  } catch (...) {
  }
  libcall::enter(c.api, c.stream);
  const Result r = call();
  const libcall::LibraryCall done = libcall::leave();
  if (r != kSuccess && r != kInProgress) return r;
  if (r == kInProgress) c.not_scanned = "nonblocking communicator (ncclInProgress)";
  c.call_id = done.call_id, c.kernels_launched = done.kernels;
  try {
    if (group().defer(c)) return r;
  } catch (...) {
    c.not_scanned = "group bookkeeping failed";
  }
  tell_after(sink, c);
  return r;
}

CollectiveCall make(CollectiveOp op, const void* send, const void* recv, size_t count, int datatype, int red_op,
                    int root_or_peer, Comm comm, Stream stream) {
  CollectiveCall c;
  c.op = op;
  c.sendbuff = reinterpret_cast<uint64_t>(send), c.recvbuff = reinterpret_cast<uint64_t>(recv);
  c.count = count, c.datatype = datatype, c.red_op = red_op, c.root_or_peer = root_or_peer;
  c.comm = reinterpret_cast<uint64_t>(comm), c.stream = reinterpret_cast<uint64_t>(stream);
  return c;
}

// ---- the wrappers: prototypes as in nccl.h ----

Result w_ncclAllReduce(const void* send, void* recv, size_t count, int datatype, int op, Comm comm, Stream stream) {
  return intercept(k_ncclAllReduce, make(CollectiveOp::all_reduce, send, recv, count, datatype, op, 0, comm, stream),
                   [&] { return Lib::original<decltype(&w_ncclAllReduce)>(k_ncclAllReduce)(send, recv, count, datatype, op, comm, stream); });
}
Result w_ncclReduceScatter(const void* send, void* recv, size_t recvcount, int datatype, int op, Comm comm,
                           Stream stream) {
  return intercept(k_ncclReduceScatter,
                   make(CollectiveOp::reduce_scatter, send, recv, recvcount, datatype, op, 0, comm, stream), [&] {
                     return Lib::original<decltype(&w_ncclReduceScatter)>(k_ncclReduceScatter)(send, recv, recvcount,
                                                                                          datatype, op, comm, stream);
                   });
}
Result w_ncclAllGather(const void* send, void* recv, size_t sendcount, int datatype, Comm comm, Stream stream) {
  return intercept(k_ncclAllGather, make(CollectiveOp::all_gather, send, recv, sendcount, datatype, -1, 0, comm, stream),
                   [&] { return Lib::original<decltype(&w_ncclAllGather)>(k_ncclAllGather)(send, recv, sendcount, datatype, comm, stream); });
}
Result w_ncclBroadcast(const void* send, void* recv, size_t count, int datatype, int root, Comm comm, Stream stream) {
  return intercept(k_ncclBroadcast, make(CollectiveOp::broadcast, send, recv, count, datatype, -1, root, comm, stream),
                   [&] { return Lib::original<decltype(&w_ncclBroadcast)>(k_ncclBroadcast)(send, recv, count, datatype, root, comm, stream); });
}
// The in-place broadcast: buff is both.
Result w_ncclBcast(void* buff, size_t count, int datatype, int root, Comm comm, Stream stream) {
  return intercept(k_ncclBcast, make(CollectiveOp::broadcast, buff, buff, count, datatype, -1, root, comm, stream),
                   [&] { return Lib::original<decltype(&w_ncclBcast)>(k_ncclBcast)(buff, count, datatype, root, comm, stream); });
}
Result w_ncclReduce(const void* send, void* recv, size_t count, int datatype, int op, int root, Comm comm,
                    Stream stream) {
  return intercept(k_ncclReduce, make(CollectiveOp::reduce, send, recv, count, datatype, op, root, comm, stream), [&] {
    return Lib::original<decltype(&w_ncclReduce)>(k_ncclReduce)(send, recv, count, datatype, op, root, comm, stream);
  });
}
Result w_ncclSend(const void* send, size_t count, int datatype, int peer, Comm comm, Stream stream) {
  return intercept(k_ncclSend, make(CollectiveOp::send, send, nullptr, count, datatype, -1, peer, comm, stream),
                   [&] { return Lib::original<decltype(&w_ncclSend)>(k_ncclSend)(send, count, datatype, peer, comm, stream); });
}
Result w_ncclRecv(void* recv, size_t count, int datatype, int peer, Comm comm, Stream stream) {
  return intercept(k_ncclRecv, make(CollectiveOp::recv, nullptr, recv, count, datatype, -1, peer, comm, stream),
                   [&] { return Lib::original<decltype(&w_ncclRecv)>(k_ncclRecv)(recv, count, datatype, peer, comm, stream); });
}

Result w_ncclGroupStart() {
  const Result r = Lib::original<decltype(&w_ncclGroupStart)>(k_ncclGroupStart)();
  if (r == kSuccess) try {
      group().start();
    } catch (...) {
    }
  return r;
}

// The group's kernels launch here: the marker is open for them, and the calls made inside the
// group are told to the sink once it returned, each named after this call's kernels.
Result w_ncclGroupEnd() {
  const bool open = t_group && t_group->open();
  const CollectiveSink* sink = Lib::observer();
  const bool mark = open && sink && !libcall::current() && libcall::enter(kNames[k_ncclGroupEnd], 0);
  const Result r = Lib::original<decltype(&w_ncclGroupEnd)>(k_ncclGroupEnd)();
  const libcall::LibraryCall done = mark ? libcall::leave() : libcall::LibraryCall{};
  if (!open) return r;
  try {
    std::vector<CollectiveCall> calls = t_group->end(r == kSuccess || r == kInProgress);
    for (CollectiveCall& c : calls) {
      c.call_id = done.call_id, c.kernels_launched = done.kernels;
      if (r == kInProgress && !c.not_scanned) c.not_scanned = "nonblocking communicator (ncclInProgress)";
      tell_after(sink, c);
    }
  } catch (...) {
  }
  return r;
}

uint64_t id_hash(const UniqueId& id) { return hash_bytes(id.internal, sizeof(id.internal)); }

void note_init(Result r, Comm* comm, uint64_t hash, int rank, int nranks) {
  if ((r != kSuccess && r != kInProgress) || !comm || !*comm) return;
  try {
    table().on_init(reinterpret_cast<uint64_t>(*comm), hash, rank, nranks);
  } catch (...) {
  }
}

Result w_ncclCommInitRank(Comm* comm, int nranks, UniqueId id, int rank) {
  const Result r = Lib::original<decltype(&w_ncclCommInitRank)>(k_ncclCommInitRank)(comm, nranks, id, rank);
  note_init(r, comm, id_hash(id), rank, nranks);
  return r;
}
Result w_ncclCommInitRankConfig(Comm* comm, int nranks, UniqueId id, int rank, Config config) {
  const Result r = Lib::original<decltype(&w_ncclCommInitRankConfig)>(k_ncclCommInitRankConfig)(comm, nranks, id, rank, config);
  note_init(r, comm, id_hash(id), rank, nranks);
  return r;
}
Result w_ncclCommInitRankScalable(Comm* comm, int nranks, int rank, int n_ids, UniqueId* ids, Config config) {
  const Result r =
      Lib::original<decltype(&w_ncclCommInitRankScalable)>(k_ncclCommInitRankScalable)(comm, nranks, rank, n_ids, ids, config);
  if (ids && n_ids > 0) note_init(r, comm, hash_bytes(ids, sizeof(UniqueId) * static_cast<size_t>(n_ids)), rank, nranks);
  return r;
}
// One process, every rank: the communicators of one call share a hash no other process has.
Result w_ncclCommInitAll(Comm* comms, int ndev, const int* devlist) {
  static std::atomic<uint64_t> calls{0};
  const Result r = Lib::original<decltype(&w_ncclCommInitAll)>(k_ncclCommInitAll)(comms, ndev, devlist);
  if (r != kSuccess || !comms) return r;
  const uint64_t words[2] = {0x696e6974616c6cull /* "initall" */, calls.fetch_add(1)};
  for (int i = 0; i < ndev; ++i) note_init(r, &comms[i], hash_bytes(words, sizeof(words)), i, ndev);
  return r;
}
Result w_ncclCommSplit(Comm comm, int color, int key, Comm* newcomm, Config config) {
  const Result r = Lib::original<decltype(&w_ncclCommSplit)>(k_ncclCommSplit)(comm, color, key, newcomm, config);
  if (r != kSuccess && r != kInProgress) return r;
  try {
    int rank = -1, nranks = 0;
    const uint64_t child = newcomm ? reinterpret_cast<uint64_t>(*newcomm) : 0;
    if (child && !query_comm(child, &rank, &nranks)) rank = -1, nranks = 0;  // asked again at first use
    table().on_split(reinterpret_cast<uint64_t>(comm), child, color, rank, nranks);
  } catch (...) {
  }
  return r;
}

const got::Hook kHooks[] = {NS_NCCL_HOOKS(NS_GOT_HOOK)};
const got::Hook* Traits::table() { return kHooks; }

// ncclCommUserRank and ncclCommCount beside any original (never loading a library).
void Traits::after_walk() {
  for (int i = 0; i < kHookCount && !(g_user_rank.load() && g_count.load()); ++i) {
    void* known = Lib::originals[i].load();
    if (!g_user_rank.load())
      if (void* fn = got::sibling_symbol(known, "ncclCommUserRank")) g_user_rank.store(reinterpret_cast<QueryFn>(fn));
    if (!g_count.load())
      if (void* fn = got::sibling_symbol(known, "ncclCommCount")) g_count.store(reinterpret_cast<QueryFn>(fn));
  }
}

}  // namespace

void set_collective_sink(const CollectiveSink* sink) { Lib::observe(sink); }

const got::Hook* hooks(std::size_t* count) { return Lib::hooks(count); }

got::Report patch_all(bool force) { return Lib::patch_all(force); }

CommTable& comms() { return table(); }

bool set_original(const char* name, void* fn) { return Lib::set_original(name, fn); }

void set_helpers(void* comm_user_rank, void* comm_count) {
  g_user_rank.store(reinterpret_cast<QueryFn>(comm_user_rank));
  g_count.store(reinterpret_cast<QueryFn>(comm_count));
}

void* wrapper(const char* name) { return Lib::wrapper(name); }

void* adopt(const char* name, void* fn) { return Lib::adopt(name, fn); }

}  // namespace nanscope::nccl

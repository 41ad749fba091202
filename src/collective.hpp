// NCCL collectives as data, without NCCL: what each collective reads and writes on a rank
// (the extent table), which ranks' data reaches its output, the element types nanscope scans,
// communicator identity (a hash of the ncclUniqueId, equal on every rank of a communicator),
// per-communicator sequence numbers, the group buffer that defers scans to ncclGroupEnd, and
// the facts a finding carries (kept for it in src/launch_facts.hpp). hooks/nccl_intercept.cpp
// fills these from the wrapped calls; docs/multi-gpu.md describes the whole path. Pure and thread-safe where it says so.
#pragma once
#include "lock_rank.hpp"
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "signature.hpp"

namespace nanscope {

enum class CollectiveOp : uint8_t { all_reduce, reduce_scatter, all_gather, broadcast, reduce, send, recv };
const char* collective_op_name(CollectiveOp op);  // the log's collective.op string

// ncclDataType_t (nccl.h, NCCL 2.19+) to the DType of its scalars; none for the integer types
// (no NaN) and for values this build does not know.
DType nccl_scalar_dtype(int nccl_datatype);

// What one collective call touches on the calling rank, in elements of its datatype:
// all_reduce     send count,          recv count
// reduce_scatter send count * nranks, recv count
// all_gather     send count,          recv count * nranks
// broadcast      send count (root),   recv count
// reduce         send count,          recv count (root only)
// send           send count;          recv: count
// `ok` false (with `why`) for a rank or root outside [0, nranks), nranks < 1, or an overflow.
struct CollectiveExtent {
  bool ok = false;
  const char* why = "";
  uint64_t send_elements = 0;  // 0: sendbuff is not read on this rank
  uint64_t recv_elements = 0;  // 0: recvbuff is not written on this rank
};
CollectiveExtent collective_extent(CollectiveOp op, uint64_t count, int rank, int nranks, int root_or_peer);

// The ranks whose data reaches recvbuff on `rank` (all of them for all_reduce, all_gather,
// reduce_scatter and for reduce on its root; the root for broadcast; the peer for recv) or,
// for a rank that only sends (send, reduce off the root), the ranks its sendbuff goes to.
std::vector<int> collective_peers(CollectiveOp op, int rank, int nranks, int root_or_peer);

// Communicator identity: FNV-1a 64 of the ncclUniqueId's bytes (of all of them in order for
// ncclCommInitRankScalable); a split child's from its parent's hash, the parent's split count
// and the colour (what every member of the child shares). comm_hex: the log's 16 hex digits.
uint64_t hash_bytes(const void* data, std::size_t size, uint64_t seed = 0xcbf29ce484222325ull);
uint64_t split_hash(uint64_t parent, uint64_t split_index, int color);
std::string comm_hex(uint64_t hash);

// The position of one call in its communicator's order, as every rank counts it.
struct CommPosition {
  uint64_t hash = 0;
  int rank = -1, nranks = 0;
  uint64_t seq = 0;
  bool known = false;  // the communicator's creation was seen (hash from its unique id)
};

// Communicators by handle, and their call counts. Collectives (all ranks call them in the same
// order, NCCL requires it) count per communicator; send and recv count per (communicator,
// peer, direction), which is NCCL's own matching: the k-th send from a to b is the k-th recv
// on b from a, whatever other traffic either rank has. Thread-safe.
class CommTable {
 public:
  // rank and nranks of a handle whose creation was not seen: asked (ncclCommUserRank,
  // ncclCommCount) once; false when they cannot be.
  using Query = std::function<bool(uint64_t comm, int* rank, int* nranks)>;

  void on_init(uint64_t comm, uint64_t hash, int rank, int nranks);
  // A split: the child's hash from the parent's; rank/nranks of the child (queried by the caller).
  void on_split(uint64_t parent, uint64_t child, int color, int rank, int nranks);
  // This call's position; counts it. A communicator not seen created gets a hash from the order
  // in which this process first used such communicators, with nranks (equal on every rank only
  // when all ranks first use them in the same order) and `known` false.
  std::optional<CommPosition> next(uint64_t comm, CollectiveOp op, int peer, const Query& query);
  uint32_t unseen() const;  // communicators used but never seen created

 private:
  struct Comm {
    uint64_t hash = 0;
    int rank = -1, nranks = 0;
    bool known = false;
    uint64_t collectives = 0, splits = 0;
    std::map<std::pair<int, bool>, uint64_t> p2p;  // (peer, sending) -> calls so far
  };
  mutable Ranked<std::mutex, LockLevel::container> mu_{"CommTable::mu_"};
  std::unordered_map<uint64_t, Comm> comms_;
  uint32_t unseen_ = 0;
};

// One thread's NCCL group nesting (ncclGroupStart / ncclGroupEnd nest; only the outermost end
// launches): calls made inside a group wait for the outermost end, whose success releases them
// for scanning, whose failure drops them. Not thread-safe: one per thread, as NCCL's groups are.
template <class Call>
class CollectiveGroup {
 public:
  bool open() const { return depth_ > 0; }
  void start() { ++depth_; }
  // A call made now: kept when a group is open (true), else the caller handles it at once.
  bool defer(const Call& c) {
    if (!open()) return false;
    pending_.push_back(c);
    return true;
  }
  // The end of a group: the calls to scan now (empty unless this closed the outermost group
  // and it succeeded). An end without a start is NCCL's error to report: nothing changes.
  std::vector<Call> end(bool succeeded) {
    if (depth_ == 0 || --depth_ > 0) return {};
    std::vector<Call> out;
    out.swap(pending_);
    if (!succeeded) out.clear();
    return out;
  }

 private:
  int depth_ = 0;
  std::vector<Call> pending_;
};

// What a finding whose scan was a collective's buffer says about the collective.
enum class CollectiveRole : uint8_t { recv, send };
struct CollectiveFacts {
  CollectiveOp op = CollectiveOp::all_reduce;
  CollectiveRole role = CollectiveRole::recv;
  CommPosition where;
  std::vector<int> peers;
  bool send_read = false;  // this rank's sendbuff is read by the call (not: recv, broadcast off the root)
};

}  // namespace nanscope

#include "collective.hpp"

#include <fmt/format.h>

#include "log_schema.hpp"

namespace nanscope {

const char* collective_op_name(CollectiveOp op) {
  namespace s = schema::collective_op_str;
  switch (op) {
    case CollectiveOp::all_reduce: return s::all_reduce;
    case CollectiveOp::reduce_scatter: return s::reduce_scatter;
    case CollectiveOp::all_gather: return s::all_gather;
    case CollectiveOp::broadcast: return s::broadcast;
    case CollectiveOp::reduce: return s::reduce;
    case CollectiveOp::send: return s::send;
    case CollectiveOp::recv: return s::recv;
  }
  return "?";
}

DType nccl_scalar_dtype(int nccl_datatype) {
  // ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9, ncclFloat8e4m3 = 10,
  // ncclFloat8e5m2 = 11; 0..5 are the integer types.
  switch (nccl_datatype) {
    case 6: return DType::f16;
    case 7: return DType::f32;
    case 8: return DType::f64;
    case 9: return DType::bf16;
    case 10: return DType::f8e4m3;
    case 11: return DType::f8e5m2;
    default: return DType::none;
  }
}

CollectiveExtent collective_extent(CollectiveOp op, uint64_t count, int rank, int nranks, int root_or_peer) {
  CollectiveExtent e;
  if (nranks < 1) return e.why = "nranks below 1", e;
  if (rank < 0 || rank >= nranks) return e.why = "rank outside the communicator", e;
  if (root_or_peer < 0 || root_or_peer >= nranks) return e.why = "root or peer outside the communicator", e;
  const uint64_t n = static_cast<uint64_t>(nranks);
  if (count > UINT64_MAX / n) return e.why = "element count overflows", e;
  const bool root = rank == root_or_peer;
  switch (op) {
    case CollectiveOp::all_reduce: e.send_elements = count, e.recv_elements = count; break;
    case CollectiveOp::reduce_scatter: e.send_elements = count * n, e.recv_elements = count; break;
    case CollectiveOp::all_gather: e.send_elements = count, e.recv_elements = count * n; break;
    case CollectiveOp::broadcast: e.send_elements = root ? count : 0, e.recv_elements = count; break;
    case CollectiveOp::reduce: e.send_elements = count, e.recv_elements = root ? count : 0; break;
    case CollectiveOp::send: e.send_elements = count; break;
    case CollectiveOp::recv: e.recv_elements = count; break;
  }
  e.ok = true;
  return e;
}

std::vector<int> collective_peers(CollectiveOp op, int rank, int nranks, int root_or_peer) {
  std::vector<int> all;
  for (int r = 0; r < nranks; ++r) all.push_back(r);
  switch (op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather: return all;
    case CollectiveOp::reduce: return rank == root_or_peer ? all : std::vector<int>{root_or_peer};
    case CollectiveOp::broadcast:
    case CollectiveOp::send:
    case CollectiveOp::recv: return {root_or_peer};
  }
  return {};
}

uint64_t hash_bytes(const void* data, std::size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t split_hash(uint64_t parent, uint64_t split_index, int color) {
  const uint64_t words[3] = {parent, split_index, static_cast<uint64_t>(static_cast<int64_t>(color))};
  return hash_bytes(words, sizeof(words));
}

std::string comm_hex(uint64_t hash) { return fmt::format("{:016x}", hash); }

void CommTable::on_init(uint64_t comm, uint64_t hash, int rank, int nranks) {
  std::lock_guard lock(mu_);
  Comm& c = comms_[comm];
  c = Comm{};  // a handle reused after a destroy is a new communicator
  c.hash = hash, c.rank = rank, c.nranks = nranks, c.known = true;
}

void CommTable::on_split(uint64_t parent, uint64_t child, int color, int rank, int nranks) {
  std::lock_guard lock(mu_);
  const auto p = comms_.find(parent);
  // Every member counts the split (NCCL_SPLIT_NOCOLOR members too): the index stays equal.
  const uint64_t index = p == comms_.end() ? 0 : p->second.splits++;
  if (!child) return;
  Comm& c = comms_[child];
  c = Comm{};
  c.rank = rank, c.nranks = nranks;
  c.known = p != comms_.end() && p->second.known;
  c.hash = split_hash(p == comms_.end() ? 0 : p->second.hash, index, color);
}

std::optional<CommPosition> CommTable::next(uint64_t comm, CollectiveOp op, int peer, const Query& query) {
  std::lock_guard lock(mu_);
  auto it = comms_.find(comm);
  if (it == comms_.end()) {
    int rank = -1, nranks = 0;
    if (!query || !query(comm, &rank, &nranks)) return std::nullopt;
    Comm c;
    c.rank = rank, c.nranks = nranks;
    const uint64_t words[3] = {0x756e7365656eull /* "unseen" */, unseen_++, static_cast<uint64_t>(nranks)};
    c.hash = hash_bytes(words, sizeof(words));
    it = comms_.emplace(comm, c).first;
  }
  Comm& c = it->second;
  if (c.rank < 0 && query) query(comm, &c.rank, &c.nranks);  // a split child not ready when it was made
  if (c.rank < 0) return std::nullopt;
  CommPosition pos{c.hash, c.rank, c.nranks, 0, c.known};
  if (op == CollectiveOp::send || op == CollectiveOp::recv) pos.seq = c.p2p[{peer, op == CollectiveOp::send}]++;
  else pos.seq = c.collectives++;
  return pos;
}

uint32_t CommTable::unseen() const {
  std::lock_guard lock(mu_);
  return unseen_;
}

}  // namespace nanscope

// NCCL collectives as data (src/collective.hpp): the per-rank extent table, the peers, the
// datatype mapping, communicator hashes, sequence numbers, the group buffer and the facts book.
#include "collective.hpp"

#include <gtest/gtest.h>

#include <thread>

using namespace nanscope;

TEST(CollectiveExtent, Table) {
  using Op = CollectiveOp;
  struct Row { Op op; int rank, root; uint64_t send, recv; };
  // count 10, 4 ranks
  const Row rows[] = {
      {Op::all_reduce, 2, 0, 10, 10},     {Op::reduce_scatter, 2, 0, 40, 10}, {Op::all_gather, 2, 0, 10, 40},
      {Op::broadcast, 1, 1, 10, 10},      {Op::broadcast, 2, 1, 0, 10},       {Op::reduce, 3, 3, 10, 10},
      {Op::reduce, 2, 3, 10, 0},          {Op::send, 0, 1, 10, 0},            {Op::recv, 1, 0, 0, 10},
  };
  for (const Row& r : rows) {
    const CollectiveExtent e = collective_extent(r.op, 10, r.rank, 4, r.root);
    ASSERT_TRUE(e.ok) << collective_op_name(r.op);
    EXPECT_EQ(e.send_elements, r.send) << collective_op_name(r.op) << " rank " << r.rank;
    EXPECT_EQ(e.recv_elements, r.recv) << collective_op_name(r.op) << " rank " << r.rank;
  }
}

TEST(CollectiveExtent, Refusals) {
  EXPECT_FALSE(collective_extent(CollectiveOp::all_reduce, 1, 0, 0, 0).ok);
  EXPECT_FALSE(collective_extent(CollectiveOp::all_reduce, 1, 4, 4, 0).ok);
  EXPECT_FALSE(collective_extent(CollectiveOp::all_reduce, 1, -1, 4, 0).ok);
  EXPECT_FALSE(collective_extent(CollectiveOp::broadcast, 1, 0, 4, 4).ok);
  const CollectiveExtent e = collective_extent(CollectiveOp::all_gather, UINT64_MAX / 2, 0, 4, 0);
  EXPECT_FALSE(e.ok);
  EXPECT_STREQ(e.why, "element count overflows");
}

TEST(CollectivePeers, WhoseDataArrives) {
  using V = std::vector<int>;
  EXPECT_EQ(collective_peers(CollectiveOp::all_reduce, 1, 3, 0), (V{0, 1, 2}));
  EXPECT_EQ(collective_peers(CollectiveOp::all_gather, 0, 2, 0), (V{0, 1}));
  EXPECT_EQ(collective_peers(CollectiveOp::reduce_scatter, 0, 2, 0), (V{0, 1}));
  EXPECT_EQ(collective_peers(CollectiveOp::broadcast, 2, 3, 1), (V{1}));
  EXPECT_EQ(collective_peers(CollectiveOp::reduce, 1, 3, 1), (V{0, 1, 2}));  // the root gets everyone's
  EXPECT_EQ(collective_peers(CollectiveOp::reduce, 0, 3, 1), (V{1}));        // off the root: where it goes
  EXPECT_EQ(collective_peers(CollectiveOp::send, 0, 2, 1), (V{1}));
  EXPECT_EQ(collective_peers(CollectiveOp::recv, 1, 2, 0), (V{0}));
}

TEST(CollectiveDtype, FloatTypesOnly) {
  EXPECT_EQ(nccl_scalar_dtype(6), DType::f16);
  EXPECT_EQ(nccl_scalar_dtype(7), DType::f32);
  EXPECT_EQ(nccl_scalar_dtype(8), DType::f64);
  EXPECT_EQ(nccl_scalar_dtype(9), DType::bf16);
  EXPECT_EQ(nccl_scalar_dtype(10), DType::f8e4m3);
  EXPECT_EQ(nccl_scalar_dtype(11), DType::f8e5m2);
  for (int integer : {0, 1, 2, 3, 4, 5}) EXPECT_EQ(nccl_scalar_dtype(integer), DType::none) << integer;
  EXPECT_EQ(nccl_scalar_dtype(12), DType::none);
  EXPECT_EQ(nccl_scalar_dtype(-1), DType::none);
}

TEST(CommHash, SixteenHexDigitsFromTheUniqueId) {
  char id_a[128] = {1, 2, 3}, id_b[128] = {1, 2, 4};
  const uint64_t a = hash_bytes(id_a, sizeof(id_a)), b = hash_bytes(id_b, sizeof(id_b));
  EXPECT_NE(a, b);
  EXPECT_EQ(a, hash_bytes(id_a, sizeof(id_a)));
  EXPECT_EQ(comm_hex(0x12ab), "00000000000012ab");
  EXPECT_EQ(comm_hex(a).size(), 16u);
  EXPECT_NE(split_hash(a, 0, 1), split_hash(a, 0, 2));
  EXPECT_NE(split_hash(a, 0, 1), split_hash(a, 1, 1));
}

TEST(CommTable, SequencePerCommunicatorInCallOrder) {
  CommTable t;
  t.on_init(0x100, 0xaaaa, 1, 2);
  t.on_init(0x200, 0xbbbb, 0, 4);
  auto next = [&](uint64_t comm) { return t.next(comm, CollectiveOp::all_reduce, 0, nullptr)->seq; };
  EXPECT_EQ(next(0x100), 0u);
  EXPECT_EQ(next(0x100), 1u);
  EXPECT_EQ(next(0x200), 0u);  // its own count
  EXPECT_EQ(t.next(0x100, CollectiveOp::all_gather, 0, nullptr)->seq, 2u);  // every collective counts
  const CommPosition p = *t.next(0x200, CollectiveOp::broadcast, 3, nullptr);
  EXPECT_EQ(p.hash, 0xbbbbu);
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.nranks, 4);
  EXPECT_EQ(p.seq, 1u);
  EXPECT_TRUE(p.known);
  t.on_init(0x100, 0xcccc, 0, 2);  // a handle reused by a new communicator starts again
  EXPECT_EQ(next(0x100), 0u);
}

// Two ranks' tables, each calling in its own order: the same collective gets the same seq,
// and send/recv pair by (peer, direction) however the other traffic interleaves.
TEST(CommTable, RanksAgreeOnCollectivesAndPointToPoint) {
  CommTable r0, r1;
  r0.on_init(0x10, 0x77, 0, 2);
  r1.on_init(0x90, 0x77, 1, 2);  // another handle value, the same communicator
  EXPECT_EQ(r0.next(0x10, CollectiveOp::send, 1, nullptr)->seq, 0u);  // pipeline: rank 0 sends twice
  EXPECT_EQ(r0.next(0x10, CollectiveOp::send, 1, nullptr)->seq, 1u);
  EXPECT_EQ(r0.next(0x10, CollectiveOp::all_reduce, 0, nullptr)->seq, 0u);
  EXPECT_EQ(r1.next(0x90, CollectiveOp::all_reduce, 0, nullptr)->seq, 0u);  // rank 1 reduces first
  EXPECT_EQ(r1.next(0x90, CollectiveOp::recv, 0, nullptr)->seq, 0u);
  EXPECT_EQ(r1.next(0x90, CollectiveOp::recv, 0, nullptr)->seq, 1u);
  EXPECT_EQ(r1.next(0x90, CollectiveOp::send, 0, nullptr)->seq, 0u);  // its own direction
}

TEST(CommTable, SplitChildrenShareAHash) {
  CommTable r0, r1;
  r0.on_init(1, 0x55, 0, 2);
  r1.on_init(1, 0x55, 1, 2);
  r0.on_split(1, 0x20, 7, 0, 2);
  r1.on_split(1, 0x30, 7, 1, 2);
  const CommPosition a = *r0.next(0x20, CollectiveOp::all_reduce, 0, nullptr);
  const CommPosition b = *r1.next(0x30, CollectiveOp::all_reduce, 0, nullptr);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, 0x55u);
  EXPECT_TRUE(a.known);
  r0.on_split(1, 0, -1, -1, 0);  // NCCL_SPLIT_NOCOLOR: no child, but the split is counted
  r0.on_split(1, 0x21, 7, 0, 2);
  r1.on_split(1, 0, -1, -1, 0);
  r1.on_split(1, 0x31, 7, 1, 2);
  EXPECT_EQ(r0.next(0x21, CollectiveOp::all_reduce, 0, nullptr)->hash,
            r1.next(0x31, CollectiveOp::all_reduce, 0, nullptr)->hash);
  EXPECT_NE(r0.next(0x21, CollectiveOp::all_reduce, 0, nullptr)->hash, a.hash);
}

TEST(CommTable, UnseenCommunicatorAskedOnce) {
  CommTable t;
  int asked = 0;
  const CommTable::Query query = [&](uint64_t, int* rank, int* nranks) { return ++asked, *rank = 1, *nranks = 2, true; };
  EXPECT_FALSE(t.next(0x5, CollectiveOp::all_reduce, 0, nullptr));  // cannot be asked: no position
  const CommPosition p = *t.next(0x5, CollectiveOp::all_reduce, 0, query);
  EXPECT_FALSE(p.known);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.seq, 0u);
  EXPECT_EQ(t.next(0x5, CollectiveOp::all_reduce, 0, query)->seq, 1u);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(t.unseen(), 1u);
  CommTable other;  // another rank, first using its missed communicator too: the same id
  EXPECT_EQ(other.next(0x99, CollectiveOp::all_reduce, 0, query)->hash, p.hash);
}

TEST(CommTable, ThreadsCountEveryCall) {
  CommTable t;
  t.on_init(1, 2, 0, 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int j = 0; j < 1000; ++j) t.next(1, CollectiveOp::all_reduce, 0, nullptr);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.next(1, CollectiveOp::all_reduce, 0, nullptr)->seq, 4000u);
}

TEST(CollectiveGroup, CallsWaitForTheOutermostEnd) {
  CollectiveGroup<int> g;
  EXPECT_FALSE(g.defer(1));  // no group: at once
  g.start();
  EXPECT_TRUE(g.defer(1));
  g.start();  // nested
  EXPECT_TRUE(g.defer(2));
  EXPECT_TRUE(g.end(true).empty());  // the inner end launches nothing
  EXPECT_TRUE(g.defer(3));
  EXPECT_EQ(g.end(true), (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(g.open());
  EXPECT_TRUE(g.end(true).empty());  // an end without a start changes nothing
  g.start();
  g.defer(4);
  EXPECT_TRUE(g.end(false).empty());  // a failed group: nothing to scan
  g.start();
  EXPECT_EQ(g.end(true), std::vector<int>{});
}

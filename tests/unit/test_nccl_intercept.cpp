// The NCCL wrappers with fake originals (no GPU, no NCCL, no GOT): arguments and results pass
// through unchanged, the sink hears each call before and after it, a call inside a group is
// told after the outermost ncclGroupEnd (named after that call's kernels), sequence numbers
// count every call per communicator, and the init hooks learn rank, nranks and the id's hash.
#include "nccl_intercept.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace nanscope;

namespace {

using Result = int;
struct UniqueId {
  char internal[128];
};
using AllReduceFn = Result (*)(const void*, void*, size_t, int, int, void*, void*);
using SendFn = Result (*)(const void*, size_t, int, int, void*, void*);
using RecvFn = Result (*)(void*, size_t, int, int, void*, void*);
using GroupFn = Result (*)();
using InitRankFn = Result (*)(void**, int, UniqueId, int);
using SplitFn = Result (*)(void*, int, int, void**, void*);

std::vector<std::string> g_events;  // "before:<api>", "call:<api>", "after:<api>"
std::vector<nccl::CollectiveCall> g_after;
Result g_result = 0;
int g_kernels_at_end = 0;

void before(void*, nccl::CollectiveCall& c) {
  g_events.push_back(std::string("before:") + c.api);
  c.send_ref = 41, c.send_ref_set = true;  // the sink's own, carried to after()
}
void after(void*, const nccl::CollectiveCall& c) {
  g_events.push_back(std::string("after:") + c.api);
  g_after.push_back(c);
}
const nccl::CollectiveSink kSink{before, after, nullptr};

const void* g_send = nullptr;
void* g_recv = nullptr;
Result fake_all_reduce(const void* s, void* r, size_t, int, int, void*, void*) {
  g_send = s, g_recv = r;
  const libcall::LibraryCall* call = libcall::current();
  g_events.push_back(std::string("call:") + (call ? call->api : "(no marker)"));
  libcall::note_kernel_launch();  // the NCCL kernel, outside a group
  return g_result;
}
Result fake_send(const void*, size_t, int, int, void*, void*) { return g_events.push_back("call:ncclSend"), 0; }
Result fake_recv(void*, size_t, int, int, void*, void*) { return g_events.push_back("call:ncclRecv"), 0; }
Result fake_group_start() { return 0; }
Result fake_group_end() {
  g_events.push_back("call:ncclGroupEnd");
  for (int i = 0; i < g_kernels_at_end; ++i) libcall::note_kernel_launch();  // the group's kernels launch here
  return g_result;
}
int g_next_comm = 0x1000;
Result fake_init_rank(void** comm, int, UniqueId, int) { return *comm = reinterpret_cast<void*>(g_next_comm++), 0; }
Result fake_split(void*, int, int, void** child, void*) { return *child = reinterpret_cast<void*>(g_next_comm++), 0; }
Result fake_user_rank(void*, int* rank) { return *rank = 1, 0; }
Result fake_count(void*, int* n) { return *n = 2, 0; }

template <class Fn>
Fn hooked(const char* name, void* fake) {
  nccl::set_original(name, fake);
  return reinterpret_cast<Fn>(nccl::wrapper(name));
}

struct NcclIntercept : ::testing::Test {
  void SetUp() override {
    g_events.clear(), g_after.clear();
    g_result = 0, g_kernels_at_end = 0;
    nccl::set_collective_sink(&kSink);
    nccl::set_helpers(reinterpret_cast<void*>(&fake_user_rank), reinterpret_cast<void*>(&fake_count));
  }
  void TearDown() override { nccl::set_collective_sink(nullptr); }
  void* new_comm(int rank, int nranks, char id_byte) {
    auto init = hooked<InitRankFn>("ncclCommInitRank", reinterpret_cast<void*>(&fake_init_rank));
    UniqueId id{};
    id.internal[0] = id_byte;
    void* comm = nullptr;
    EXPECT_EQ(init(&comm, nranks, id, rank), 0);
    return comm;
  }
};

}  // namespace

TEST_F(NcclIntercept, EveryHookHasAWrapper) {
  std::size_t n = 0;
  const got::Hook* h = nccl::hooks(&n);
  EXPECT_EQ(n, 15u);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(nccl::wrapper(h[i].name), h[i].wrapper) << h[i].name;
  EXPECT_EQ(nccl::wrapper("ncclAlltoAll"), nullptr);
}

TEST_F(NcclIntercept, AllReduceBeforeCallAfter) {
  void* comm = new_comm(1, 4, 'a');
  auto all_reduce = hooked<AllReduceFn>("ncclAllReduce", reinterpret_cast<void*>(&fake_all_reduce));
  float buf[8];
  ASSERT_EQ(all_reduce(buf, buf, 8, /*ncclBfloat16*/ 9, /*ncclSum*/ 0, comm, reinterpret_cast<void*>(0x77)), 0);
  EXPECT_EQ(g_send, buf);
  EXPECT_EQ(g_recv, buf);
  EXPECT_EQ(g_events, (std::vector<std::string>{"before:ncclAllReduce", "call:ncclAllReduce", "after:ncclAllReduce"}));
  ASSERT_EQ(g_after.size(), 1u);
  const nccl::CollectiveCall& c = g_after[0];
  EXPECT_EQ(c.op, CollectiveOp::all_reduce);
  EXPECT_EQ(c.dtype, DType::bf16);
  EXPECT_EQ(c.count, 8u);
  EXPECT_EQ(c.stream, 0x77u);
  EXPECT_EQ(c.sendbuff, c.recvbuff);
  EXPECT_TRUE(c.positioned);
  EXPECT_TRUE(c.where.known);
  EXPECT_EQ(c.where.rank, 1);
  EXPECT_EQ(c.where.nranks, 4);
  EXPECT_EQ(c.where.seq, 0u);
  UniqueId id{};
  id.internal[0] = 'a';
  EXPECT_EQ(c.where.hash, hash_bytes(id.internal, sizeof(id.internal)));
  EXPECT_EQ(c.kernels_launched, 1u);
  EXPECT_NE(c.call_id, 0u);
  EXPECT_EQ(c.send_ref, 41u);  // what before() kept
  EXPECT_EQ(libcall::current(), nullptr);
  all_reduce(buf, buf, 8, 9, 0, comm, nullptr);
  EXPECT_EQ(g_after[1].where.seq, 1u);
}

TEST_F(NcclIntercept, FailedCallPassesThroughUntold) {
  void* comm = new_comm(0, 2, 'b');
  auto all_reduce = hooked<AllReduceFn>("ncclAllReduce", reinterpret_cast<void*>(&fake_all_reduce));
  g_result = 5;  // ncclInvalidUsage
  float buf[2];
  EXPECT_EQ(all_reduce(buf, buf, 2, 7, 0, comm, nullptr), 5);
  EXPECT_TRUE(g_after.empty());
  g_result = 0;
  all_reduce(buf, buf, 2, 7, 0, comm, nullptr);
  EXPECT_EQ(g_after.at(0).where.seq, 1u);  // the failed call was counted: every rank counts it too
  g_result = 7;  // ncclInProgress: told, but not to be scanned
  EXPECT_EQ(all_reduce(buf, buf, 2, 7, 0, comm, nullptr), 7);
  ASSERT_EQ(g_after.size(), 2u);
  EXPECT_NE(g_after[1].not_scanned, nullptr);
}

TEST_F(NcclIntercept, GroupDefersToTheOutermostEnd) {
  void* comm = new_comm(0, 2, 'c');
  auto start = hooked<GroupFn>("ncclGroupStart", reinterpret_cast<void*>(&fake_group_start));
  auto end = hooked<GroupFn>("ncclGroupEnd", reinterpret_cast<void*>(&fake_group_end));
  auto send = hooked<SendFn>("ncclSend", reinterpret_cast<void*>(&fake_send));
  auto recv = hooked<RecvFn>("ncclRecv", reinterpret_cast<void*>(&fake_recv));
  g_kernels_at_end = 2;
  float a[4], b[4];
  start();
  send(a, 4, 7, 1, comm, nullptr);
  start();
  recv(b, 4, 7, 1, comm, nullptr);
  end();  // inner: nothing yet
  EXPECT_TRUE(g_after.empty());
  end();
  EXPECT_EQ(g_events, (std::vector<std::string>{"before:ncclSend", "call:ncclSend", "before:ncclRecv", "call:ncclRecv",
                                                "call:ncclGroupEnd", "call:ncclGroupEnd", "after:ncclSend",
                                                "after:ncclRecv"}));
  ASSERT_EQ(g_after.size(), 2u);
  EXPECT_EQ(g_after[0].call_id, g_after[1].call_id);  // both named after ncclGroupEnd's kernels
  EXPECT_EQ(g_after[0].kernels_launched, 2u);
  EXPECT_EQ(g_after[0].op, CollectiveOp::send);
  EXPECT_EQ(g_after[1].recvbuff, reinterpret_cast<uint64_t>(b));
  EXPECT_EQ(g_after[0].where.seq, 0u);  // first send to 1, first recv from 1
  EXPECT_EQ(g_after[1].where.seq, 0u);
  g_result = 3;  // a failed group end: its calls are not told
  start();
  send(a, 4, 7, 1, comm, nullptr);
  end();
  EXPECT_EQ(g_after.size(), 2u);
}

TEST_F(NcclIntercept, SplitAndUnseenCommunicators) {
  void* parent = new_comm(0, 2, 'd');
  auto split = hooked<SplitFn>("ncclCommSplit", reinterpret_cast<void*>(&fake_split));
  void* child = nullptr;
  ASSERT_EQ(split(parent, 3, 0, &child, nullptr), 0);
  auto all_reduce = hooked<AllReduceFn>("ncclAllReduce", reinterpret_cast<void*>(&fake_all_reduce));
  float buf[1];
  all_reduce(buf, buf, 1, 7, 0, child, nullptr);
  const nccl::CollectiveCall c = g_after.back();
  EXPECT_TRUE(c.where.known);
  EXPECT_EQ(c.where.rank, 1);  // from ncclCommUserRank / ncclCommCount (the fakes)
  EXPECT_EQ(c.where.nranks, 2);
  all_reduce(buf, buf, 1, 7, 0, reinterpret_cast<void*>(0xdead), nullptr);  // created before nanscope
  EXPECT_FALSE(g_after.back().where.known);
  EXPECT_TRUE(g_after.back().positioned);
}

TEST_F(NcclIntercept, NoSinkStillCountsAndPassesThrough) {
  void* comm = new_comm(0, 1, 'e');
  nccl::set_collective_sink(nullptr);
  auto all_reduce = hooked<AllReduceFn>("ncclAllReduce", reinterpret_cast<void*>(&fake_all_reduce));
  float buf[1];
  EXPECT_EQ(all_reduce(buf, buf, 1, 7, 0, comm, nullptr), 0);
  EXPECT_EQ(g_events, std::vector<std::string>{"call:(no marker)"});
  nccl::set_collective_sink(&kSink);
  all_reduce(buf, buf, 1, 7, 0, comm, nullptr);
  EXPECT_EQ(g_after.at(0).where.seq, 1u);
}

// The real mechanism: nccl::patch_all rewrites the importer's slot (a lazy PLT entry, as in
// libtorch_cuda.so), finds the original and the helpers in the fake libnccl.so.2, and leaves
// libnccl's call to itself alone.
TEST_F(NcclIntercept, GotPatchesImportersButNotLibnccl) {
  void* caller = dlopen(NANSCOPE_GOT_NCCL_CALLER, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(caller, nullptr) << dlerror();
  using CallFn = int (*)(void*, size_t, void*);
  auto call = reinterpret_cast<CallFn>(dlsym(caller, "nccl_caller_all_reduce"));
  auto internal = reinterpret_cast<CallFn>(dlsym(caller, "nccl_caller_internal"));
  auto* calls = static_cast<int*>(dlsym(caller, "fake_nccl_calls"));  // found through the caller's needed libs
  ASSERT_TRUE(call && internal && calls);
  nccl::set_original("ncclAllReduce", nullptr);  // what the GOT walk finds, not the fakes above
  nccl::set_helpers(nullptr, nullptr);
  const got::Report r = nccl::patch_all(/*force=*/true);
  EXPECT_GE(r.patched, 1u);
  float buf[4];
  void* comm = reinterpret_cast<void*>(0xc0ffee);  // created before nanscope: asked through the helpers
  EXPECT_EQ(call(buf, 4, comm), 0);
  EXPECT_EQ(*calls, 1);
  ASSERT_EQ(g_after.size(), 1u);
  EXPECT_EQ(g_after[0].recvbuff, reinterpret_cast<uint64_t>(buf));
  EXPECT_TRUE(g_after[0].positioned);  // ncclCommUserRank / ncclCommCount found next to the original
  EXPECT_EQ(g_after[0].where.nranks, 1);
  EXPECT_EQ(internal(buf, 4, comm), 0);  // libnccl calling itself: not the application's collective
  EXPECT_EQ(*calls, 2);
  EXPECT_EQ(g_after.size(), 1u);
  std::size_t n = 0;
  const got::Hook* hooks = nccl::hooks(&n);
  EXPECT_GE(got::unpatch_all(hooks, n), 1u);
  EXPECT_EQ(call(buf, 4, comm), 0);  // unpatched: straight to libnccl
  EXPECT_EQ(g_after.size(), 1u);
}

// The cuDNN backend wrappers with fake originals (no GPU, no GOT), driven as cudnn-frontend
// drives libcudnn: status and arguments pass through, only what cuDNN accepted is recorded, a
// mapped execute marks exactly its call, an unmapped one leaves its kernels opaque.
#include "cudnn_intercept.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cudnn_fixture.hpp"

using namespace nanscope;
using namespace nanscope::cudnn;
using namespace cudnn_fixture;

namespace {

int g_status = 0;        // what the fake originals return
uint64_t g_next = 0x9000000;
const char* g_api_inside = nullptr;
int g_kernels = 0;
std::vector<CudnnCall> g_calls;

int fake_create(int, void** out) { return *out = reinterpret_cast<void*>(g_next += 0x40), g_status; }
int fake_status(void*) { return g_status; }
int fake_set(void*, int, int, int64_t, const void*) { return g_status; }
int fake_get(void*, int, int, int64_t requested, int64_t* count, void*) { return *count = requested, g_status; }
int fake_execute(void*, void*, void*) {
  const libcall::LibraryCall* c = libcall::current();
  g_api_inside = c ? c->api : nullptr;
  for (int i = 0; i < g_kernels; ++i) libcall::note_kernel_launch();
  return g_status;
}
int fake_get_stream(void*, void** s) { return *s = reinterpret_cast<void*>(0x5150), 0; }

// Drives the wrappers exactly as cudnn-frontend drives libcudnn.
struct Wrapped {
  using Create = int (*)(int, void**);
  using Set = int (*)(void*, int, int, int64_t, const void*);
  using Get = int (*)(void*, int, int, int64_t, int64_t*, void*);
  using One = int (*)(void*);
  using Execute = int (*)(void*, void*, void*);
  Create create = reinterpret_cast<Create>(wrapper("cudnnBackendCreateDescriptor"));
  Set set = reinterpret_cast<Set>(wrapper("cudnnBackendSetAttribute"));
  Get get = reinterpret_cast<Get>(wrapper("cudnnBackendGetAttribute"));
  One finalize = reinterpret_cast<One>(wrapper("cudnnBackendFinalize"));
  One destroy = reinterpret_cast<One>(wrapper("cudnnBackendDestroyDescriptor"));
  Execute execute = reinterpret_cast<Execute>(wrapper("cudnnBackendExecute"));

  void* make(int type) {
    void* d = nullptr;
    create(type, &d);
    return d;
  }
  void* tensor(int64_t uid, bool keep_uid = true) {
    void* t = make(desc::kTensor);
    const int half = data::kHalf;
    const int saved = g_status;
    if (!keep_uid) g_status = 3;  // cuDNN refuses this one: it must not be recorded
    set(t, attr::kTensorUniqueId, type::kInt64, 1, &uid);
    g_status = saved;
    set(t, attr::kTensorDataType, type::kDataType, 1, &half);
    set(t, attr::kTensorDimensions, type::kInt64, 4, kBhsd.data());
    set(t, attr::kTensorStrides, type::kInt64, 4, kDense.data());
    finalize(t);
    return t;
  }
  // Q, K, V -> SDPA_FWD -> O; heuristics; a plan; returns {plan, variant pack}.
  std::pair<void*, void*> sdpa(bool o_uid = true) {
    void* q = tensor(kQ); void* k = tensor(kK); void* v = tensor(kV); void* o = tensor(kO, o_uid);
    void* op = make(desc::kOpSdpaForward);
    const std::pair<int, void*> attrs[] = {{2800, q}, {2801, k}, {2802, v}, {2803, o}};
    for (auto [a, t] : attrs) set(op, a, type::kBackendDescriptor, 1, &t);
    finalize(op);
    void* graph = make(desc::kOperationGraph);
    set(graph, attr::kOperationGraphOps, type::kBackendDescriptor, 1, &op);
    finalize(graph);
    void* heur = make(desc::kEngineHeur);
    set(heur, attr::kEngineHeurOperationGraph, type::kBackendDescriptor, 1, &graph);
    finalize(heur);
    void* cfg = make(desc::kEngineCfg);
    int64_t n = 0;
    get(heur, attr::kEngineHeurResults, type::kBackendDescriptor, 1, &n, &cfg);
    void* plan = make(desc::kExecutionPlan);
    set(plan, attr::kPlanEngineConfig, type::kBackendDescriptor, 1, &cfg);
    finalize(plan);
    void* vp = make(desc::kVariantPack);
    const int64_t uids[] = {kQ, kK, kV, kO};
    const uint64_t ptrs[] = {kPtrQ, kPtrK, kPtrV, kPtrO};
    set(vp, attr::kVariantPackUniqueIds, type::kInt64, 4, uids);
    set(vp, attr::kVariantPackDataPointers, type::kVoidPtr, 4, ptrs);
    finalize(vp);
    return {plan, vp};
  }
};

class CudnnIntercept : public ::testing::Test {
 protected:
  void SetUp() override {
    set_original("cudnnBackendCreateDescriptor", reinterpret_cast<void*>(&fake_create));
    set_original("cudnnBackendDestroyDescriptor", reinterpret_cast<void*>(&fake_status));
    set_original("cudnnBackendFinalize", reinterpret_cast<void*>(&fake_status));
    set_original("cudnnBackendSetAttribute", reinterpret_cast<void*>(&fake_set));
    set_original("cudnnBackendGetAttribute", reinterpret_cast<void*>(&fake_get));
    set_original("cudnnBackendExecute", reinterpret_cast<void*>(&fake_execute));
    set_get_stream(reinterpret_cast<void*>(&fake_get_stream));
    set_cudnn_sink([](void*, const CudnnCall& c) { g_calls.push_back(c); }, nullptr);
    g_status = 0, g_kernels = 0, g_api_inside = nullptr;
    g_calls.clear();
  }
  void TearDown() override { set_cudnn_sink(nullptr, nullptr); }
  Wrapped w;
};

TEST_F(CudnnIntercept, MappedExecuteMarksItsKernelsAndReportsTheOutput) {
  auto [plan, vp] = w.sdpa();
  g_kernels = 2;
  EXPECT_EQ(w.execute(reinterpret_cast<void*>(0x1), plan, vp), 0);
  EXPECT_STREQ(g_api_inside, "cudnnBackendExecute");
  EXPECT_EQ(libcall::current(), nullptr);
  ASSERT_EQ(g_calls.size(), 1u);
  const CudnnCall& c = g_calls[0];
  EXPECT_EQ(c.execution.why, nullptr);
  EXPECT_EQ(c.stream, 0x5150u);
  EXPECT_EQ(c.kernels_launched, 2u);
  EXPECT_NE(c.call_id, 0u);
  ASSERT_EQ(c.execution.outputs.size(), 1u);
  EXPECT_EQ(c.execution.outputs[0].ptr, kPtrO);
  EXPECT_EQ(c.execution.inputs.size(), 3u);
  w.destroy(vp);
  EXPECT_EQ(w.execute(nullptr, plan, vp), 0);  // a destroyed pack is never mapped again
  ASSERT_EQ(g_calls.size(), 2u);
  EXPECT_STREQ(g_calls[1].execution.why, "variant pack not recorded");
}

TEST_F(CudnnIntercept, RefusedAttributesAreNotRecordedAndUnmappedCallsStayOpaque) {
  auto [plan, vp] = w.sdpa(false);  // cuDNN refused O's UID: the graph has a tensor without one
  EXPECT_EQ(w.execute(nullptr, plan, vp), 0);
  EXPECT_EQ(g_api_inside, nullptr);  // not a library call: its kernels are opaque kernels
  ASSERT_EQ(g_calls.size(), 1u);
  EXPECT_STREQ(g_calls[0].execution.why, "a non-virtual tensor without a UID");
}

TEST_F(CudnnIntercept, StatusPassesThroughAndFailedCallsAreNotReported) {
  auto [plan, vp] = w.sdpa();
  g_status = 8;  // CUDNN_STATUS_EXECUTION_FAILED
  EXPECT_EQ(w.execute(nullptr, plan, vp), 8);
  EXPECT_TRUE(g_calls.empty());
  set_cudnn_sink(nullptr, nullptr);  // nanscope off: a plain call through
  g_status = 0;
  EXPECT_EQ(w.execute(nullptr, plan, vp), 0);
  EXPECT_EQ(g_api_inside, nullptr);
  EXPECT_TRUE(g_calls.empty());
}

TEST_F(CudnnIntercept, HooksNameEveryImportedBackendFunction) {
  std::size_t n = 0;
  const got::Hook* h = hooks(&n);
  std::set<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.insert(h[i].name);
  // What libtorch_cuda.so 2.11 imports from libcudnn.so.9 (nm -D --undefined-only).
  EXPECT_EQ(names, (std::set<std::string>{"cudnnBackendCreateDescriptor", "cudnnBackendDestroyDescriptor",
                                          "cudnnBackendExecute", "cudnnBackendFinalize", "cudnnBackendGetAttribute",
                                          "cudnnBackendSetAttribute"}));
}

// Host cost of what cudnn-frontend does per SDPA execute (a variant pack created, three
// attributes, finalize, execute, destroy), through the wrappers with the store and a sink,
// against the fake originals alone.
TEST_F(CudnnIntercept, HostCostPerExecute) {
  auto [plan, vp0] = w.sdpa();
  const int64_t uids[] = {kQ, kK, kV, kO};
  const uint64_t ptrs[] = {kPtrQ, kPtrK, kPtrV, kPtrO};
  void* ws = nullptr;
  auto per_call = [&](bool wrapped) {
    constexpr int kCalls = 20000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      void* vp = nullptr;
      if (wrapped) {
        w.create(desc::kVariantPack, &vp);
        w.set(vp, attr::kVariantPackWorkspace, type::kVoidPtr, 1, &ws);
        w.set(vp, attr::kVariantPackDataPointers, type::kVoidPtr, 4, ptrs);
        w.set(vp, attr::kVariantPackUniqueIds, type::kInt64, 4, uids);
        w.finalize(vp);
        w.execute(nullptr, plan, vp);
        w.destroy(vp);
      } else {
        fake_create(desc::kVariantPack, &vp);
        for (int a = 0; a < 3; ++a) fake_set(vp, 0, 0, 0, nullptr);
        fake_status(vp);
        fake_execute(nullptr, plan, vp);
        fake_status(vp);
      }
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls;
  };
  set_cudnn_sink([](void*, const CudnnCall&) {}, nullptr);
  const double base = per_call(false), on = per_call(true);
  std::printf("cudnn execute sequence ns/call: fake originals %.1f, through the wrappers with a sink %.1f\n", base, on);
  EXPECT_LT(on - base, 20000.0);  // well under cuDNN's own host cost per execute (tens of us)
}

#ifdef NANSCOPE_GOT_CUDNN_CALLER
// The whole recording path on a real importer of the real libcudnn.so.9: cudnn::patch_all()
// patches its cudnnBackend* slots (libcudnn's own libraries skipped), and what cuDNN accepted
// is in the store with the values the importer set; a descriptor cuDNN refused to finalize is not.
TEST(CudnnInterceptReal, PatchAllRecordsARealImportersDescriptors) {
  void* caller = dlopen(NANSCOPE_GOT_CUDNN_CALLER, RTLD_NOW | RTLD_LOCAL);
  if (!caller) GTEST_SKIP() << "the test importer (or libcudnn.so.9) is not loadable: " << dlerror();
  using TensorFn = int (*)(int64_t, int, void**);
  using OpFn = int (*)(void*, void*, void**);
  using DestroyFn = int (*)(void*);
  auto tensor = reinterpret_cast<TensorFn>(dlsym(caller, "got_cudnn_tensor"));
  auto sdpa_op = reinterpret_cast<OpFn>(dlsym(caller, "got_cudnn_sdpa_op"));
  auto destroy = reinterpret_cast<DestroyFn>(dlsym(caller, "got_cudnn_destroy"));
  ASSERT_TRUE(tensor && sdpa_op && destroy);
  std::size_t n = 0;
  const got::Hook* h = hooks(&n);
  for (std::size_t i = 0; i < n; ++i) set_original(h[i].name, nullptr);  // forget the fakes above
  const got::Report r = patch_all(true);
  EXPECT_EQ(r.patched, 4u);  // the importer imports four of the six; libcudnn*.so.9 are never patched
  EXPECT_EQ(r.other_target, 0u);
  void *q = nullptr, *o = nullptr, *op = nullptr, *bad = nullptr;
  ASSERT_EQ(tensor(kQ, 4, &q), 0);
  ASSERT_EQ(tensor(kO, 4, &o), 0);
  EXPECT_EQ(sdpa_op(q, o, &op), 0);
  EXPECT_NE(tensor(kV, 0, &bad), 0);  // no dimensions: cuDNN refuses to finalize it
  TensorInfo t;
  ASSERT_TRUE(graphs().tensor(reinterpret_cast<uint64_t>(q), &t));
  EXPECT_TRUE(t.has_uid);
  EXPECT_EQ(t.uid, kQ);
  EXPECT_EQ(t.data_type, data::kHalf);
  EXPECT_EQ(t.dims, kBhsd);
  EXPECT_EQ(t.strides, kDense);
  EXPECT_FALSE(t.is_virtual);
  EXPECT_TRUE(tensor_extent(t).ok);
  EXPECT_FALSE(graphs().tensor(reinterpret_cast<uint64_t>(bad), &t));
  for (void* d : {q, o, op, bad}) EXPECT_EQ(destroy(d), 0);
  EXPECT_FALSE(graphs().tensor(reinterpret_cast<uint64_t>(q), &t));  // forgotten
  EXPECT_EQ(got::unpatch_all(h, n), 4u);
  dlclose(caller);
}
#endif

}  // namespace

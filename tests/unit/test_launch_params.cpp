// Launch decoding (hooks/launch_params): parameter structs of every hooked launch API, the
// per-thread default stream of the _ptsz forms, and both parameter forms (kernelParams and the
// packed `extra` buffer). CPU only: the driver's structs are filled by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "launch_params.hpp"

using namespace nanscope;

namespace {
void* const kFunc = reinterpret_cast<void*>(0x1234);
const CUstream kStream = reinterpret_cast<CUstream>(0x5678);
}  // namespace

TEST(LaunchParams, DecodesCuLaunchKernel) {
  void* args[1] = {nullptr};
  cuLaunchKernel_params p{};
  p.f = static_cast<CUfunction>(kFunc);
  p.hStream = kStream;
  p.kernelParams = args;
  LaunchArgs a;
  ASSERT_TRUE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, a));
  EXPECT_EQ(a.function, kFunc);
  EXPECT_EQ(a.stream, kStream);
  EXPECT_EQ(a.kernel_params, args);
  EXPECT_EQ(a.extra, nullptr);
}

TEST(LaunchParams, PtszNullStreamIsThePerThreadStream) {
  cuLaunchKernel_params p{};
  p.f = static_cast<CUfunction>(kFunc);
  LaunchArgs a;
  ASSERT_TRUE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &p, a));
  EXPECT_EQ(a.stream, CU_STREAM_PER_THREAD);
  ASSERT_TRUE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, a));
  EXPECT_EQ(a.stream, nullptr);  // the legacy stream stays the legacy stream
  cuLaunchCooperativeKernel_params c{};
  ASSERT_TRUE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, &c, a));
  EXPECT_EQ(a.stream, CU_STREAM_PER_THREAD);
}

TEST(LaunchParams, DecodesCuLaunchKernelExThroughItsConfig) {
  CUlaunchConfig cfg{};
  cfg.hStream = kStream;
  cuLaunchKernelEx_params p{};
  p.config = &cfg;
  p.f = static_cast<CUfunction>(kFunc);
  LaunchArgs a;
  ASSERT_TRUE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &p, a));
  EXPECT_EQ(a.stream, kStream);
  cuLaunchKernelEx_params no_config{};
  ASSERT_TRUE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, &no_config, a));
  EXPECT_EQ(a.stream, CU_STREAM_PER_THREAD);
}

TEST(LaunchParams, RejectsOtherCallbacks) {
  LaunchArgs a;
  int dummy = 0;
  EXPECT_FALSE(read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &dummy, a));
}

TEST(LaunchParams, ParamBytesFromKernelParams) {
  float* out = reinterpret_cast<float*>(0xdead0000);
  int n = 7;
  void* args[2] = {&out, &n};
  LaunchArgs a;
  a.kernel_params = args;
  const std::vector<std::pair<uint32_t, uint32_t>> layout = {{0, 8}, {8, 4}};
  const char* p0 = param_bytes(a, layout, 0);
  ASSERT_NE(p0, nullptr);
  uint64_t v = 0;
  std::memcpy(&v, p0, 8);
  EXPECT_EQ(v, 0xdead0000u);
  EXPECT_EQ(param_bytes(a, layout, 2), nullptr);  // no such parameter
}

TEST(LaunchParams, ParamBytesFromTheExtraBuffer) {
  // The packed form: parameters at their driver offsets in one buffer.
  alignas(8) unsigned char buffer[24] = {};
  const uint64_t ptr = 0xbeef0000;
  const int n = 42;
  std::memcpy(buffer, &n, 4);
  std::memcpy(buffer + 8, &ptr, 8);
  size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  LaunchArgs a;
  a.extra = extra;
  const std::vector<std::pair<uint32_t, uint32_t>> layout = {{0, 4}, {8, 8}, {16, 8}};
  uint64_t v = 0;
  ASSERT_NE(param_bytes(a, layout, 1), nullptr);
  std::memcpy(&v, param_bytes(a, layout, 1), 8);
  EXPECT_EQ(v, ptr);
  int got = 0;
  std::memcpy(&got, param_bytes(a, layout, 0), 4);
  EXPECT_EQ(got, 42);
  size = 16;  // a buffer too short for parameter 2 must not be read past its end
  EXPECT_EQ(param_bytes(a, layout, 2), nullptr);
}

TEST(LaunchParams, NoParameterFormMeansUnknown) {
  LaunchArgs a;
  const std::vector<std::pair<uint32_t, uint32_t>> layout = {{0, 8}};
  EXPECT_EQ(param_bytes(a, layout, 0), nullptr);
}

// The hook table (kDriverHooks): one row per enabled cbid, and what the dispatch reads from it.
TEST(DriverHooks, EveryEnabledCbidHasOneRowAndAHook) {
  const std::vector<CUpti_CallbackId>& ids = driver_hook_cbids();
  std::set<CUpti_CallbackId> seen;
  for (CUpti_CallbackId id : ids) {
    EXPECT_TRUE(seen.insert(id).second) << "cbid " << id << " listed twice";
    ASSERT_NE(driver_hook_form(id), nullptr);
    EXPECT_EQ(driver_hook_form(id)->cbid, id);
    EXPECT_NE(driver_hook(id), DriverHook::none);
  }
  // Copies and sets have their own table: a cbid in both would be dispatched twice.
  for (CUpti_CallbackId id : copy_cbids()) EXPECT_EQ(seen.count(id), 0u) << "cbid " << id;
  EXPECT_EQ(driver_hook(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2), DriverHook::none);
  EXPECT_EQ(driver_hook(CUPTI_DRIVER_TRACE_CBID_INVALID), DriverHook::none);
  EXPECT_EQ(driver_hook_form(CUPTI_DRIVER_TRACE_CBID_SIZE + 5), nullptr);
}

TEST(DriverHooks, EveryHookKindHasARow) {
  std::set<DriverHook> kinds;
  for (CUpti_CallbackId id : driver_hook_cbids()) kinds.insert(driver_hook(id));
  for (DriverHook h : {DriverHook::launch, DriverHook::instantiate, DriverHook::exec_update, DriverHook::end_capture,
                       DriverHook::node_params, DriverHook::exec_node_params, DriverHook::memset_node_params,
                       DriverHook::exec_memset_node_params, DriverHook::graph_launch,
                       DriverHook::alloc, DriverHook::free})
    EXPECT_EQ(kinds.count(h), 1u) << "hook " << static_cast<int>(h) << " has no cbid";
}

// read_launch_args reads exactly the launch rows: every one decodes, nothing else does.
TEST(DriverHooks, LaunchRowsAndOnlyThoseDecode) {
  void* args[1] = {nullptr};
  CUlaunchConfig config{};
  config.hStream = kStream;
  // The three params structs share no layout; fill each and let the row pick the right one.
  cuLaunchKernel_params k{};
  k.f = static_cast<CUfunction>(kFunc), k.hStream = kStream, k.kernelParams = args;
  cuLaunchCooperativeKernel_params c{};
  c.f = static_cast<CUfunction>(kFunc), c.hStream = kStream, c.kernelParams = args;
  cuLaunchKernelEx_params x{};
  x.f = static_cast<CUfunction>(kFunc), x.config = &config, x.kernelParams = args;
  int launches = 0;
  for (CUpti_CallbackId id : driver_hook_cbids()) {
    const bool launch = driver_hook(id) == DriverHook::launch;
    EXPECT_EQ(driver_hook_form(id)->decode != nullptr, launch) << "cbid " << id;
    if (!launch) {
      LaunchArgs a;
      EXPECT_FALSE(read_launch_args(id, &k, a)) << "cbid " << id;
      continue;
    }
    ++launches;
    LaunchArgs a;
    const bool ex = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
    const bool coop = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
                      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
    const void* p = ex ? static_cast<const void*>(&x) : coop ? static_cast<const void*>(&c) : &k;
    ASSERT_TRUE(read_launch_args(id, p, a)) << "cbid " << id;
    EXPECT_EQ(a.function, kFunc);
    EXPECT_EQ(a.stream, kStream);
    EXPECT_EQ(a.kernel_params, args);
  }
  EXPECT_EQ(launches, 6);  // cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their _ptsz
}

// A per-thread form's null stream is the per-thread default stream; a legacy form's stays 0.
TEST(DriverHooks, HookedStreamFollowsThePerThreadForms) {
  int per_thread = 0;
  for (CUpti_CallbackId id : driver_hook_cbids()) {
    const DriverHookForm& f = *driver_hook_form(id);
    EXPECT_EQ(hooked_stream(id, nullptr), f.per_thread ? CU_STREAM_PER_THREAD : nullptr) << "cbid " << id;
    EXPECT_EQ(hooked_stream(id, kStream), kStream);
    per_thread += f.per_thread;
  }
  EXPECT_EQ(hooked_stream(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, nullptr), CU_STREAM_PER_THREAD);
  EXPECT_EQ(hooked_stream(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr), CU_STREAM_PER_THREAD);
  EXPECT_EQ(hooked_stream(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, nullptr), nullptr);
  EXPECT_GT(per_thread, 0);
}

// Five ways to instantiate a graph; each must be instrumented, or a graph runs unscanned.
TEST(DriverHooks, EveryInstantiateVariantIsHooked) {
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz})
    EXPECT_EQ(driver_hook(id), DriverHook::instantiate) << "cbid " << id;
  EXPECT_TRUE(driver_hook_form(CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams)->v1_params);
  EXPECT_FALSE(driver_hook_form(CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2)->v1_params);
  EXPECT_TRUE(driver_hook_form(CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams)->v1_params);
}

namespace {

// A graph kernel node carries the same launch as a callback would: the decoders read its grid.
TEST(LaunchParams, AGraphNodeGivesItsShapeLikeALaunch) {
  CUDA_KERNEL_NODE_PARAMS p{};
  void* args[1] = {nullptr};
  p.gridDimX = 64, p.gridDimY = 2, p.gridDimZ = 1;
  p.blockDimX = 256, p.blockDimY = 1, p.blockDimZ = 1;
  p.kernelParams = args;
  int f = 0;
  const nanscope::LaunchArgs a = nanscope::node_launch_args(&f, p);
  EXPECT_EQ(a.function, &f);
  EXPECT_EQ(a.kernel_params, args);
  EXPECT_EQ(a.grid[0], 64u);
  EXPECT_EQ(a.grid[1], 2u);
  EXPECT_EQ(a.block[0], 256u);
}

TEST(LaunchParams, ALaunchCallbackGivesItsShape) {
  cuLaunchKernel_params p{};
  p.gridDimX = 7, p.gridDimY = 1, p.gridDimZ = 3, p.blockDimX = 128, p.blockDimY = 1, p.blockDimZ = 1;
  nanscope::LaunchArgs a;
  ASSERT_TRUE(nanscope::read_launch_args(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, a));
  EXPECT_EQ(a.grid[0], 7u);
  EXPECT_EQ(a.grid[2], 3u);
  EXPECT_EQ(a.block[0], 128u);
}

}  // namespace

// A conditional node's bodies come only from cuGraphAddNode's own parameters, which the driver
// fills at creation (phGraph_out): both forms are read there, and nothing else is taken for one.
TEST(LaunchParams, AConditionalNodesBodiesAreReadAtItsCreation) {
  EXPECT_EQ(driver_hook(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode), DriverHook::add_node);
  EXPECT_EQ(driver_hook(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2), DriverHook::add_node);
  CUgraph bodies[2] = {reinterpret_cast<CUgraph>(0xb0), reinterpret_cast<CUgraph>(0xb1)};
  CUgraphNode made = reinterpret_cast<CUgraphNode>(0xc0);
  CUgraphNodeParams np{};
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.type = CU_GRAPH_COND_TYPE_IF;
  np.conditional.size = 2;
  np.conditional.phGraph_out = bodies;
  cuGraphAddNode_v2_params v2{};
  v2.phGraphNode = &made;
  v2.nodeParams = &np;
  AddedConditional a = added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, &v2);
  EXPECT_EQ(a.node, made);
  EXPECT_EQ(a.bodies, (std::vector<CUgraph>{bodies[0], bodies[1]}));
  cuGraphAddNode_params v1{};
  v1.phGraphNode = &made;
  v1.nodeParams = &np;
  np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  np.conditional.size = 1;
  a = added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, &v1);
  EXPECT_EQ(a.node, made);
  EXPECT_EQ(a.bodies, (std::vector<CUgraph>{bodies[0]}));
  // Not a conditional node, no bodies written, too many to be one, a node not made, another call.
  np.type = CU_GRAPH_NODE_TYPE_KERNEL;
  EXPECT_EQ(added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, &v1).node, nullptr);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.phGraph_out = nullptr;
  EXPECT_EQ(added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, &v1).node, nullptr);
  np.conditional.phGraph_out = bodies;
  np.conditional.size = AddedConditional::kMaxBodies + 1;
  EXPECT_EQ(added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, &v1).node, nullptr);
  np.conditional.size = 1;
  CUgraphNode none = nullptr;
  v1.phGraphNode = &none;
  EXPECT_EQ(added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, &v1).node, nullptr);
  EXPECT_EQ(added_conditional(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, nullptr).node, nullptr);
  EXPECT_EQ(added_conditional(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &v2).node, nullptr);
}

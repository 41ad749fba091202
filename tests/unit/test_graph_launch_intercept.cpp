// The graph launch wrappers with fake originals (no GPU, no GOT): the sink chooses the exec that
// is launched (the sentinel tier's twin), the stream and the result pass through unchanged, and
// with no sink, or a sink that throws, the application's own exec is launched.
#include "graph_launch_intercept.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace nanscope;

namespace {

CUgraphExec g_launched = nullptr;
CUstream g_stream = nullptr;
int fake_rt_launch(CUgraphExec exec, CUstream stream) { return g_launched = exec, g_stream = stream, 7; }
CUresult fake_drv_launch(CUgraphExec exec, CUstream stream) {
  return g_launched = exec, g_stream = stream, CUDA_ERROR_NOT_READY;
}

CUgraphExec app_exec() { return reinterpret_cast<CUgraphExec>(0x1000); }
CUgraphExec twin_exec() { return reinterpret_cast<CUgraphExec>(0x2000); }
CUgraphExec to_twin(void* ctx, CUgraphExec exec) {
  ++*static_cast<int*>(ctx);
  return exec == app_exec() ? twin_exec() : exec;
}
CUgraphExec throws(void*, CUgraphExec) { throw std::runtime_error("sink failed"); }

class GraphLaunchIntercept : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(graph_launch::set_original("cudaGraphLaunch", reinterpret_cast<void*>(&fake_rt_launch)));
    ASSERT_TRUE(graph_launch::set_original("cuGraphLaunch", reinterpret_cast<void*>(&fake_drv_launch)));
    g_launched = nullptr;
  }
  void TearDown() override { graph_launch::set_launch_sink(nullptr); }
};

using RtFn = int (*)(CUgraphExec, CUstream);
using DrvFn = CUresult (*)(CUgraphExec, CUstream);

TEST_F(GraphLaunchIntercept, EveryHookHasAWrapper) {
  std::size_t count = 0;
  const got::Hook* hooks = graph_launch::hooks(&count);
  ASSERT_EQ(count, 4u);
  for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(graph_launch::wrapper(hooks[i].name), hooks[i].wrapper);
}

TEST_F(GraphLaunchIntercept, TheSinkChoosesTheExecTheRestPassesThrough) {
  int asked = 0;
  const graph_launch::LaunchSink sink{to_twin, &asked};
  graph_launch::set_launch_sink(&sink);
  const auto rt = reinterpret_cast<RtFn>(graph_launch::wrapper("cudaGraphLaunch"));
  const auto drv = reinterpret_cast<DrvFn>(graph_launch::wrapper("cuGraphLaunch"));
  const CUstream stream = reinterpret_cast<CUstream>(0x77);
  EXPECT_EQ(rt(app_exec(), stream), 7);
  EXPECT_EQ(g_launched, twin_exec());
  EXPECT_EQ(g_stream, stream);
  EXPECT_EQ(drv(reinterpret_cast<CUgraphExec>(0x3000), stream), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(g_launched, reinterpret_cast<CUgraphExec>(0x3000));  // not tiered: itself
  EXPECT_EQ(asked, 2);
}

TEST_F(GraphLaunchIntercept, NoSinkOrAFailingSinkLaunchesTheAppsOwnExec) {
  const auto rt = reinterpret_cast<RtFn>(graph_launch::wrapper("cudaGraphLaunch"));
  EXPECT_EQ(rt(app_exec(), nullptr), 7);
  EXPECT_EQ(g_launched, app_exec());
  const graph_launch::LaunchSink sink{throws, nullptr};
  graph_launch::set_launch_sink(&sink);
  EXPECT_EQ(rt(app_exec(), nullptr), 7);
  EXPECT_EQ(g_launched, app_exec());
}

}  // namespace

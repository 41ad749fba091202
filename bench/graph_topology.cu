// What a scan node beside an app's kernel chain costs a CUDA graph replay, by the shape of its
// edges (issues 16-18: the decode step's graph replay is ~1.45x plain, and S11-2 put ~1.6 us on
// each scan node beside the chain). No nanscope code: a chain of N app kernels like a decode
// step's (a grid of small blocks over 1 MiB) and one small "scan" kernel (one block reading
// 16 KiB) per app kernel, wired in each shape below, replayed side by side in one run.
// The shapes are kShapesTable's rows: in line, beside with joins near or far, a scan lane,
// beside scans after every kernel, every second, every fourth or a scatter of 60%, merged nodes
// of four writers, each with a plain or a programmatic edge from the scan's writer.
// Usage: nanscope_graph_topology [KERNELS=400] [ROUNDS=2] [APP_BLOCKS=64] [APP_THREADS=256]
// (S13-5: the real decode step did not follow the 64-block chain's figures; APP_BLOCKS and
// APP_THREADS try chains whose kernels fill the GPU).
// Prints one line per shape: `topology shape=.. replay_us=.. per_scan_us=..` (per_scan_us: the
// replay time over the chain's, per scan node).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_cuda.hpp"

namespace {

__global__ void app_kernel(float* buf, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) buf[i] = buf[i] * 0.5f + 1.0f;
}

__global__ void scan_kernel(const uint4* buf, int vecs, unsigned* flag) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");  // a no-op unless its edge is programmatic
#endif
  unsigned any = 0;
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) {
    const uint4 v = buf[i];
    any |= (v.x & 0x7f800000u) == 0x7f800000u;
  }
  if (__syncthreads_or(any) && threadIdx.x == 0) atomicAdd(flag, 1u);
}

struct Bufs {
  float* app;
  unsigned* flag;
  int app_n;
  unsigned app_blocks = 64, app_threads = 256;  // the app kernels' grid
};

cudaGraphNode_t add_app(cudaGraph_t g, const Bufs& b, const std::vector<cudaGraphNode_t>& deps) {
  cudaKernelNodeParams p{};
  float* buf = b.app;
  int n = b.app_n;
  void* args[] = {&buf, &n};
  p.func = reinterpret_cast<void*>(app_kernel);
  p.gridDim = dim3(b.app_blocks), p.blockDim = dim3(b.app_threads), p.kernelParams = args;
  cudaGraphNode_t node;
  CK(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
  return node;
}

cudaGraphNode_t add_scan(cudaGraph_t g, const Bufs& b, const std::vector<cudaGraphNode_t>& deps) {
  cudaKernelNodeParams p{};
  const uint4* buf = reinterpret_cast<const uint4*>(b.app);
  int vecs = 1024;  // 16 KiB
  unsigned* flag = b.flag;
  void* args[] = {&buf, &vecs, &flag};
  p.func = reinterpret_cast<void*>(scan_kernel);
  p.gridDim = dim3(1), p.blockDim = dim3(256), p.kernelParams = args;
  cudaGraphNode_t node;
  CK(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
  return node;
}

// One wiring of scan nodes. A scan follows app kernel i when `pick(i)`; it joins into app kernel
// i + join (0: no join; -1: the last app kernel); `members` app kernels in a row feed one scan
// node (a merged node, edges from each); `pdl`: the edge from the scan's last writer is
// programmatic (the scan launches while its writer runs and waits in griddepcontrol.wait).
enum Pick { kNone, kAll, kEvery2, kEvery4, kRandom60 };
// `fill`: every app kernel with no scan after it gets a filler child instead (an empty kernel
// node, or an empty graph node), so that every app kernel forks alike.
enum Fill { kNoFill, kFillKernel, kFillEmpty };
struct Shape {
  const char* name;
  Pick pick;
  int join;
  bool in_line, lane, pdl;
  int members;
  Fill fill = kNoFill;
};
const Shape kShapesTable[] = {
    {"chain", kNone, 0, false, false, false, 1},         {"inline", kAll, 0, true, false, false, 1},
    {"inline_pdl", kAll, 0, true, false, true, 1},       {"beside_j1", kAll, 2, false, false, false, 1},
    {"beside_j8", kAll, 9, false, false, false, 1},      {"beside_end", kAll, -1, false, false, false, 1},
    {"beside_none", kAll, 0, false, false, false, 1},    {"beside_pdl_j1", kAll, 2, false, false, true, 1},
    {"lane_j1", kAll, 2, false, true, false, 1},         {"every2_j1", kEvery2, 2, false, false, false, 1},
    {"every2_pdl_j1", kEvery2, 2, false, false, true, 1}, {"every4_j1", kEvery4, 2, false, false, false, 1},
    {"every4_pdl_j1", kEvery4, 2, false, false, true, 1}, {"every4_none", kEvery4, 0, false, false, false, 1},
    {"every4_pdl_none", kEvery4, 0, false, false, true, 1}, {"random60_j3", kRandom60, 3, false, false, false, 1},
    {"random60_pdl_j3", kRandom60, 3, false, false, true, 1}, {"merged4_j2", kEvery4, 2, false, false, false, 4},
    {"merged4_pdl_j2", kEvery4, 2, false, false, true, 4},
    {"every4_j1_fill_kernel", kEvery4, 2, false, false, false, 1, kFillKernel},
    {"every4_j1_fill_empty", kEvery4, 2, false, false, false, 1, kFillEmpty},
    {"random60_j3_fill_kernel", kRandom60, 3, false, false, false, 1, kFillKernel},
    {"random60_j3_fill_empty", kRandom60, 3, false, false, false, 1, kFillEmpty},
    {"merged4_j2_fill_kernel", kEvery4, 2, false, false, false, 4, kFillKernel},
    {"all_fill_kernel", kNone, 0, false, false, false, 1, kFillKernel},
};
constexpr int kShapes = sizeof(kShapesTable) / sizeof(kShapesTable[0]);

bool picked(Pick p, int i) {
  switch (p) {
    case kAll: return true;
    case kEvery2: return i % 2 == 1;
    case kEvery4: return i % 4 == 3;
    case kRandom60: return (i * 2654435761u >> 7) % 10 < 6;  // a fixed scatter, 60% of kernels
    default: return false;
  }
}

__global__ void filler_kernel() {}

// A child of `parent` that does nothing: an empty kernel node or an empty graph node.
void add_filler(cudaGraph_t g, cudaGraphNode_t parent, bool kernel) {
  cudaGraphNode_t node;
  if (!kernel) {
    CK(cudaGraphAddEmptyNode(&node, g, &parent, 1));
    return;
  }
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(filler_kernel);
  p.gridDim = dim3(1), p.blockDim = dim3(32), p.kernelParams = nullptr;
  CK(cudaGraphAddKernelNode(&node, g, &parent, 1, &p));
}

// An edge from `from` to `to`: programmatic or a plain full dependency.
void add_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to, bool programmatic) {
  cudaGraphEdgeData e{};
  if (programmatic) e.from_port = cudaGraphKernelNodePortProgrammatic, e.type = cudaGraphDependencyTypeProgrammatic;
  CK(cudaGraphAddDependencies(g, &from, &to, &e, 1));
}

// Builds the graph of one shape; `scans` gets how many scan nodes it holds.
cudaGraph_t build(const Shape& s, const Bufs& b, int n, int& scans) {
  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  std::vector<cudaGraphNode_t> app;
  cudaGraphNode_t prev_scan = nullptr, last_in_chain = nullptr;
  struct Join { cudaGraphNode_t scan; int into; };
  std::vector<Join> joins;
  scans = 0;
  for (int i = 0; i < n; ++i) {
    app.push_back(add_app(g, b, {}));
    if (last_in_chain) add_edge(g, last_in_chain, app.back(), false);
    last_in_chain = app.back();
    if (!picked(s.pick, i)) {
      if (s.fill != kNoFill) add_filler(g, app.back(), s.fill == kFillKernel);
      continue;
    }
    cudaGraphNode_t scan = add_scan(g, b, {});
    for (int m = s.members - 1; m >= 1; --m)
      if (i - m >= 0) add_edge(g, app[i - m], scan, false);
    add_edge(g, app.back(), scan, s.pdl);
    if (s.lane && prev_scan) add_edge(g, prev_scan, scan, false);
    prev_scan = scan;
    ++scans;
    if (s.in_line) last_in_chain = scan;
    const int into = s.join < 0 ? n - 1 : s.join == 0 ? -1 : std::min(i + s.join, n - 1);
    if (into > i) joins.push_back({scan, into});
  }
  for (const Join& j : joins) add_edge(g, j.scan, app[j.into], false);
  return g;
}

// Median replay time of `e` over 7 samples of `reps` replays each.
float replay_us(cudaGraphExec_t e, cudaStream_t st, int reps) {
  const float ms = median_ms([&] { for (int i = 0; i < reps; ++i) CK(cudaGraphLaunch(e, st)); }, 7, st);
  return ms * 1000 / reps;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 400, rounds = argc > 2 ? std::atoi(argv[2]) : 2;
  Bufs b;
  b.app_n = 1 << 18;  // 1 MiB of floats
  if (argc > 3) b.app_blocks = static_cast<unsigned>(std::atoi(argv[3]));
  if (argc > 4) b.app_threads = static_cast<unsigned>(std::atoi(argv[4]));
  if (n < 2 || rounds < 1 || b.app_blocks == 0 || b.app_threads == 0 || b.app_threads > 1024) {
    std::fprintf(stderr, "usage: %s [KERNELS>=2] [ROUNDS>=1] [APP_BLOCKS>=1] [APP_THREADS 1..1024]\n", argv[0]);
    return 2;
  }
  CK(cudaMalloc(&b.app, b.app_n * sizeof(float)));
  CK(cudaMemset(b.app, 0, b.app_n * sizeof(float)));
  CK(cudaMalloc(&b.flag, sizeof(unsigned)));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::vector<cudaGraphExec_t> exec(kShapes);
  std::vector<int> scans(kShapes);
  for (int s = 0; s < kShapes; ++s) {
    cudaGraph_t g = build(kShapesTable[s], b, n, scans[s]);
    CK(cudaGraphInstantiate(&exec[s], g, 0));
    CK(cudaGraphDestroy(g));
  }
  std::printf("graph topology: %d app kernels (%u x %u threads over 1 MiB), scans of 16 KiB (1 block)\n", n, b.app_blocks,
              b.app_threads);
  for (int r = 0; r < rounds; ++r) {
    const float chain = replay_us(exec[0], st, 50);
    for (int s = 0; s < kShapes; ++s) {
      const float us = s == 0 ? chain : replay_us(exec[s], st, 50);
      std::printf("topology round=%d shape=%s scans=%d replay_us=%.1f per_scan_us=%.2f\n", r + 1, kShapesTable[s].name, scans[s],
                  us, scans[s] ? (us - chain) / scans[s] : 0.0f);
    }
  }
  for (auto e : exec) CK(cudaGraphExecDestroy(e));
  return 0;
}

// Scan nodes off a graph's critical path. A captured chain:
//   make_nan (writes a, 256 MiB; NaN at two places in some replays)
//   read_into (reads 2,048 values of a, writes c)
//   overwrite (rewrites all of a in place: a later writer of what make_nan's scan reads)
//   consume (reads c, writes d)
// make_nan's scan takes far longer than read_into, so if nanscope let overwrite start before
// that scan finished, the scan would see overwrite's values. The app prints the instantiated
// graph's edges by role (a scan is named after the kernel it follows), the replays whose d held NaN
// and a checksum of d.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpu_check.cuh"

constexpr size_t kBig = size_t{64} << 20;  // floats in a
constexpr int kSmall = 1024;

__global__ void make_nan(float* a, size_t n, const int* poison) {
  const float bad = *poison ? __int_as_float(0x7fc00000) : 2.0f;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    a[i] = (i == 5 || i == n - 5) ? bad : 1.0f;
}

__global__ void read_into(float* c, const float* a, size_t n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kSmall) c[i] = a[i] * 2.0f;
  else if (i < 2 * kSmall) c[i] = a[n - 2 * kSmall + i] * 2.0f;
}

__global__ void overwrite(float* a, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    a[i] = 3.0f;
}

__global__ void consume(float* d, const float* c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 2 * kSmall) d[i] = c[i] + 1.0f;
}

// Eight replays, NaN in replays 3 and 6; prints the replays whose d held NaN and a checksum of d.
int replay_all(cudaGraphExec_t exec, cudaStream_t s, int* poison, const float* d) {
  uint64_t checksum = 0;
  std::string nan_replays;
  for (int replay = 0; replay < 8; ++replay) {
    const int p = replay == 3 || replay == 6;
    // On s, before the graph: a pageable cudaMemcpy may return before its DMA lands, and the
    // legacy stream it runs on does not order a non-blocking stream, so make_nan could read the
    // replay before's poison (run S10-6: replay 7 ran with replay 6's NaN, and every scan said so).
    CHECK(cudaMemcpyAsync(poison, &p, sizeof(p), cudaMemcpyHostToDevice, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<float> host(2 * kSmall);
    CHECK(cudaMemcpy(host.data(), d, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    bool has_nan = false;
    for (float v : host) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      checksum = checksum * 1000003u + bits;
      has_nan |= (bits & 0x7fffffffu) > 0x7f800000u;
    }
    if (has_nan) nan_replays += (nan_replays.empty() ? "" : ",") + std::to_string(replay);
  }
  // What the app itself saw, to tell nanscope's findings from the app's own replays.
  std::printf("graph_overlap: nan_replays=%s\n", nan_replays.empty() ? "none" : nan_replays.c_str());
  std::printf("graph_overlap: replays=8 checksum=%016llx\n", static_cast<unsigned long long>(checksum));
  return 0;
}

int main() {
  float *a, *c, *d;
  int* poison;
  CHECK(cudaMalloc(&a, kBig * sizeof(float)));
  CHECK(cudaMalloc(&c, 2 * kSmall * sizeof(float)));
  CHECK(cudaMalloc(&d, 2 * kSmall * sizeof(float)));
  CHECK(cudaMalloc(&poison, sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  make_nan<<<528, 256, 0, s>>>(a, kBig, poison);
  read_into<<<(2 * kSmall + 255) / 256, 256, 0, s>>>(c, a, kBig);
  overwrite<<<528, 256, 0, s>>>(a, kBig);
  consume<<<(2 * kSmall + 255) / 256, 256, 0, s>>>(d, c);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  // The graph as instantiated (nanscope edits it at instantiation): edges by role.
  size_t n = 0, e = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  const std::map<void*, std::string> names{{(void*)make_nan, "make_nan"}, {(void*)read_into, "read_into"},
                                           {(void*)overwrite, "overwrite"}, {(void*)consume, "consume"}};
  std::map<cudaGraphNode_t, std::string> role;
  for (cudaGraphNode_t node : nodes) {
    cudaKernelNodeParams p{};
    if (cudaGraphKernelNodeGetParams(node, &p) != cudaSuccess) {
      (void)cudaGetLastError();  // not a runtime kernel: nanscope's scan, named below
      p.func = nullptr;
    }
    auto it = names.find(p.func);
    role[node] = it != names.end() ? it->second : "";
  }
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e));
  std::vector<cudaGraphNode_t> from(e), to(e);
  CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &e));
  // A scan node is named after its app-kernel parents (several when scans were merged).
  std::map<cudaGraphNode_t, std::set<std::string>> followed;
  for (size_t i = 0; i < e; ++i)
    if (role[to[i]].empty() && !role[from[i]].empty()) followed[to[i]].insert(role[from[i]]);
  for (auto& [node, kernels] : followed) {
    std::string name;
    for (const std::string& k : kernels) name += (name.empty() ? "" : "+") + k;
    role[node] = "scan(" + name + ")";
  }
  std::set<std::string> edges;
  for (size_t i = 0; i < e; ++i) edges.insert(role[from[i]] + "->" + role[to[i]]);
  std::printf("graph_overlap: nodes=%zu edges=%zu\n", n, e);
  for (const std::string& edge : edges) std::printf("edge %s\n", edge.c_str());

  if (replay_all(exec, s, poison, d)) return 1;
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}

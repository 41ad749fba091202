// A CUDA graph's nodes and the edges between them, read from the driver as node indices with
// each edge's data (the model the graph passes of hooks/graph_overlap.cpp and graph_pdl.cpp work on).
#pragma once
#include <cuda.h>

#include <unordered_map>
#include <vector>

#include "scan_overlap.hpp"

namespace nanscope {

// A graph's nodes and its edges between them, as node indices with the edges' data.
struct GraphView {
  std::vector<CUgraphNode> nodes;
  std::vector<overlap::Edge> edges;
  std::vector<CUgraphEdgeData> edge_data;  // of edges[i]
};

// A kernel node's function (null for any other node): which of ours a scan node runs.
inline CUfunction kernel_function_of(CUgraphNode node) {
  CUgraphNodeType type;
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL ||
      cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
    return nullptr;
  return p.func;
}

inline bool read_graph(CUgraph g, GraphView& v) {
  size_t count = 0;
  if (cuGraphGetNodes(g, nullptr, &count) != CUDA_SUCCESS) return false;
  v.nodes.resize(count);
  if (count && cuGraphGetNodes(g, v.nodes.data(), &count) != CUDA_SUCCESS) return false;
  size_t nedges = 0;
  if (cuGraphGetEdges(g, nullptr, nullptr, nullptr, &nedges) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> from(nedges), to(nedges);
  std::vector<CUgraphEdgeData> data(nedges);
  if (nedges && cuGraphGetEdges(g, from.data(), to.data(), data.data(), &nedges) != CUDA_SUCCESS) return false;
  std::unordered_map<CUgraphNode, uint32_t> index;
  for (uint32_t i = 0; i < v.nodes.size(); ++i) index.emplace(v.nodes[i], i);
  for (size_t e = 0; e < nedges; ++e) {
    const auto f = index.find(from[e]), t = index.find(to[e]);
    if (f == index.end() || t == index.end()) continue;
    v.edges.push_back({f->second, t->second});
    v.edge_data.push_back(data[e]);
  }
  return true;
}

}  // namespace nanscope

// cuDNN backend graphs (hooks/cudnn_intercept.*, src/cudnn_graph.*, docs/library-calls.md): a
// successful cudnnBackendExecute whose graph nanscope mapped scans the graph's non-virtual
// outputs (the SDPA forward's O and Stats, a matmul's C, ...) through the path every library
// call takes (library_scans.cpp), with the graph's read tensors (Q, K, V, a bias) as the inputs
// its origin is judged from. A graph that cannot be mapped was never marked as a library call:
// its kernels went through the opaque-kernel path (candidate attribution), and it is counted
// here as not scanned, with the reason, said once.
#include <fmt/format.h>

#include <vector>

#include "launch_instrumenter.hpp"
#include "tool_scope.hpp"

namespace nanscope {

void LaunchInstrumenter::on_cudnn_call(const cudnn::CudnnCall& c) {
  ToolScope scope;
  const cudnn::Execution& x = c.execution;
  if (x.why) {
    const uint64_t dropped = cudnn::graphs().dropped();
    if (dropped)
      warn_once(log_, warned_cudnn_store_, "cudnn_store",
                fmt::format("cuDNN: {} backend descriptors past the store's bound of {} were not recorded; graphs "
                            "built from them are not scanned",
                            dropped, cudnn::CudnnGraphs::kMaxDescriptors));
    warn_once(log_, warned_cudnn_, "cudnn_graph",
              fmt::format("cuDNN: a {} graph cannot be mapped ({}); such calls' outputs are not scanned, and "
                          "their kernels are blamed as opaque kernels (origin candidate)",
                          x.ops.empty() ? "backend" : x.ops, x.why));
    scan_library_call({c.api, c.call_id, c.stream, nullptr, 0, nullptr, 0}, x.why);
    return;
  }
  thread_local std::vector<LibraryBuffer> outputs, inputs;
  outputs.clear(), inputs.clear();
  for (const cudnn::GraphBuffer& b : x.outputs) outputs.push_back({b.ptr, b.extent.dtype, b.extent.elements});
  // An input nanscope cannot judge (an integer seed, a broadcast bias) keeps dtype none.
  for (const cudnn::GraphBuffer& b : x.inputs)
    inputs.push_back(b.extent.ok ? LibraryBuffer{b.ptr, b.extent.dtype, b.extent.elements} : LibraryBuffer{b.ptr});
  scan_library_call({c.api, c.call_id, c.stream, outputs.data(), static_cast<uint32_t>(outputs.size()),
                     inputs.data(), static_cast<uint32_t>(inputs.size())},
                    nullptr);
}

}  // namespace nanscope

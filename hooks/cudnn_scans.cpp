// cuDNN backend graphs (hooks/cudnn_intercept.*, src/cudnn_graph.*, docs/library-calls.md): a
// successful cudnnBackendExecute whose graph nanscope mapped scans the graph's non-virtual
// outputs (the SDPA forward's O and Stats, a matmul's C, ...) through the path every library
// call takes (library_scans.cpp), with the graph's read tensors (Q, K, V, a bias) as the inputs
// its origin is judged from. A graph that cannot be mapped was never marked as a library call:
// its kernels went through the opaque-kernel path (candidate attribution), and it is counted
// here as not scanned, with the reason, said once.
#include <fmt/format.h>

#include <vector>

#include "library_scans.hpp"
#include "tool_scope.hpp"

namespace nanscope {

void LibraryScans::on_cudnn_call(const cudnn::CudnnCall& c) {
  ToolScope scope;
  const cudnn::Execution& x = c.execution;
  const auto refuse = [&](const char* why) {  // counted among the calls not scanned, with why
    LibraryScan refused;
    refused.api = c.api, refused.call_id = c.call_id, refused.stream = c.stream, refused.refused = why;
    scan_output(refused);
  };
  if (kernels_.autotuning_on_this_thread()) return refuse(kXlaAutotuning);  // XLA's cuDNN candidates
  if (x.why) {
    const uint64_t dropped = cudnn::graphs().dropped();
    if (dropped)
      warn_once(log_, schema::Once::cudnn_store,
                fmt::format("cuDNN: {} backend descriptors past the store's bound of {} were not recorded; graphs "
                            "built from them are not scanned",
                            dropped, cudnn::CudnnGraphs::kMaxDescriptors));
    warn_once(log_, schema::Once::cudnn_graph,
              fmt::format("cuDNN: a {} graph cannot be mapped ({}); such calls' outputs are not scanned, and "
                          "their kernels are blamed as opaque kernels (origin candidate)",
                          x.ops.empty() ? "backend" : x.ops, x.why));
    return refuse(x.why);
  }
  // An input nanscope cannot judge (an integer seed, a broadcast bias) is not decoded.
  thread_local std::vector<LibraryInput> inputs;
  inputs.clear();
  for (const cudnn::GraphBuffer& b : x.inputs)
    inputs.push_back({b.ptr, b.extent.dtype, b.extent.ok ? b.extent.elements : 0, b.extent.ok, false, 0});
  bool first = true;
  for (const cudnn::GraphBuffer& b : x.outputs) {
    LibraryScan s;
    s.api = c.api, s.call_id = c.call_id, s.stream = c.stream, s.outside = "a graph output outside its allocation";
    s.ptr = b.ptr, s.dtype = b.extent.dtype, s.elements = b.extent.elements;
    s.inputs = inputs.data(), s.input_count = static_cast<uint32_t>(inputs.size());
    s.count_call = first, first = false;
    scan_output(s);
  }
}

}  // namespace nanscope

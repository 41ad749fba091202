// Memset nodes of CUDA graphs. XLA zeroes a buffer with a memset command (memzero thunks: a
// while loop's carried state, split-K accumulators) and, in a command buffer, that is a memset
// node. Its readers in the graph get no initial scan (a scan node before each would rerun every
// replay), so without a scan of its own the zeroed buffer's state is never known and a kernel
// that makes NaN from it is `unknown` (state_lost) instead of `introduced` (H100, session 27:
// jax_scan_rnn's normalisation of a zero hidden state). A memset whose pattern every float type
// reads as finite (src/set_pattern.hpp) gets the scan an eager one gets; any other pattern's
// meaning depends on a type the node does not give, and gets none.
#include <fmt/format.h>

#include "finding_event.hpp"
#include "graph_instrumenter.hpp"
#include "set_pattern.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {
constexpr char kMemsetNode[] = "memset node";  // the finding's `kernel`
}  // namespace

bool GraphInstrumenter::memset_task(const CUDA_MEMSET_NODE_PARAMS& p, ContextState& cs, nanscope_scan_task& task,
                                    uint64_t& max_bytes) {
  if (!cfg_.origin || !cs.buffer_states()) return false;
  const auto scan = set_scan(p.dst, p.value, p.elementSize, p.width, p.height, p.pitch, cfg_.max_scan_bytes);
  if (!scan) return false;
  task.buffers[0] = {scan->ptr, scan->elements, static_cast<uint32_t>(scan->dtype), kCopyArg};
  task.buffer_count = 1;
  task.kernel_id = tasks_.pseudo_kernel(kMemsetNode);
  task.origin_flags = NS_ORIGIN_HOST;  // set by the program, as an eager memset is
  tasks_.output_states(cs, task, false);
  cs.slots().untype(scan->ptr);  // the width's float is no evidence of the buffer's type
  max_bytes = scan->bytes();
  return true;
}

GraphInstrumenter::NodeScan GraphInstrumenter::scan_memset_node(CUgraph g, CUgraphNode node, uint64_t graph_id,
                                                                ContextState& cs, bool in_body) {
  CUDA_MEMSET_NODE_PARAMS p{};
  if (cuGraphMemsetNodeGetParams(node, &p) != CUDA_SUCCESS) return NodeScan::failed;
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  if (!memset_task(p, cs, task, max_bytes)) return NodeScan::nothing_to_scan;
  NodeDependents deps;
  if (!dependents_of(node, deps)) return NodeScan::failed;
  return add_scan_after(g, node, deps, task, max_bytes, graph_id, cs, in_body);
}

void GraphInstrumenter::on_memset_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p) {
  if (!p) return;
  if (exec && cfg_.tier == Tier::sentinel) end_tier(exec, true);  // as a kernel node's new parameters
  const std::optional<ScanNode> found = registry_.scan_after(node);
  if (!found) return;
  ToolScope scope;
  ContextState* cs = contexts_.current();
  if (!cs) return;
  nanscope_scan_task task{};
  uint64_t max_bytes = 0;
  // A pattern that is no longer finite in every type leaves an empty scan: the node must stay.
  if (!memset_task(*p, *cs, task, max_bytes)) task.kernel_id = tasks_.pseudo_kernel(kMemsetNode);
  task.graph_id = found->graph_id;
  task.graph_node = found->graph_node;
  cs->prepare_task(task, true, found->accum);
  planner_.warn_if_overlap_stale(found->node, task, *cs);
  if (found->merge_launch != ScanNode::kAlone) {
    update_merged_member(exec, *found, task, *cs);
    return;
  }
  set_scan_params(exec, *found, task, max_bytes, *cs);
}

}  // namespace nanscope

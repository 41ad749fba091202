// Takes scan nodes off a CUDA graph's critical path. A captured scan sits between its kernel
// and the kernel's dependents (K -> S -> C), so every replay waits for every scan. A scan only
// reads, so the dependents may start with it (K -> C, K -> S) as long as S still runs before:
//   - any later node that may write what S reads (or S could see a later kernel's values), and
//   - the next scans downstream (they read the per-buffer state words S writes: NaN origin).
// The planner works on a plain model of the graph, so it is tested without a GPU; the engine
// builds the model from the driver's graph and applies the edges.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"  // GraphPdl

namespace nanscope::decode {
struct Decoded;
}

namespace nanscope::overlap {

struct Range {
  uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};

enum class NodeKind : uint8_t {
  app,          // the app's node: writes at most `writes`
  opaque,       // may write anything, or lets other work run (host node, child graph, event record)
  scan,         // a read-only scan of `reads`: may leave the critical path
  pinned_scan,  // a scan that also writes (the fix zeroes padding rows): stays where it is
};

// Where an app node's writes come from, for the debug log's reasons (in_line_reason).
enum class WriteModel : uint8_t {
  pointer_words,  // a kernel without a decoder: each pointer word to the end of its allocation
  decoded,        // the first `exact_writes` are its decoder's (or library call's) exact writes,
                  // the rest pointer words it names neither written nor read
  node_params,    // a memset or memcpy node's destination
};

struct Node {
  NodeKind kind = NodeKind::app;
  std::vector<Range> writes;  // app, pinned_scan
  std::vector<Range> reads;   // scan, pinned_scan
  WriteModel model = WriteModel::pointer_words;
  uint32_t exact_writes = 0;  // WriteModel::decoded: how many of `writes`, first, are exact
};

struct Edge {
  uint32_t from = 0, to = 0;
  bool operator==(const Edge&) const = default;
};

inline bool is_scan(NodeKind k) { return k == NodeKind::scan || k == NodeKind::pinned_scan; }

// The edges as child and parent lists (an edge with an end out of range, or to itself, is left out).
using Children = std::vector<std::vector<uint32_t>>;
void adjacency(uint32_t n, const std::vector<Edge>& edges, Children& children, Children& parents);

// What one kernel node may write, for the model. `words` are the non-zero parameter words it may
// write through (kernel_table.hpp: pointer_words). A decoder's exact writes (`exact`: pointer and
// byte span) are taken as they are; every other word, unless the decoder names it as an input the
// kernel only reads (`inputs`), may write from itself to the end of the allocation holding it
// (`allocation_end(word)`; 0 when it is in none: then the word alone). A decoder leaves out what
// it cannot scan (integer outputs, unless it knows their range: Write::no_nan), so its writes
// alone would not be enough: an output it left out is still one of `words`. Scan reads are then
// exact (a scan reads its buffers only): a write through a pointer below a buffer reaches it
// through the rest of its allocation.
struct KnownWrite {
  uint64_t ptr = 0, bytes = 0;
};
std::vector<Range> launch_writes(const std::vector<uint64_t>& words, const std::vector<KnownWrite>& exact,
                                 const std::vector<uint64_t>& inputs,
                                 const std::function<uint64_t(uint64_t)>& allocation_end);
// A decoded launch as launch_writes takes it: every write whose extent the decoder knows into
// `exact` (integer outputs too: never scanned, but exact), every pointer it names as read (the
// NaN-free inputs too) into `inputs`.
void add_decoded_io(const decode::Decoded& d, std::vector<KnownWrite>& exact, std::vector<uint64_t>& inputs);

// The longest chain of the graph (by node count, the critical path of a graph of equal nodes),
// and how many of its nodes are scans: what the planner left on the critical path.
struct Chain {
  uint32_t nodes = 0, scans = 0;
};
Chain longest_chain(const std::vector<NodeKind>& kinds, const std::vector<Edge>& edges);

// The edge changes that detach one scan. `moved` are the scan's outgoing edges that now leave
// its parent instead (so the engine can keep their edge data); `ordered` are new scan -> node
// edges. Each plan is sound on its own: applying any subset of them keeps the graph correct.
struct ScanPlan {
  uint32_t scan = 0;
  uint32_t parent = 0;
  std::vector<uint32_t> moved;    // scan -> c becomes parent -> c
  std::vector<uint32_t> dropped;  // scan -> c removed: parent -> c exists already
  std::vector<uint32_t> ordered;  // add scan -> n
};

struct Limits {
  // Nodes one scan's downstream search visits before it orders the scan before the rest of
  // the frontier at once: bounds instantiate time on long chains (the scan then lags at most
  // this many nodes behind its kernel).
  uint32_t max_visits = 256;
  uint32_t max_frontier = 32;  // more than this many frontier nodes: leave the scan in place
};

// Why a scan the planner left in line stays there, for the debug log: a fixed text with sizes
// (no addresses), so the lines of the same layer repeated in a graph count together. `parents`
// is the scan's parent count, `parent` one of them and `child` a node right after the scan
// (null: none). The first overlap of the child's writes with the scan's reads is named by its
// size and offset.
std::string in_line_reason(const Node& scan, uint32_t parents, const Node* parent, const Node* child);

// The scans the planner left in line (`planned[i]`: node i has a plan), for the debug log: each
// "kernel before  ->  node after: why" line (named by `name(node)`) with how many scans it holds,
// the `most` frequent first.
std::vector<std::pair<uint32_t, std::string>> in_line_summary(const std::vector<Node>& model,
                                                              const std::vector<Edge>& edges,
                                                              const std::vector<bool>& planned,
                                                              const std::function<std::string(uint32_t)>& name,
                                                              size_t most);

// Plans every detachable scan: a `scan` node with exactly one parent that is not a scan.
std::vector<ScanPlan> plan(const std::vector<Node>& nodes, const std::vector<Edge>& edges, const Limits& limits = {});

// Scan nodes that may become one node (one launch instead of several: hooks/graph_overlap.cpp).
// `weight[i]` is node i's buffer count when it is a read-only scan that may be merged, else 0.
// A merged node waits for every member's parents and runs before every member's children, so a
// group never holds two scans joined by a path through another node (that node would then have
// to run both before and after the merged scan). Groups hold at least two members, listed in a
// topological order (a merged node publishes them in that order: NaN origin), and weigh at most
// `max_weight`. Each candidate's check searches upwards from its parents, only through the stretch
// of the order that the group spans; a search that visits more than `max_visits` nodes closes the
// group.
// A merged node also runs before the earliest app child of any member, after the latest app parent
// of any member: its slack, counted in app nodes (weight 0) between the two in that order, is the
// least of its members'. A scan joins only when the group keeps `min_slack`, or when the merge
// tightens no member below the tightest one already there: on the H200, merged nodes squeezed
// between a member's kernel and the next writer of another member's buffer sat on the replay's
// critical path, and the Llama decode step replayed slower merged than unmerged (S11-2).
struct GroupLimits {
  uint32_t max_weight = 8;  // NANSCOPE_SCAN_MAX_BUFFERS
  uint32_t max_visits = 4096;
  uint32_t min_slack = 8;
};
std::vector<std::vector<uint32_t>> group(uint32_t node_count, const std::vector<Edge>& edges,
                                         const std::vector<uint32_t>& weight, const GroupLimits& limits = {});

// Programmatic edges (PDL) around read-only scan nodes beside the chain (NANSCOPE_GRAPH_PDL,
// hooks/graph_pdl.cpp). Such a scan's kernel triggers its dependents once every block's loads have
// returned (what is left, the last block's publish, touches nanscope's memory only), so a later
// writer of its buffers may start then instead of after the publish. With `both`, the scan also
// launches once its app kernel's blocks have all begun and waits for that kernel's memory in the
// kernel (griddepcontrol.wait), so its launch hides behind the kernel's last wave. Nothing else
// changes: edges into or out of other scans keep full serialization (a later scan reads the state
// words this one publishes), and so do edges to anything that is not a kernel node.
enum class EdgeRole : uint8_t {
  app_kernel,      // a kernel node of the app's
  read_only_scan,  // nanscope's plain or merged scan node, beside the chain
  other,           // any other scan node of ours (in line, row-aware, a fix) or a non-kernel node
};
enum class EdgePort : uint8_t {
  full,          // complete, with memory visibility (the default edge)
  programmatic,  // CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC: all blocks triggered or exited
  launch_order,  // CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER: all blocks have begun
};
EdgePort edge_port(GraphPdl mode, EdgeRole from, EdgeRole to);

}  // namespace nanscope::overlap

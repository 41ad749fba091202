// The engine: one per process, shared by injection, LD_PRELOAD and linked use. It owns the
// configuration, the event log, the kernel table, the allocation map and the per-context
// states, and runs the drain thread that turns device records into log events.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "alloc_map.hpp"
#include "channel.hpp"
#include "config.hpp"
#include "context_state.hpp"
#include "event_log.hpp"
#include <optional>
#include <set>

#include "kernel_table.hpp"
#include "lineage.hpp"
#include "launch_params.hpp"
#include "nanscope/nanscope.h"
#include "padding.hpp"
#include "rules.hpp"
#include "scan_overlap.hpp"
#include "watch_registry.hpp"

namespace nanscope {



class Engine {
 public:
  static Engine* instance() { return instance_.load(std::memory_order_acquire); }
  // Idempotent. The first caller decides the attach mode that is reported.
  static nanscope_status_t init(nanscope_attach_t attach);

  // CUPTI handlers (API-exit site only).
  void on_launch(const CUpti_CallbackData& cb, CUpti_CallbackId cbid);
  void on_mem_alloc(CUpti_CallbackId cbid, const void* params);
  void on_mem_free(CUpti_CallbackId cbid, const void* params);
  void on_copy(const CopyArgs& c, const CUpti_CallbackData& cb);
  static constexpr uint32_t kCopyArg = 0xffff;  // record arg of a rescan after a copy or memset
  // A drained finding as the lineage tracker takes it; nullopt when the scan kept no origin state.
  static std::optional<lineage::DeviceFinding> device_finding(const Finding& f, const ContextState& cs);
  // Its origin, as event `event_id` (or a repeat of that event). Callers hold drain_mu_.
  std::optional<lineage::Verdict> classify(std::optional<lineage::DeviceFinding> d, uint64_t event_id, bool repeat);
  Json origins_json(const lineage::Summary& origins);  // the summary's first causes
  void on_context_destroy(CUcontext ctx);
  // Graphs built by hand: add a scan node after every kernel node with something to scan, at
  // the enter site of instantiate (and of exec update, so topologies keep matching).
  void on_graph_instantiate(CUgraph graph);
  void on_graph_instantiated(CUgraphExec exec, CUgraph graph);
  void on_end_capture(CUstream stream);
  // A kernel node's parameters changed: its scan node follows (exec may be null: the graph).
  void on_kernel_node_params(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params, bool v1);
  void on_graph_launch(CUgraphExec exec, CUstream stream);
  // The exec takes another graph's parameters: what nanscope set on its merged scan nodes is gone.
  void on_graph_exec_update(CUgraphExec exec);
  // Handles are reused after destruction: forget them.
  void on_graph_node_destroy(CUgraphNode node);
  void on_graph_destroy(CUgraph graph);
  void on_graph_exec_destroy(CUgraphExec exec);

  // Watches declared through the C API. Host-side only: usable before CUDA starts.
  uint32_t add_watch(WatchSpec spec);
  bool remove_watch(uint32_t id);
  void set_global_padding(std::optional<PaddingSpec> spec);

  void flush();
  void shutdown();          // at exit: last drain, closing repeats, summary
  void emergency_flush();   // from a fatal signal: best effort, no joins
  void fill_stats(nanscope_stats_t& s) const;
  bool subscribed() const { return subscriber_ != nullptr; }

 private:
  Engine(Config cfg, nanscope_attach_t attach);
  bool subscribe();
  ContextState* context_for(CUcontext ctx);
  std::optional<AddressRange> extent(uint64_t ptr);
  void drain_all();
  void handle_finding(const Finding& f, ContextState& cs);
  // Writes the buffer of `f` as .npy with a JSON sidecar; returns the path, or empty.
  std::string dump_buffer(const Finding& f, ContextState& cs, uint64_t event_id, const Json& event);
  void warn_once(std::atomic<bool>& flag, const std::string& what, const std::string& message);
  // Whether the summary may take the context lock, already holds it, or must not touch it.
  enum class SummaryContexts { lock, held, skip };
  void write_summary(SummaryContexts contexts = SummaryContexts::lock);
  bool worth_a_look(const KernelInfo& k) const;
  // The cached decoding of a kernel; a kernel nanscope cannot inspect is logged once.
  const KernelInfo& kernel_info(void* handle, const char* symbol_name);
  ContextState* current_context();           // of the calling thread; null if none or unusable
  void drain_context(ContextState& cs);      // callers hold drain_mu_
  // Fills `task` with every buffer to scan after a launch of `k` with arguments `a` (typed
  // outputs, watches, rules). Returns false when there is nothing to scan.
  bool build_task(const KernelInfo& k, const LaunchArgs& a, ContextState& cs, nanscope_scan_task& task,
                  uint64_t& max_bytes);
  void submit_scan(ContextState& cs, nanscope_scan_task& task, CUstream stream, uint64_t max_bytes);
  void add_origin(const KernelInfo& k, const LaunchArgs& a, ContextState& cs, nanscope_scan_task& task, uint32_t n,
                  const std::vector<const WatchSpec*>& watch_inputs);
  void report_scan_failure(CUresult r, bool captured);
  void warn_rule(uint32_t rule_index, const std::string& error);
  Action effective_action(Action declared) const;
  void abort_on_real(const Finding& f, const std::string& kernel, const std::string& watch);

  // Watch ids of rules: the rule index with this bit set (API watches count up from 1).
  static constexpr uint32_t kRuleWatchBit = 0x80000000u;
  // Typed outputs given rows by the global padding spec: this bit plus the parameter index.
  static constexpr uint32_t kGlobalWatchBit = 0x40000000u;

  static std::atomic<Engine*> instance_;

  const Config cfg_;
  const nanscope_attach_t attach_;
  const uint64_t start_ns_;
  std::unique_ptr<EventLog> log_;
  std::vector<Rule> rules_;  // NANSCOPE_RULES, loaded before the first launch
  KernelTable kernels_;
  std::mutex not_inspected_mu_;
  std::set<std::string> not_inspected_;  // mangled names already reported: one kernel can
                                         // arrive under two handles (CUkernel and CUfunction)
  WatchRegistry watches_;
  struct WatchMeta {
    std::string name;
    Action action = Action::detect;
  };
  std::mutex meta_mu_;
  std::unordered_map<uint32_t, WatchMeta> watch_meta_;  // kept after unwatch, for late findings
  std::set<uint32_t> warned_rules_;
  std::shared_ptr<const PaddingSpec> global_padding_;  // atomic_load/store
  AllocationMap allocs_;
  CUpti_SubscriberHandle subscriber_ = nullptr;

  mutable std::shared_mutex ctx_mu_;
  std::unordered_map<CUcontext, std::unique_ptr<ContextState>> contexts_;
  std::unordered_map<CUcontext, std::string> failed_contexts_;

  // Graphs: ids, node numbering, and the scan node that follows each instrumented kernel node.
  struct ScanNode {
    CUgraphNode node = nullptr;
    CUdeviceptr accum = 0;
    uint64_t graph_id = 0;
    uint32_t graph_node = 0;
    static constexpr uint32_t kAlone = ~0u;
    uint32_t group_launch = kAlone;  // its launch in a merged scan node (graph_overlap.cpp), or kAlone
  };
  std::mutex graph_mu_;
  std::unordered_map<uint64_t, uint32_t> graph_nodes_;        // graph id -> scans in it so far
  std::unordered_map<CUgraphNode, ScanNode> scan_after_;      // kernel node -> its scan node
  std::unordered_map<CUgraphNode, bool> scan_nodes_;          // our own scan nodes
  std::unordered_map<CUgraph, uint64_t> graph_ids_;           // captured (capture id) or built by hand
  std::unordered_map<CUgraphExec, uint64_t> exec_graph_ids_;
  std::unordered_map<uint64_t, uint64_t> graph_streams_;      // graph id -> stream of its last launch
  uint64_t next_graph_id_ = uint64_t{1} << 40;                // above any capture id
  void instrument_graph(CUgraph graph, uint64_t graph_id, ContextState& cs, int depth);
  // Scan nodes off the critical path (hooks/graph_overlap.cpp).
  std::unordered_set<CUgraphNode> detached_;  // scan nodes already moved
  std::atomic<uint64_t> overlapped_scans_{0};
  // Merged scan nodes: scans beside the app's kernels that may run together become one node.
  std::atomic<uint64_t> merged_scans_{0};  // scan nodes folded into merged ones
  std::atomic<bool> warned_merge_{false}, warned_group_update_{false}, warned_group_after_update_{false};
  // A merged node's task as last set on an exec (an exec's parameters cannot be read back).
  std::map<std::pair<CUgraphExec, CUgraphNode>, nanscope_scan_group> group_tasks_;
  std::unordered_set<CUgraphExec> updated_execs_;  // took a whole graph's parameters (cuGraphExecUpdate)
  void forget_group_tasks(CUgraphExec exec);  // callers hold graph_mu_
  void merge_scans(CUgraph graph, ContextState& cs);
  void update_group_member(CUgraphExec exec, const ScanNode& sn, const nanscope_scan_task& task, ContextState& cs);
  std::atomic<bool> warned_overlap_{false}, warned_overlap_stale_{false};
  void overlap_scans(CUgraph graph, ContextState& cs);
  overlap::Node overlap_node(CUgraphNode node, ContextState& cs);
  std::vector<overlap::Range> scan_reads(const nanscope_scan_task& task);
  void use_beside_grid(CUgraphNode scan, ContextState& cs);
  void warn_if_overlap_stale(CUgraphNode scan, const nanscope_scan_task& next, ContextState& cs);
  uint64_t graph_id_for(CUgraph graph);

  // Aggregation: per (kernel, arg, graph, node, region, buffer, watch, rows) site.
  struct Site {
    uint64_t first_event = 0;
    uint64_t total = 0;
    uint64_t pending = 0;  // folded since the last repeat event
    uint32_t first_replay = 0, last_replay = 0;
  };
  std::mutex drain_mu_;  // serialises drains (thread, flush, exit, context teardown)
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint32_t, std::string, uint64_t, uint32_t, std::string>, Site> sites_;

  std::thread drain_thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> in_signal_{false};  // emergency_flush from a fatal signal

  std::atomic<uint64_t> launches_{0}, scans_{0}, findings_{0}, dropped_{0}, corrupt_{0};
  std::atomic<uint64_t> total_nan_{0}, total_pinf_{0}, total_ninf_{0};
  std::mutex lineage_mu_;
  lineage::Tracker lineage_;  // roots, leaks and reach of the findings' origins
  std::atomic<uint64_t> rescans_unchanged_{0};
  uint32_t dumps_ = 0;       // drain thread only
  uint64_t dump_bytes_ = 0;
  std::atomic<bool> warned_launch_{false}, warned_context_{false}, warned_capture_pool_{false},
      warned_callback_{false}, warned_buffers_{false}, warned_overflow_{false}, warned_graph_{false},
      warned_dump_{false};
  std::atomic<bool> aborting_{false};

  friend void CUPTIAPI cupti_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*);
};

std::string error_name(CUresult r);  // the driver's name for `r`, for messages

void CUPTIAPI cupti_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data);

}  // namespace nanscope

// From one launch to the scan task that follows it: whether the kernel is worth a look, and
// the collectors that each add one kind of buffer (rules, watches, typed outputs) to the task,
// then the NaN-origin state words of what the task scans and what the launch reads.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config.hpp"
#include "coverage.hpp"
#include "decode/written.hpp"
#include "opaque_writers.hpp"
#include "context_state.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "event_log.hpp"
#include "kernel_table.hpp"
#include "launch_params.hpp"
#include "launch_record.hpp"
#include "watches.hpp"

namespace nanscope {

// One launch's task while the collectors fill it, in order: a later collector sees what the
// earlier ones added (typed outputs skip what a row-aware scan already covers).
class TaskDraft {
 public:
  TaskDraft(LaunchRecord& launch, ContextState& cs, nanscope_scan_task& task, const Watches& watches,
            Counters& counters, EventLog& log)
      : launch(launch), kernel(*launch.kernel), args(launch.args), context(cs), task_(task), watches_(watches),
        counters_(counters), log_(log) {}

  LaunchRecord& launch;  // its kernel, arguments and kernel-family decode
  const KernelInfo& kernel;
  const LaunchArgs& args;
  ContextState& context;

  // The bytes of kernel parameter `i` as launched, or null when unknown.
  const char* param(uint32_t i) const { return param_bytes(args, kernel.params, i); }

  // A buffer whose rows are scanned (and maybe fixed) as `w` says, once per watch id.
  // `inferred`: rows guessed from the global spec; never fixed, never aborts, only reported.
  // `quiet`: an API watch referenced by a parameter not known to be written; a rescan that finds
  // it unchanged is counted on the device instead of posted (the host would drop it anyway).
  void add_rows(const WatchSpec& w, uint32_t watch_id, uint32_t arg, bool inferred = false, bool quiet = false);
  // A plain buffer of `elements` values; `bytes` sizes the scan's grid.
  void add_plain(uint64_t ptr, uint64_t elements, DType dtype, uint32_t arg, uint64_t bytes);
  // Whether `ptr` is already scanned: inside a row-aware buffer, or inside any buffer an earlier
  // collector added (so a collector of exact writes placed before the typed outputs supersedes
  // their signature-based guesses without either knowing of the other).
  bool covered(uint64_t ptr) const;
  void begin_collector() { earlier_ = n_; }  // TaskBuilder::build, before each collector
  bool full();  // no room for another buffer (said once per process)

  // A watched buffer the launch may read: an input for the NaN origin. `snapshot` keeps it alive.
  void add_watched_input(const WatchSpec& w) { watched_inputs_.push_back(&w); }
  void keep(std::shared_ptr<const WatchRegistry::Snapshot> snapshot) { snapshot_ = std::move(snapshot); }
  const std::vector<const WatchSpec*>& watched_inputs() const { return watched_inputs_; }

  // A pointer the launch reads, as a decoder names it (dtype none / elements 0 when unknown):
  // an input for the NaN origin.
  void add_read(uint64_t ptr, DType dtype, uint64_t elements) {
    if (reads_count_ < decode::kMaxReads) reads_[reads_count_++] = {ptr, dtype, elements};
  }
  struct Read {
    uint64_t ptr;
    DType dtype;
    uint64_t elements;
  };
  const Read* reads() const { return reads_; }
  uint32_t reads_count() const { return reads_count_; }

  // A buffer the launch writes, left unscanned because nothing but the end of an allocator pool
  // bounds it (extent_policy.hpp): TaskBuilder::build reports it not_inspected, once per kernel
  // and argument. The first kMaxPoolRefusals of a launch are kept; more say nothing new.
  struct PoolRefusal {
    uint32_t arg;
    uint64_t ptr;
  };
  static constexpr uint32_t kMaxPoolRefusals = 8;
  void refuse_pool(uint32_t arg, uint64_t ptr) {
    if (pool_refusals_count_ < kMaxPoolRefusals) pool_refusals_[pool_refusals_count_++] = {arg, ptr};
  }
  const PoolRefusal* pool_refusals() const { return pool_refusals_; }
  uint32_t pool_refusals_count() const { return pool_refusals_count_; }

  // Coverage: how the launch was inspected and what a decoder says it writes.
  Inspection inspection = Inspection::typed;
  uint64_t written_bytes = 0;
  bool refused_extent = false;  // a decoded extent ran past its allocation: not scanned
  std::string_view refused;     // why a decoder refused this launch (static text)

  uint32_t count() const { return n_; }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  nanscope_scan_task& task_;
  const Watches& watches_;
  Counters& counters_;
  EventLog& log_;
  uint32_t n_ = 0;
  uint32_t earlier_ = 0;  // buffers added by the collectors before the current one
  uint64_t max_bytes_ = 0;
  std::vector<const WatchSpec*> watched_inputs_;  // into snapshot_
  Read reads_[decode::kMaxReads];
  uint32_t reads_count_ = 0;
  PoolRefusal pool_refusals_[kMaxPoolRefusals];
  uint32_t pool_refusals_count_ = 0;
  std::shared_ptr<const WatchRegistry::Snapshot> snapshot_;
};

// Adds the buffers of one kind to a launch's task. A new kind (say, exact writes from a
// kernel-family decoder) is one more collector; the others do not change.
class TaskCollector {
 public:
  virtual ~TaskCollector() = default;
  virtual void collect(TaskDraft& draft) = 0;
};
// The collectors in their order: rules, watches, decoded writes, typed outputs (collectors.cpp).
std::vector<std::unique_ptr<TaskCollector>> task_collectors(const Config& cfg, Watches& watches, Allocations& allocs);

// A buffer read before any scan judged it (written by the host, before nanscope attached, or
// by a launch nanscope cannot see into): scanned once right before its first reader's scan, so
// that reader's origin is decided from a known state. `writer` names the opaque launch that
// last referenced it, when there was one; `writers` are all of them (its candidates).
struct InitialScan {
  uint64_t ptr = 0;
  uint64_t elements = 0;
  DType dtype = DType::none;
  uint32_t ref = 0;
  std::optional<OpaqueWrite> writer;
  CandidateList writers;
};

// What a launch gets: its scan task (when it has buffers) and the initial scans before it.
struct LaunchPlan {
  bool scan = false;
  Inspection inspection = Inspection::opaque;
  uint64_t written_bytes = 0;  // what a decoder says the launch writes
  uint64_t scanned_bytes = 0;  // what its task reads
  // No initial scans under stream capture (a captured scan would rerun every replay); asked of
  // the driver only when an input needs one, which is rare after the first launches.
  enum class Capture : uint8_t { unknown, no, yes } capture = Capture::unknown;
  bool refused_extent = false;  // a decoded extent ran past its allocation (said once)
  std::string_view refused;     // why a decoder refused the launch (coverage lists it)
  static constexpr uint32_t kMaxInitial = NANSCOPE_ORIGIN_MAX_INPUTS;
  InitialScan initial[kMaxInitial];
  uint32_t initial_count = 0;
  // Opaque launches that referenced an input no scan judges before this launch's (under stream
  // capture, or of unknown type or extent): the candidates of what its scan finds.
  CandidateList candidates;
  // An XLA launch's own line (decode::Decoded::source): its finding names it before the kernel's,
  // with its op when the thunks the launch fits agree on it.
  const xla::SourceLine* source = nullptr;
  bool source_op_agreed = false;
};

class TaskBuilder {
 public:
  TaskBuilder(const Config& cfg, KernelTable& kernels, Watches& watches, Allocations& allocs, Counters& counters,
              EventLog& log);
  Allocations& allocations() { return allocs_; }

  // The cached decoding of a kernel; a kernel nanscope cannot inspect is logged once. The second
  // form resolves a launch's kernel once, for both of its sites.
  const KernelInfo& kernel_info(void* handle, const char* symbol_name);
  const KernelInfo& kernel_info(LaunchRecord& launch, const char* symbol_name);
  bool worth_a_look(const KernelInfo& k) const;
  // The kernel id a copy's or memset's scan is named after (`name`: the driver call, or the node).
  uint32_t pseudo_kernel(const char* name);
  // Fills `task` with every buffer to scan after a launch of `k` with arguments `a`. Returns
  // false when there is nothing to scan. `max_bytes`: the largest buffer, for the grid. The first
  // form is a graph node's launch; the second a launch callback's, with its record (kernel set).
  bool build(const KernelInfo& k, const LaunchArgs& a, ContextState& cs, nanscope_scan_task& task,
             uint64_t& max_bytes, LaunchPlan* plan = nullptr);
  bool build(LaunchRecord& launch, ContextState& cs, nanscope_scan_task& task, uint64_t& max_bytes, LaunchPlan* plan);
  // The state word a reader of [ptr, ptr + elements) on `stream` judges its origin from (a
  // library call's operands); an input no scan judged yet is queued in `plan` for its initial
  // scan, as a kernel's would be. `task` holds the reader's outputs (an input it also writes
  // gets none).
  uint32_t input_ref(ContextState& cs, CUstream stream, const nanscope_scan_task& task, uint64_t ptr, DType dtype,
                     uint64_t elements, LaunchPlan* plan);
  // The state words a scan updates: its buffers' slots (a kernel's outputs, a library call's,
  // a copy's rescan). `judged`: the scan judges them now, so their opaque writers are forgotten.
  void output_states(ContextState& cs, nanscope_scan_task& task, bool judged);
  // The watches holding `dst` (a copy's destination, a library call's D), as the launch of a
  // kernel referencing them would scan them: name, padding spec, verdict, action (the fix), the
  // scan named after kernel `kernel_id`. Returns the bytes to size the scan's grid, 0 when no
  // watch holds it.
  uint64_t watched_scan(uint64_t dst, ContextState& cs, nanscope_scan_task& task, uint32_t kernel_id);
  // Whether any parameter word of the launch (pointers in structs too) points into a watched
  // buffer: the sentinel tier's eager sample always scans such a launch.
  bool touches_watch(const KernelInfo& k, const LaunchArgs& a) const;
  // Adds one tracked input's state word to the task once (`count` inputs so far); one more than
  // the task can name makes the origin untracked.
  static void add_input_state(nanscope_scan_task& task, uint32_t& count, uint32_t ref);

 private:
  void fill_plan(const TaskDraft& draft, const nanscope_scan_task& task, LaunchRecord& launch, LaunchPlan& plan);
  void add_origin(const TaskDraft& draft, nanscope_scan_task& task, LaunchPlan* plan);
  // The draft's pool refusals: a not_inspected event once per kernel and argument, and the
  // kernel listed in coverage with kPoolExtentReason.
  void report_pool_refusals(const TaskDraft& draft);
  // An input whose state no scan established yet: queued for an initial scan when its extent
  // and type are known and the launch does not also write it.
  void maybe_initial_scan(ContextState& cs, CUstream stream, const nanscope_scan_task& task, uint64_t ptr,
                          DType dtype, uint64_t elements, LaunchPlan* plan);

  const Config& cfg_;
  KernelTable& kernels_;
  Watches& watches_;
  Allocations& allocs_;
  Counters& counters_;
  EventLog& log_;
  std::vector<std::unique_ptr<TaskCollector>> collectors_;  // in order: rules, watches, typed outputs
  Ranked<std::mutex, LockLevel::part> not_inspected_mu_{"TaskBuilder::not_inspected_mu_"};
  std::set<std::string> not_inspected_;  // mangled names already reported: one kernel can
                                         // arrive under two handles (CUkernel and CUfunction)
  std::set<std::pair<std::string, uint32_t>> pool_refused_;  // (mangled name, argument), under not_inspected_mu_
};

}  // namespace nanscope

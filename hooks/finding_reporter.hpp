// From device records to the log: the drain thread reads every context's channel, and each
// finding becomes (src/finding_event.hpp) a `nonfinite` event or a folded repeat, a console
// line, maybe a tensor dump, and the abort the user asked for. It owns the drain lock, the
// aggregation sites, the lineage tracker and the dump budget, and writes the summary at exit.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config.hpp"
#include "contexts.hpp"
#include "counters.hpp"
#include "event_log.hpp"
#include "finding_event.hpp"
#include "eager_tier.hpp"
#include "graph_instrumenter.hpp"
#include "kernel_table.hpp"
#include "lineage.hpp"
#include "python_frames.hpp"
#include "watches.hpp"

namespace nanscope {

class FindingReporter {
 public:
  FindingReporter(const Config& cfg, EventLog& log, KernelTable& kernels, Watches& watches, Contexts& contexts,
                  Allocations& allocs, GraphInstrumenter& graphs, EagerTier& eager_tier, Counters& counters,
                  PythonFrames& python, uint64_t start_ns)
      : cfg_(cfg), log_(log), kernels_(kernels), watches_(watches), contexts_(contexts), allocs_(allocs),
        graphs_(graphs), eager_tier_(eager_tier), counters_(counters), python_(python), start_ns_(start_ns),
        lineage_({}, lineage::Policy{cfg.inf_faults}) {}

  void start();      // the drain thread, every NANSCOPE_POLL_US
  void drain_all();  // every context, now
  // The state of a dying context, drained one last time and unlinked; the caller destroys it.
  std::unique_ptr<ContextState> retire(CUcontext ctx);
  void shutdown();         // at exit: last drain, closing repeats, summary
  void emergency_flush();  // from a fatal signal: best effort, no joins
  // The summary's figures now, with the channels' counts the caller took.
  SummaryFigures figures(const Contexts::ChannelTotals& channels) const;

 private:
  void drain_context(ContextState& cs);  // callers hold drain_mu_
  void handle_finding(const Finding& f, ContextState& cs);
  const Finding& as_replayed(const Finding& found, GraphRegistry::ReplayKind replay, Finding& renumbered);
  FindingFacts facts_of(const Finding& f, int device, const KernelInfo* k);
  // The launches that may have written a finding's values, when no tracked input or host write
  // explains them (origin candidate).
  std::optional<CandidateList> candidates_of(const Finding& f, const std::optional<LaunchFacts>& launch,
                                             std::optional<lineage::DeviceFinding>& d);
  // Its Python line and, for a candidate origin, its candidates as the log names them.
  uint64_t python_of(const Finding& f, const std::optional<LaunchFacts>& launch,
                     const std::optional<CandidateList>& candidates);
  void add_launch_facts(FindingFacts& facts, const std::optional<LaunchFacts>& launch,
                        const std::optional<CandidateList>& candidates, bool candidate);
  // Its origin, as event `event_id` (or a repeat of that event).
  std::optional<lineage::Verdict> classify(std::optional<lineage::DeviceFinding> d, uint64_t event_id, bool repeat);
  bool is_fault(const Finding& f, const std::optional<lineage::Verdict>& origin) const;
  void on_judged(const Finding& f, GraphRegistry::ReplayKind replay, bool fault, uint64_t event_id);
  // Writes the buffer of `f` as .npy with a JSON sidecar; returns the path, or empty.
  std::string dump_buffer(const Finding& f, ContextState& cs, uint64_t event_id, const Json& event);
  void abort_on_real(const Finding& f, const std::string& kernel, const std::string& watch);
  void emit_closing_repeats();  // callers hold drain_mu_
  // Whether the summary may take the context lock, already holds it, or must not touch it.
  enum class SummaryContexts { lock, held, skip };
  Json tensor_extents_json();
  void write_summary(SummaryContexts contexts = SummaryContexts::lock);
  std::string kernel_name(uint32_t kernel_id) const;

  const Config& cfg_;
  EventLog& log_;
  KernelTable& kernels_;
  Watches& watches_;
  Contexts& contexts_;
  Allocations& allocs_;
  GraphInstrumenter& graphs_;
  EagerTier& eager_tier_;
  Counters& counters_;
  PythonFrames& python_;
  const uint64_t start_ns_;

  Ranked<std::mutex, LockLevel::drain> drain_mu_{"FindingReporter::drain_mu_"};  // serialises drains (thread, flush, exit, context teardown)
  Sites sites_;          // under drain_mu_
  Ranked<std::mutex, LockLevel::part> lineage_mu_{"FindingReporter::lineage_mu_"};
  lineage::Tracker lineage_;  // roots, leaks and reach of the findings' origins
  uint32_t dumps_ = 0;        // drain thread only
  uint64_t dump_bytes_ = 0;

  std::thread drain_thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> in_signal_{false};  // emergency_flush from a fatal signal
  std::atomic<bool> aborting_{false};
};

}  // namespace nanscope

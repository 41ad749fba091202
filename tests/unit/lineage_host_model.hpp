// The host lineage model: the reference the device-side classification (lineage::Tracker::
// on_device_finding, fed by kernels/scan.cu's state words) is checked against. It keeps every
// tracked buffer's state on the host, fed launches, scans, copies and frees in device order,
// bounded by an LRU and a Bloom filter of evicted non-finite buffers. The engine used it before
// the state moved to the device; it now runs only in tests (test_lineage.cpp), where it pins the
// semantics both must share (docs/origin.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lineage.hpp"

namespace nanscope::lineage {

// One scanned kernel launch or graph node execution.
struct KernelLaunch {
  Site site;
  std::vector<BufferId> inputs;   // tracked buffers it reads (in-place buffers go here too)
  std::vector<BufferId> outputs;  // tracked buffers it writes; one without a ScanResult is lost
  bool reads_untracked = false;   // it also reads memory nanscope does not track
};

// The state of one written buffer after the launch (or copy / set).
struct ScanResult {
  BufferId buffer;
  bool nonfinite = false;
  RowSet rows;                    // for non-finite results
  uint64_t event_id = 0;          // id of the `nonfinite` event logged for it
  bool fixed = false;             // the fix zeroed its padding rows right after the scan
};

struct HostSummary : Summary {
  uint64_t outputs_unscanned = 0;  // written outputs without a scan: their state became lost
  std::size_t buffers = 0;         // states held now
};

class HostTracker : public Tracker {
 public:
  // `lost_filter_bits`: size of the Bloom filter of evicted non-finite buffers.
  explicit HostTracker(Limits limits = {}, std::size_t lost_filter_bits = 1 << 16);

  // A launch and the scans of its outputs. Returns one Verdict per non-finite ScanResult, in
  // order. Inputs are judged by their state before the launch.
  std::vector<Verdict> on_launch(const KernelLaunch& launch, const std::vector<ScanResult>& scans);
  // cuMemcpyHtoD* / cuMemset*: the values come from the host. `after` is dst's state after the
  // write (a rescan, or the memset value judged on the host). A verdict (origin host) when
  // non-finite; a finite write closes dst's lineage.
  std::optional<Verdict> on_host_write(const ScanResult& after, const Site& site = {});
  // Full device-to-device copy: dst takes src's state and lineage. Partial copies should be
  // fed as a launch reading src (and dst) and writing dst, with a rescan of dst.
  void on_copy_device(BufferId dst, BufferId src);
  // cuMemFree*: forget the buffer; a new allocation at the address starts clean.
  void on_free(BufferId buffer);

  HostSummary summary() const;

 private:
  struct State {
    bool nonfinite = false;             // false: a known-clean entry shadowing the lost filter
    uint64_t event_id = 0;
    RowSet rows;
    std::vector<uint64_t> roots;
    bool roots_truncated = false;
    std::list<uint64_t>::iterator lru;
  };
  enum class Seen : uint8_t { clean, nonfinite, lost };
  // What a launch's inputs held before it ran.
  struct Inputs {
    std::vector<uint64_t> parents, roots;
    std::vector<const RowSet*> parent_rows;
    bool lost = false, roots_truncated = false, parents_padding_only = true;
  };

  // on_launch; `host`: values not read from any tracked input are host values.
  std::vector<Verdict> record(const KernelLaunch& launch, const std::vector<ScanResult>& scans, bool host);
  Inputs read_inputs(const KernelLaunch& launch);
  void keep(const ScanResult& scan, const Verdict& v);
  Seen look(uint64_t ptr, const State** out);
  State& put(uint64_t ptr);
  void set_clean(uint64_t ptr);
  void set_lost(uint64_t ptr);
  bool maybe_lost(uint64_t ptr) const;

  std::unordered_map<uint64_t, State> states_;
  std::list<uint64_t> lru_;                 // front: most recently used
  std::vector<uint64_t> lost_;              // Bloom filter of evicted non-finite buffers
  uint64_t outputs_unscanned_ = 0;
};

}  // namespace nanscope::lineage

// NANSCOPE_* environment configuration: parsed once at init, immutable afterwards.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "extent_policy.hpp"
#include "rank_env.hpp"

namespace nanscope {

enum class Mode : uint8_t { detect, fix, abort };
const char* mode_name(Mode);

// NANSCOPE_GRAPH_PDL (overlap::edge_port in scan_overlap.hpp says which edges each value changes).
enum class GraphPdl : uint8_t { off, release, both };
const char* graph_pdl_name(GraphPdl);

// NANSCOPE_TIER (docs/sentinel.md): `full` scans every inspected output on every launch and
// replay; `sentinel`, for leaving nanscope on, runs only a graph's sentinel scan nodes until one
// fires, then every scan for NANSCOPE_ESCALATE replays. Eager launches are full in both for now.
enum class Tier : uint8_t { full, sentinel };
const char* tier_name(Tier);
inline constexpr uint32_t kMaxEscalate = 1000;  // NANSCOPE_ESCALATE's bound

struct Config {
  bool enabled = true;
  std::string log_path;             // NANSCOPE_LOG, "%p" / "%r" already replaced (log_file_name); empty: none
  bool log_path_unique = false;     // the name is this process's own (%p, %r, or made per rank): created new
  std::string log_path_fallback;    // LogFileName::fallback
  RankInfo rank;                    // rank, local_rank, world_size of a multi-process job (rank_env.hpp)
  bool console = true;              // NANSCOPE_CONSOLE
  std::string level = "info";       // NANSCOPE_LEVEL
  std::string kernel_filter;        // NANSCOPE_KERNEL_FILTER (ECMAScript regex, search)
  std::string kernel_exclude;       // NANSCOPE_KERNEL_EXCLUDE
  Mode mode = Mode::detect;         // NANSCOPE_MODE
  uint32_t channel_records = 4096;  // NANSCOPE_CHANNEL_RECORDS
  uint32_t max_captured_scans = 65536;  // NANSCOPE_MAX_CAPTURED_SCANS
  uint32_t poll_us = 500;           // NANSCOPE_POLL_US
  uint64_t max_scan_bytes = 0;      // NANSCOPE_MAX_SCAN_BYTES, 0 = whole allocation
  // NANSCOPE_MAX_WHOLE_ALLOC_BYTES: a driver allocation larger than this is taken for an
  // allocator's pool, and an extent that only reaches its end is not scanned (extent_policy.hpp).
  uint64_t max_whole_alloc_bytes = kDefaultMaxWholeAllocBytes;
  bool origin = true;               // NANSCOPE_ORIGIN: per-buffer state on the device, origin of each finding
  bool inf_faults = false;          // NANSCOPE_INF=fault: every infinity is a fault (default `ignore`: only
                                    // NaN, and the infinities a NaN was made from; docs/origin.md)
  bool typed = true;                // NANSCOPE_TYPED: scan typed outputs found in kernel signatures
                                    // (off: only watches and rules are scanned)
  bool graph_overlap = true;        // NANSCOPE_GRAPH_OVERLAP: scan nodes of instantiated graphs run beside
                                    // the app's next kernels instead of before them (docs/graphs.md)
  bool graph_merge = true;          // NANSCOPE_GRAPH_MERGE: scan nodes beside the app's kernels that may run
                                    // together become one node (docs/graphs.md)
  // NANSCOPE_GRAPH_PDL: programmatic edges around read-only scan nodes beside the chain
  // (docs/graphs.md): `release` lets a later writer of a scanned buffer start once the scan's
  // loads are done, `both` also lets the scan launch during its kernel's last wave, `off` neither.
  GraphPdl graph_pdl = GraphPdl::release;
  Tier tier = Tier::full;           // NANSCOPE_TIER: full or sentinel
  uint32_t escalate = 3;            // NANSCOPE_ESCALATE: replays run with every scan after a sentinel fires (1..1000)
  uint32_t eager_batch = 8;         // NANSCOPE_EAGER_BATCH: eager plain scans held per stream and launched
                                    // together, at most this many buffers a launch (2..8; 0: off, on and
                                    // the default: 8; always off in abort mode)
  uint32_t eager_batch_us = 1000;   // NANSCOPE_EAGER_BATCH_US: how long a held scan may wait for a driver call
  bool aggregate = true;            // NANSCOPE_AGGREGATE: fold identical findings into repeat events
  bool python_line = true;          // NANSCOPE_PYTHON_LINE: findings say which Python line launched the kernel
  std::string rules_path;           // NANSCOPE_RULES
  std::string dump_dir;             // NANSCOPE_DUMP_DIR: tensor dumps (.npy + .json sidecar)
  std::string xla_dump;             // NANSCOPE_XLA_DUMP, else XLA_FLAGS' --xla_dump_to: XLA's dumps, read (docs/jax.md)
  bool xla_dumps_off = false;       // NANSCOPE_XLA_DUMP=off: none read, even where XLA_FLAGS names some
  uint32_t dump_max = 16;           // NANSCOPE_DUMP_MAX: dumps per process
  uint64_t dump_max_bytes = 256ull << 20;  // NANSCOPE_DUMP_MAX_BYTES: bytes of dumps per process

  std::string describe() const;     // one line for the startup echo
};

struct ConfigResult {
  Config config;
  std::vector<std::string> errors;  // one message per rejected variable, naming it
};

// NANSCOPE_LOG's file name for this process: "%p" becomes the pid, "%r" the rank (the pid when
// no rank is known, so two processes never append to one file). A name with neither in a job
// of several processes (rank.multi_process()) gets ".rank<R>" (".pid<P>" without a rank)
// before its extension, for the same reason. `note` says what was done when it was not what
// the name says literally.
struct LogFileName {
  std::string path;
  bool unique = false;  // this process's own name: created new (O_EXCL), never appended to
  std::string note;     // empty, or one line for the start-up warnings
  // For a rank's name (%r): where to write when that name already exists (a rerun in the same
  // directory, a restarted rank): the name with ".pid<P>" before its extension.
  std::string fallback;
};
LogFileName log_file_name(const std::string& pattern, long pid, const RankInfo& rank);

// `getenv` is injectable for tests. `pid` replaces "%p" in NANSCOPE_LOG.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
ConfigResult parse_config(const EnvLookup& getenv_fn, long pid);
ConfigResult parse_config_from_environment();

}  // namespace nanscope

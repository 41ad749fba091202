// XLA's kernels (issue 38, docs/jax.md): which dump module a loaded CUmodule is, so a launch of
// one of its functions is decoded from the kernel thunks XLA dumped (decode/xla.hpp). The dumps
// are where NANSCOPE_XLA_DUMP (set by the launcher) or XLA_FLAGS' --xla_dump_to says; a module is
// matched by its function names (xla::match_kernel_names: exactly one dump module's kernels, or,
// for the one-kernel modules jaxlib 0.11 loads, every dump module holding them; each launch then
// picks its thunks by its parameter words and grid) at the first launch of one of its kernels,
// after reading the dump directory again if it changed since the last read (XLA writes a
// module's files while compiling it, before it loads it; and the same kernel name is in many
// modules, so a module dumped later may hold it too). What cannot be read (the directory, a file) is
// a warning naming it; the kernels it would have described stay not inspected, with the reason.
#pragma once
#include <cuda.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_log.hpp"
#include "lock_rank.hpp"
#include "xla_kernels.hpp"

namespace nanscope {

class XlaModules {
 public:
  // `dumps_off`: the user turned the dumps off (NANSCOPE_XLA_DUMP=off); `dump_dir` is then empty.
  XlaModules(std::string dump_dir, bool dumps_off, EventLog& log)
      : dir_(std::move(dump_dir)), dumps_off_(dumps_off), log_(log) {}
  bool on() const { return !dir_.empty(); }
  // With no dumps read (not on()): why an untyped kernel is not inspected when an XLA runtime is
  // loaded in the process (xla::no_dumps_reason), said once as a warning `xla_no_dumps` unless
  // the dumps are off; empty when no XLA runtime is loaded. The loaded objects are listed again
  // only when one was loaded since (dl_phdr_info's load count).
  std::string without_dumps();
  using Modules = std::vector<std::shared_ptr<const xla::DumpModule>>;
  // The dump modules `function` (a CUfunction about to be decoded) may be, or none with `reason`
  // (empty when no XLA module was dumped at all: nothing to say of a program that is not XLA's);
  // `module` is its CUmodule (the kernel table forgets the function when it is unloaded).
  // `none_hold`: no dump module holds its functions at all (not too many, not another reason).
  Modules lookup(void* function, std::string& reason, CUmodule& module, bool& none_hold);
  // Enter site of cuModuleUnload: its handle may come back for another module.
  void on_unload(CUmodule module);
  // How many times modules were added from the directory: a kernel whose lookup found none is
  // looked up again once this moved (KernelTable::resolve). The same CUmodule can serve the
  // autotuner's candidate, launched before its module was dumped, and then the program (seen on
  // the H200: stream_executor loads an identical cubin once), so a miss is not final.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Reads the directory again if it changed, at most every kPollNs: for kernels whose lookup
  // found nothing, which launch again without loading a module.
  void poll();
  // The module XLA is optimizing now (xla::module_being_optimized of the directory, read again if
  // it changed), or empty. A launch of a kernel no dump module holds, made meanwhile, is XLA's
  // autotuning (LaunchInstrumenter: counted compile_time, neither scanned nor a candidate writer).
  // `first`, when given, is set for the first launch said of that module (a debug line per compile).
  std::string optimizing_now(bool* first = nullptr);
  // At exit: the launcher's own directory (nanscope-xla-XXXXXX) is removed when XLA wrote nothing
  // in it (a program that is not XLA's); one with dumps stays, what the findings were read against.
  void remove_if_unused() const;

 private:
  struct Match {
    Modules modules;
    std::string reason;
    uint64_t generation = 0;  // generation_ when matched: a miss is matched again once it moved
    bool none_hold = false;   // xla::ModulesFor::none_hold
  };
  Match match(CUmodule module);
  struct Found {
    Modules modules;
    std::string reason;
    bool matched_now = false;
    bool none_hold = false;  // no dump module holds its functions (or none is dumped yet)
    std::vector<std::string> errors;
  };
  Found find(CUmodule module);
  void say_match(const Found& f) const;
  void read_if_changed();
  void read_new_modules();

  std::string loaded_xla_runtime();

  const std::string dir_;
  const bool dumps_off_;
  EventLog& log_;  // what could not be read is said once, after mu_ is released
  static constexpr uint64_t kMaxFileBytes = 256ull << 20;  // one dump file; larger: an error, not read
  static constexpr size_t kMaxModules = 4096;               // modules kept (a long run compiles many)
  static constexpr size_t kMaxMatches = 1u << 14;           // CUmodules remembered; past it, matched again
  // Level 4: reads files and asks the driver for names, calls nothing of ours that locks.
  Ranked<std::mutex, LockLevel::container> mu_{"XlaModules::mu_"};
  std::vector<std::shared_ptr<const xla::DumpModule>> modules_;  // read so far, in reading order
  std::vector<std::set<std::string>> kernel_names_;              // each one's kernel names
  std::set<std::string> known_;                                  // their names
  std::unordered_map<CUmodule, Match> by_module_;                // each CUmodule, matched once
  std::filesystem::file_time_type last_read_mtime_{};            // the directory's, at the last read
  bool read_once_ = false;
  bool compiling_began_ = false;    // at the last read: a module's file is there (DumpDirRead)
  std::string optimizing_;          // at the last read: module_being_optimized
  std::set<std::string> optimizing_said_;  // modules whose autotuning launches were said (bounded: kMaxSaid)
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> next_poll_ns_{0};
  static constexpr uint64_t kPollNs = 50'000'000;
  // Level 4, alone, never held across the loader's lock: the XLA runtime found among the loaded
  // objects (without_dumps), and the loader's load count at the last look.
  Ranked<std::mutex, LockLevel::container> runtime_mu_{"XlaModules::runtime_mu_"};
  std::string runtime_;
  unsigned long long runtime_loads_seen_ = 0;
  std::atomic<bool> advised_{false};
  std::vector<std::string> errors_;  // to say, each once (said_)
  std::set<std::string> said_;
  static constexpr size_t kMaxSaid = 256;
};

}  // namespace nanscope

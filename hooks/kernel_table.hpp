// Per-kernel decoding, done once per function handle and cached: name, parameter layout
// from the driver, and which parameters are floating-point outputs.
#pragma once
#include "lock_rank.hpp"
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode/aten.hpp"
#include "decode/triton.hpp"
#include "launch_params.hpp"
#include "python_line.hpp"
#include "rules.hpp"
#include "scan_overlap.hpp"
#include "scan_abi.h"
#include "signature.hpp"
#include "xla_kernels.hpp"

namespace nanscope {

struct OutputParam {
  uint32_t arg = 0;
  DType dtype = DType::none;
};

// Which kernel-family decoder (src/decode) names a kernel's writes at each launch.
enum class Decoder : uint8_t { none, aten, triton, xla };

struct KernelInfo {
  uint32_t id = 0;
  std::string mangled;
  std::string demangled;
  const char* symbol_seen = nullptr;  // symbolName pointer last seen with this handle
  bool inspected = false;             // has typed outputs to scan
  bool excluded = false;              // filtered out: never look at it
  std::string reason;                 // why not inspected
  std::vector<OutputParam> outputs;
  std::vector<OutputParam> inputs;    // const floating pointers: the tracked reads (origin)
  bool hidden_reads = true;           // parameters that may hold pointers nanscope cannot see
  // Kernel-family decoding: exact writes per launch, in place of the signature's outputs.
  Decoder decoder = Decoder::none;
  bool layout_mismatch = false;       // a decoder claimed the name but the layout did not fit
  bool library = false;               // a cuBLAS/cuDNN kernel (coverage counts them apart)
  decode::FamilyMatch aten;
  std::shared_ptr<const decode::TritonSignature> triton;
  // Decoder::xla: the dump modules its CUmodule may be (one, or every one holding a kernel of its
  // name when XLA loaded it as a module of its own); each launch picks its thunks among them.
  std::vector<std::shared_ptr<const xla::DumpModule>> xla;
  CUmodule xla_module = nullptr;  // that CUmodule: its unload forgets the handle
  // Its CUmodule matched no dump module while XLA had dumped some (XlaModules::generation then):
  // looked up again once more modules are dumped (resolve).
  bool xla_missed = false;
  // And no dump module holds its name at all (xla::ModulesFor::none_hold): only such a kernel's
  // launch during a compile is taken for XLA's autotuning (xla_optimizing).
  bool xla_unheld = false;
  // One of XLA's autotuner kernels (builtin_exclusion): the thread launching it is autotuning.
  bool xla_autotuner = false;
  // Moved forward, on the shared entry, when a lookup again found nothing (any thread may).
  struct Generation {
    mutable std::atomic<uint64_t> value{0};
    Generation() = default;
    Generation(const Generation& o) : value(o.value.load(std::memory_order_relaxed)) {}
    Generation& operator=(const Generation& o) {
      value.store(o.value.load(std::memory_order_relaxed), std::memory_order_relaxed);
      return *this;
    }
  };
  Generation xla_generation;
  // Its user's line when the kernel names it (an XLA kernel's, from the HLO metadata): findings
  // name it instead of the Python frames at the launch (JAX's dispatch).
  std::optional<PythonLine> source_line;
  // PyTorch's single-output elementwise kernels (vectorized / unrolled) take their tensors as
  // one std::array<char*, N>, output first: the index of that parameter, or -1. Only its
  // first pointer is written; the others are inputs.
  int32_t output_first_array = -1;
  std::vector<std::pair<uint32_t, uint32_t>> params;  // offset, size of each parameter
  bool params_known = false;
  std::vector<uint32_t> rules;        // indices of matching rules
  std::vector<ParamRole> roles;       // from the signature, when it matches the layout
  std::vector<bool> read_only;        // parameters that are pointers to const: never written through
  // Whether parameter `i` (at byte `offset` inside it) may hold a pointer the kernel writes through.
  bool may_write_through(uint32_t i, uint32_t offset) const {
    if (static_cast<int32_t>(i) == output_first_array) return offset == 0;
    return !(i < read_only.size() && read_only[i]);
  }
};

// What a launch of `k` may write, as graphs and held eager scans model it: {v, v + 1} for every
// non-zero 8-byte parameter word that may be a pointer it writes through (not a pointer to const).
// `writable`, when given (one flag per parameter), names the only parameters it may write through.
// False, with `out` partly filled, when a parameter's bytes cannot be read.
bool written_words(const KernelInfo& k, const LaunchArgs& a, std::vector<overlap::Range>& out,
                   const std::vector<bool>& writable = {});
// The same words as values (overlap::launch_writes takes them from there).
bool pointer_words(const KernelInfo& k, const LaunchArgs& a, std::vector<uint64_t>& out,
                   const std::vector<bool>& writable = {});

class TritonModules;
class XlaModules;

class KernelTable {
 public:
  // `rules` must outlive the table.
  KernelTable(std::string filter, std::string exclude, const std::vector<Rule>* rules);

  // Returns the cached info for `handle`, decoding it on first sight. `is_new` is set when
  // this call created the entry (so the caller can log it once).
  const KernelInfo& resolve(void* handle, const char* symbol_name, bool& is_new);
  const KernelInfo* by_id(uint32_t id) const;
  // An id for a writer that is not a kernel (a copy or memset), named by its driver call.
  uint32_t pseudo(const char* name);
  // cuModuleUnload of `module`: its XLA kernels' handles are forgotten (a handle the driver gives
  // again, with a name XLA reuses in every module, must be matched to its own dump module).
  void on_module_unload(CUmodule module);
  // Where Triton kernels' signatures come from (set once, before the first launch).
  void set_triton(const TritonModules* modules) { triton_ = modules; }
  // Where XLA kernels' dump modules come from (set once, before the first launch).
  void set_xla(XlaModules* modules) { xla_ = modules; }
  // The module XLA is optimizing while `k`, a kernel no dump module holds (KernelInfo::xla_unheld),
  // is launched: the launch is XLA's autotuning, not the program's. Empty otherwise, and for
  // every other kernel. `first`: the first such launch said of that module.
  std::string xla_optimizing(const KernelInfo& k, bool& first) const;
  // XLA's autotuning through a library (its cuBLAS and cuDNN candidates, which no dump holds and
  // whose kernels are the library's): a library call is taken for it when XLA is optimizing a
  // module and the calling thread launched one of XLA's autotuner kernels (a buffer fill, a
  // redzone check) while XLA optimized that same module. The exit site of an autotuner kernel
  // notes the module on its thread; the check forgets it once that module is optimized.
  void note_autotuner_launch() const;
  bool autotuning_on_this_thread() const;
  uint64_t inspected_count() const { return inspected_.load(std::memory_order_relaxed); }
  uint64_t not_inspected_count() const { return not_inspected_.load(std::memory_order_relaxed); }

 private:
  KernelInfo decode(void* handle, const char* symbol_name) const;
  // The kernel-family decoders; true when one claimed the kernel (decoded or refused).
  bool decode_family(void* handle, const KernelSignature& sig, KernelInfo& k) const;
  void decode_signature(const KernelSignature& sig, KernelInfo& k) const;
  static void say_if_library(KernelInfo& k);
  void say_untyped_remedy(KernelInfo& k, bool xla_module_missed) const;
  bool untyped_family(void* handle, KernelInfo& k) const;
  bool xla_without_dumps(KernelInfo& k) const;
  bool xla_retry(const KernelInfo& k) const;
  const KernelInfo* cached(void* handle, const char* symbol_name) const;  // the entry, if any

  const TritonModules* triton_ = nullptr;
  XlaModules* xla_ = nullptr;

  const std::vector<Rule>* rules_;
  std::optional<SafeRegex> filter_, exclude_;  // never backtracks (safe_regex.hpp)
  mutable Ranked<std::shared_mutex, LockLevel::part> mu_{"KernelTable::mu_"};
  std::unordered_map<void*, uint32_t> by_handle_;
  std::deque<KernelInfo> infos_;  // deque: stable addresses while growing
  std::unordered_map<std::string, uint32_t> pseudo_ids_;
  std::atomic<uint64_t> inspected_{0}, not_inspected_{0};
};

}  // namespace nanscope

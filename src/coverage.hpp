// Coverage: how much of what the program ran nanscope actually looked at, so a user can tell
// "clean" from "not looked at". Counted per launch on the hot path (relaxed atomics in
// fixed chunks indexed by kernel id, no lock after a kernel's first launch), reported in the
// summary: launches by how they were inspected, bytes scanned against bytes written by decoded
// kernels, and the kernels launched most often without inspection, each with its reason.
#pragma once
#include "lock_rank.hpp"
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace nanscope {

// How one launch was inspected. X-macro: the enum and the summary's key names from one list.
#define NANSCOPE_INSPECTIONS(X)                                                                          \
  X(decoded, "decoded")     /* a kernel-family decoder (ATen, Triton) named what it writes */          \
  X(typed, "typed")         /* typed outputs from the kernel's signature */                             \
  X(watched, "watched")     /* only watches or rules */                                                 \
  X(opaque, "opaque")       /* nothing known about what it writes: not inspected */                     \
  X(library, "library")     /* a cuBLAS/cuBLASLt/cuDNN kernel: opaque, its output is the library call's */ \
  X(mismatch, "layout_mismatch") /* a decoder claimed the name but the layout did not fit */             \
  X(extent_unknown, "extent_unknown") /* only an allocator pool's end bounded its outputs: none scanned */ \
  X(sampled_out, "sampled_out") /* NANSCOPE_TIER=sentinel, eager: outside the sample, not scanned */      \
  X(excluded, "excluded")   /* filtered out by NANSCOPE_KERNEL_FILTER / _EXCLUDE, or a tool's own kernel */ \
  X(compile_time, "compile_time") /* XLA's autotuning: a kernel no dump module holds, launched while XLA  \
                                     optimized a module (xla::module_being_optimized): not the program's */

enum class Inspection : uint8_t {
#define NANSCOPE_X(id, key) id,
  NANSCOPE_INSPECTIONS(NANSCOPE_X)
#undef NANSCOPE_X
  count_
};
const char* inspection_key(Inspection);
// Whether a kernel name is one of the math libraries' own (cuBLAS, cuBLASLt, cuDNN, CUTLASS
// GEMMs): opaque by design, counted apart from the kernels a decoder should cover.
bool library_kernel(std::string_view name);
// Why a library kernel no decoder covers is not inspected. Its launch is never scanned on its own
// (its parameters are the library's structs), but what it writes is judged all the same: by the
// scan of the intercepted library call that launched it, or else by its readers' initial scans.
// "use a watch" or "set XLA_FLAGS" would send the user after a remedy that changes nothing.
inline constexpr std::string_view kLibraryKernelReason =
    "a math library's own kernel (cuBLAS, cuBLASLt, cuDNN, CUTLASS): what it writes is scanned after the "
    "library call that launched it where nanscope intercepts that call (the summary's library_calls), "
    "else judged by its readers' initial scans";

// A CUTLASS 3 kernel a framework compiled in itself, `cutlass::device_kernel<Op>(Op::Params)`
// (ATen's grouped GEMM behind torch.nn.functional.grouped_mm, its scaled GEMMs): its one parameter
// is CUTLASS's Params struct, whose pointers no decoder reads, and no library call nanscope
// intercepts launched it. Its name is typed (the generic "name carries no parameter types" was
// wrong), and its output is judged by its readers' initial scans unless a watch scans it.
bool cutlass_device_kernel(std::string_view mangled_or_demangled);
inline constexpr std::string_view kCutlassKernelReason =
    "a CUTLASS kernel (its parameter is CUTLASS's Params struct, not decoded) that no intercepted library "
    "call launched: what it writes is judged by its readers' initial scans; a watch on its output scans it "
    "after each launch";

class Coverage {
 public:
  static constexpr uint32_t kChunk = 1024, kChunks = 64;  // kernel ids up to 65,535 counted one by one

  // Once per kernel, when the kernel table first decodes it: its name and why it is not
  // inspected (empty when it is).
  void on_kernel(uint32_t kernel_id, const std::string& name, const std::string& reason);
  // A kernel a decoder matched whose launch it then refused (values that do not fit): listed
  // with the decoder's reason, once.
  void on_refused_launch(uint32_t kernel_id, const std::string& name, std::string_view reason);
  // Whether the kernel's refusal is listed already (its reason, said once, need not be built again).
  bool refusal_listed(uint32_t kernel_id) const;
  // Per launch. `written` is what a decoder says the launch writes (0 when unknown); `scanned`
  // what the scan task reads.
  void on_launch(uint32_t kernel_id, Inspection how, uint64_t written, uint64_t scanned);
  // Per launch of a library call's output scan (GEMMs and the like) or a rescan after a copy.
  void on_extra_scan(uint64_t scanned) { scanned_.fetch_add(scanned, std::memory_order_relaxed); }
  // Per intercepted library call (cuBLAS / cuBLASLt): `refused` is null when its output was
  // scanned, else why not (a static string: the calls not scanned are listed by reason).
  void on_library_call(const char* api, const char* refused);
  // Per launch of a graph exec under the sentinel tier (docs/sentinel.md): `every_scan` when it
  // ran every scan node (an escalated window, or a launch the twin interposer did not see), else
  // it ran only the sentinel scans, and the kernels upstream of them were not looked at.
  void on_tier_replay(bool every_scan) {
    (every_scan ? tier_every_scan_ : tier_sentinel_only_).fetch_add(1, std::memory_order_relaxed);
  }

  uint64_t launches(Inspection how) const { return by_kind_[static_cast<size_t>(how)].load(std::memory_order_relaxed); }
  // The summary's `coverage` object; `top` not-inspected kernels by launch count.
  nlohmann::ordered_json to_json(size_t top = 10) const;

 private:
  struct Chunk {
    std::array<std::atomic<uint64_t>, kChunk> launches{};
  };
  std::atomic<uint64_t>* counter(uint32_t kernel_id);
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Inspection::count_)> by_kind_{};
  std::atomic<uint64_t> written_{0}, scanned_{0}, written_scanned_{0}, overflow_{0};
  std::atomic<uint64_t> tier_sentinel_only_{0}, tier_every_scan_{0};
  std::array<std::atomic<Chunk*>, kChunks> chunks_{};
  std::vector<std::unique_ptr<Chunk>> owned_;  // under mu_
  mutable Ranked<std::mutex, LockLevel::container> mu_{"Coverage::mu_"};
  struct Kernel {
    uint32_t id;
    std::string name, reason;
  };
  std::vector<Kernel> not_inspected_;  // under mu_, one per kernel
  std::vector<bool> refused_listed_;   // under mu_: kernel ids on_refused_launch listed
  std::atomic<uint64_t> library_calls_{0}, library_scanned_{0};
  struct LibraryRefusal {
    const char* api;
    const char* why;
    uint64_t calls;
  };
  std::vector<LibraryRefusal> library_refused_;  // under mu_; few distinct (api, reason) pairs
};

}  // namespace nanscope

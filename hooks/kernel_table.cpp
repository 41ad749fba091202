#include "kernel_table.hpp"

#include <cstring>

#include <fmt/format.h>

#include "builtin_exclusions.hpp"
#include "coverage.hpp"
#include "triton_modules.hpp"
#include "xla_autotuning.hpp"
#include "xla_modules.hpp"
#include <mutex>

namespace nanscope {

namespace {

struct ParamLayout {
  bool ok = false;
  std::vector<std::pair<size_t, size_t>> params;  // offset, size
};

// There is no parameter-count API: ask for parameter i until the driver says no. Runtime
// launches hand us a CUkernel, everything else a CUfunction; only one of the two APIs
// accepts a given handle.
ParamLayout param_layout(void* handle) {
  ParamLayout out;
  for (int api = 0; api < 2 && !out.ok; ++api) {
    out.params.clear();
    for (size_t i = 0;; ++i) {
      size_t off = 0, size = 0;
      CUresult r = api == 0 ? cuKernelGetParamInfo(static_cast<CUkernel>(handle), i, &off, &size)
                            : cuFuncGetParamInfo(static_cast<CUfunction>(handle), i, &off, &size);
      if (r != CUDA_SUCCESS) {
        out.ok = i > 0 || r == CUDA_ERROR_INVALID_VALUE;  // INVALID_VALUE at 0: no parameters
        break;
      }
      out.params.emplace_back(off, size);
    }
  }
  return out;
}

std::string name_of(void* handle, const char* symbol_name) {
  if (symbol_name && *symbol_name) return symbol_name;
  const char* n = nullptr;
  if (cuKernelGetName(&n, static_cast<CUkernel>(handle)) == CUDA_SUCCESS && n) return n;
  if (cuFuncGetName(&n, static_cast<CUfunction>(handle)) == CUDA_SUCCESS && n) return n;
  return {};
}

}  // namespace

KernelTable::KernelTable(std::string filter, std::string exclude, const std::vector<Rule>* rules)
    : rules_(rules) {
  // The config parser already validated both expressions.
  if (!filter.empty()) filter_ = SafeRegex::compile(filter, nullptr);
  if (!exclude.empty()) exclude_ = SafeRegex::compile(exclude, nullptr);
}

KernelInfo KernelTable::decode(void* handle, const char* symbol_name) const {
  KernelInfo k;
  k.symbol_seen = symbol_name;
  k.mangled = name_of(handle, symbol_name);
  KernelSignature sig = parse_kernel_signature(k.mangled);
  k.demangled = sig.demangled.empty() ? k.mangled : sig.demangled;
  // Tools' own kernels (XLA's autotuner) first: never scanned and never blamed, whatever the
  // filters say, and their reason says why.
  if (const auto tool = builtin_exclusion(k.demangled)) {
    k.reason = std::string(*tool);
    k.excluded = true;
    k.xla_autotuner = is_xla_autotuner(*tool);
    return k;
  }
  if (filter_ && !filter_->search(k.demangled)) {
    k.reason = "excluded by NANSCOPE_KERNEL_FILTER";
    k.excluded = true;
    return k;
  }
  if (exclude_ && exclude_->search(k.demangled)) {
    k.reason = "excluded by NANSCOPE_KERNEL_EXCLUDE";
    k.excluded = true;
    return k;
  }
  // The layout serves watches and rules too, which find pointers inside any parameter.
  ParamLayout layout = param_layout(handle);
  if (layout.ok) {
    k.params_known = true;
    for (auto [off, size] : layout.params) k.params.emplace_back(static_cast<uint32_t>(off), static_cast<uint32_t>(size));
  }
  if (rules_)
    for (uint32_t i = 0; i < rules_->size(); ++i)
      if ((*rules_)[i].matches(k.demangled)) k.rules.push_back(i);
  k.library = library_kernel(k.mangled) || library_kernel(k.demangled);
  if (!decode_family(handle, sig, k)) decode_signature(sig, k);
  say_if_library(k);
  return k;
}

// A math library's kernel no decoder covers: its reason names the call that judges it, not the
// decoders' remedy ("use a watch", XLA's dump flags), which would change nothing for it.
void KernelTable::say_if_library(KernelInfo& k) {
  if (k.library && !k.inspected && !k.layout_mismatch) k.reason = kLibraryKernelReason;
}

// ATen families by their name, Triton kernels by their module's TTIR: each decoder gates on the
// driver's layout, and a layout it does not expect makes the kernel not inspected, never a guess.
bool KernelTable::decode_family(void* handle, const KernelSignature& sig, KernelInfo& k) const {
  if (!k.params_known) return false;
  if (sig.has_params) {
    k.aten = decode::match_aten(k.mangled, k.demangled, k.params);
    if (k.aten.kind == decode::MatchKind::not_aten) return false;
    if (sig.params.size() == k.params.size())
      for (const ParamSig& p : sig.params) k.roles.push_back(p.role), k.read_only.push_back(p.read_only);
  } else {
    if (!triton_ && !(xla_ && xla_->on())) return false;
    if (!untyped_family(handle, k)) return true;
  }
  if (k.aten.kind == decode::MatchKind::layout_mismatch) {
    k.layout_mismatch = true;
    k.reason = fmt::format("layout mismatch ({}: {})", decode::aten_family_name(k.aten.family), k.aten.reason);
    return true;
  }
  k.decoder = k.triton ? Decoder::triton : !k.xla.empty() ? Decoder::xla : Decoder::aten;
  k.hidden_reads = false;  // the decoder names every pointer the launch reads
  k.inspected = true;
  return true;
}

// A kernel whose name carries no types: a Triton kernel (its module's TTIR) or an XLA kernel
// (the dump module its CUmodule matched). False, with the reason, when neither knows it.
bool KernelTable::untyped_family(void* handle, KernelInfo& k) const {
  std::string triton_why = "no Triton modules", xla_why;
  if (triton_ && (k.triton = triton_->lookup(handle, k.mangled, triton_why))) return true;
  const uint64_t generation = xla_ && xla_->on() ? xla_->generation() : 0;
  bool none_hold = false;
  if (xla_ && xla_->on() && !(k.xla = xla_->lookup(handle, xla_why, k.xla_module, none_hold)).empty()) {
    std::vector<const xla::DumpModule*> among;
    for (const auto& m : k.xla) among.push_back(m.get());
    if (const std::optional<xla::SourceLine> line = xla::kernel_source(among, k.mangled))
      k.source_line = PythonLine{line->file, line->line, line->function, {}, 0, line->op};
    return true;
  }
  k.reason = "name carries no parameter types and no Triton TTIR was found (" + triton_why + ")";
  if (!xla_why.empty()) {
    k.reason += "; no XLA dump module (" + xla_why + ")";
    k.xla_missed = k.xla_module != nullptr;
    k.xla_unheld = k.xla_missed && none_hold;
    k.xla_generation.value.store(generation, std::memory_order_relaxed);
  }
  say_untyped_remedy(k, !xla_why.empty());
  return false;
}

// An untyped kernel, not a library's, in a process where XLA runs but no dumps are read: its
// reason names the variable that makes XLA's kernels inspected (XlaModules::without_dumps).
bool KernelTable::xla_without_dumps(KernelInfo& k) const {
  if (!xla_ || xla_->on() || k.library) return false;
  const std::string why = xla_->without_dumps();
  if (why.empty()) return false;
  k.reason += "; " + why;
  return true;
}

// What an untyped kernel's reason ends with: XLA's variable when XLA runs without dumps; for a
// CUTLASS device kernel no XLA dump module was looked for, what judges its output; else a watch.
void KernelTable::say_untyped_remedy(KernelInfo& k, bool xla_module_missed) const {
  if (xla_without_dumps(k)) return;
  if (!xla_module_missed && cutlass_device_kernel(k.mangled)) k.reason = kCutlassKernelReason;
  else k.reason += "; use a watch";
}

// Kernels no decoder claims: floating pointers the mangled signature types.
void KernelTable::decode_signature(const KernelSignature& sig, KernelInfo& k) const {
  if (!sig.has_params) {
    k.reason = "name carries no parameter types (extern \"C\", Triton or XLA)";
    say_untyped_remedy(k, false);
    return;
  }
  if (!k.params_known) {
    k.reason = "driver gave no parameter layout";
    return;
  }
  if (k.params.size() != sig.params.size()) {
    k.reason = "parameter count mismatch between name and driver";
    return;
  }
  for (const ParamSig& p : sig.params) k.roles.push_back(p.role), k.read_only.push_back(p.read_only);
  if (k.demangled.find("at::native::vectorized_elementwise_kernel<") != std::string::npos ||
      k.demangled.find("at::native::unrolled_elementwise_kernel<") != std::string::npos)
    for (uint32_t i = 0; i < sig.params.size(); ++i)
      if (sig.params[i].type.rfind("std::array<char*,", 0) == 0) k.output_first_array = static_cast<int32_t>(i);
  k.hidden_reads = false;
  for (uint32_t i = 0; i < sig.params.size(); ++i) {
    const ParamSig& p = sig.params[i];
    const bool pointer_sized = k.params[i].second == sizeof(void*);
    if (p.role == ParamRole::output && pointer_sized) k.outputs.push_back({i, p.dtype});
    if (p.role == ParamRole::input && pointer_sized && k.inputs.size() < NANSCOPE_ORIGIN_MAX_INPUTS)
      k.inputs.push_back({i, p.dtype});
    else if (p.role == ParamRole::input) k.hidden_reads = true;  // more inputs than a task tracks
    if (p.role == ParamRole::other && may_hide_pointers(p.type)) k.hidden_reads = true;
  }
  if (k.outputs.empty()) {
    k.reason = "no typed floating-point output pointers (pointers may hide in structs); use a watch";
    return;
  }
  if (k.outputs.size() > 8) k.outputs.resize(8);  // NANSCOPE_SCAN_MAX_BUFFERS
  k.inspected = true;
}

// An XLA kernel whose CUmodule matched no dump module, once XLA has dumped more: matched again.
bool KernelTable::xla_retry(const KernelInfo& k) const {
  if (!k.xla_missed || !xla_) return false;
  xla_->poll();  // throttled: the directory is read at most every 50 ms
  return xla_->generation() != k.xla_generation.value.load(std::memory_order_relaxed);
}

const KernelInfo* KernelTable::cached(void* handle, const char* symbol_name) const {
  std::shared_lock lock(mu_);
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return nullptr;
  const KernelInfo& k = infos_[it->second];  // infos_ is a deque: the entry stays where it is
  // A handle can be reused after its module is unloaded: the name tells.
  return k.symbol_seen == symbol_name || !symbol_name || k.mangled == symbol_name ? &k : nullptr;
}

std::string KernelTable::xla_optimizing(const KernelInfo& k, bool& first) const {
  first = false;
  if (!k.xla_unheld || k.inspected || !xla_) return {};
  return xla_->optimizing_now(&first);
}

namespace {
// This thread's autotuning (xla_autotuning.hpp); constant-initialised: no TLS constructor runs.
thread_local xla::AutotuningThread t_autotuning;
}  // namespace

void KernelTable::note_autotuner_launch() const {
  if (xla_) t_autotuning.autotuner_launched(xla_->optimizing_now());
}

bool KernelTable::autotuning_on_this_thread() const {
  if (!t_autotuning.may_be_autotuning() || !xla_) return false;  // a thread that never autotuned: no lookup
  return t_autotuning.call_is_autotuning(xla_->optimizing_now());
}

const KernelInfo& KernelTable::resolve(void* handle, const char* symbol_name, bool& is_new) {
  is_new = false;
  const KernelInfo* cached = this->cached(handle, symbol_name);
  if (cached && !xla_retry(*cached)) return *cached;
  const uint32_t retried = cached ? cached->id : UINT32_MAX;
  const uint64_t generation = cached ? xla_->generation() : 0;
  KernelInfo k = decode(handle, symbol_name);
  if (cached && k.xla.empty()) {
    // Still no dump module: the entry stays, its reason and id with it, and waits for the next change.
    cached->xla_generation.value.store(generation, std::memory_order_relaxed);
    return *cached;
  }
  std::unique_lock lock(mu_);
  auto it = by_handle_.find(handle);
  if (it != by_handle_.end() && it->second != retried &&
      (!symbol_name || infos_[it->second].mangled == symbol_name)) {
    infos_[it->second].symbol_seen = symbol_name;
    return infos_[it->second];
  }
  k.id = static_cast<uint32_t>(infos_.size());
  (k.inspected ? inspected_ : not_inspected_).fetch_add(1, std::memory_order_relaxed);
  if (retried != UINT32_MAX) not_inspected_.fetch_sub(1, std::memory_order_relaxed);  // the missed entry it replaces
  infos_.push_back(std::move(k));
  by_handle_[handle] = infos_.back().id;
  is_new = true;
  return infos_.back();
}

uint32_t KernelTable::pseudo(const char* name) {
  {
    std::shared_lock lock(mu_);
    if (auto it = pseudo_ids_.find(name); it != pseudo_ids_.end()) return it->second;
  }
  std::unique_lock lock(mu_);
  if (auto it = pseudo_ids_.find(name); it != pseudo_ids_.end()) return it->second;
  KernelInfo k;
  k.id = static_cast<uint32_t>(infos_.size());
  k.mangled = k.demangled = name;
  k.reason = "a copy or memset, not a kernel";
  infos_.push_back(std::move(k));
  pseudo_ids_.emplace(name, infos_.back().id);
  return infos_.back().id;
}

void KernelTable::on_module_unload(CUmodule module) {
  std::unique_lock lock(mu_);
  std::erase_if(by_handle_, [&](const auto& entry) { return infos_[entry.second].xla_module == module; });
}

const KernelInfo* KernelTable::by_id(uint32_t id) const {
  std::shared_lock lock(mu_);
  return id < infos_.size() ? &infos_[id] : nullptr;
}

bool pointer_words(const KernelInfo& k, const LaunchArgs& a, std::vector<uint64_t>& out,
                   const std::vector<bool>& writable) {
  for (uint32_t i = 0; i < k.params.size(); ++i) {
    const char* bytes = param_bytes(a, k.params, i);
    if (!bytes) return false;
    if (i < writable.size() && !writable[i]) continue;
    for (uint32_t off = 0; off + 8 <= k.params[i].second; off += 8) {
      uint64_t v = 0;
      std::memcpy(&v, bytes + off, sizeof(v));
      if (v && k.may_write_through(i, off)) out.push_back(v);  // any word that may be a pointer
    }
  }
  return true;
}

bool written_words(const KernelInfo& k, const LaunchArgs& a, std::vector<overlap::Range>& out,
                   const std::vector<bool>& writable) {
  std::vector<uint64_t> words;
  const bool ok = pointer_words(k, a, words, writable);
  for (uint64_t v : words) out.push_back({v, v + 1});
  return ok;
}

}  // namespace nanscope

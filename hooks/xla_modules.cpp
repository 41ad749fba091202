// See xla_modules.hpp.
#include "xla_modules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "log_schema.hpp"
#include "steady_clock.hpp"
#include "tool_scope.hpp"
#include "xla_dump_dir.hpp"
#include "xla_flags.hpp"

namespace nanscope {

namespace {

// The names of a loaded module's functions (cuModuleEnumerateFunctions, CUDA 12.4+), or none.
std::set<std::string> function_names(CUmodule module, std::string& why) {
  ToolScope tool;  // our own driver calls: not the program's
  unsigned count = 0;
  if (cuModuleGetFunctionCount(&count, module) != CUDA_SUCCESS || count == 0) {
    why = "the driver lists no functions of its module";
    return {};
  }
  std::vector<CUfunction> functions(count);
  if (cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS) {
    why = "the driver could not list its module's functions";
    return {};
  }
  std::set<std::string> names;
  for (CUfunction f : functions) {
    const char* name = nullptr;
    if (cuFuncGetName(&name, f) != CUDA_SUCCESS || !name) {
      why = "the driver could not name a function of its module";
      return {};
    }
    names.insert(name);
  }
  return names;
}

}  // namespace

// The directory's modification time changes with every file XLA creates in it: read again only
// then (a stat per newly loaded CUmodule, where jaxlib 0.11 loads one per kernel).
void XlaModules::read_if_changed() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(dir_, ec);
  if (!ec && read_once_ && mtime == last_read_mtime_) return;
  if (!ec) last_read_mtime_ = mtime;
  read_once_ = !ec;
  read_new_modules();
}

void XlaModules::read_new_modules() {
  xla::DumpDirRead read = xla::read_dump_dir(dir_, known_, kMaxFileBytes);
  for (std::string& e : read.errors)  // a file still too big at the next read is not said again
    if (said_.size() < kMaxSaid && said_.insert(e).second) errors_.push_back(std::move(e));
  compiling_began_ = read.compiling_began;
  optimizing_ = std::move(read.optimizing);
  const size_t before = modules_.size();
  for (xla::DumpModule& m : read.modules) {
    known_.insert(m.name);
    if (modules_.size() >= kMaxModules) continue;  // bounded; its kernels stay not inspected
    kernel_names_.push_back(m.kernel_names());
    modules_.push_back(std::make_shared<const xla::DumpModule>(std::move(m)));
  }
  if (modules_.size() != before) generation_.fetch_add(1, std::memory_order_acq_rel);
}

void XlaModules::poll() {
  if (!on()) return;
  const uint64_t now = steady_now_ns();
  uint64_t next = next_poll_ns_.load(std::memory_order_relaxed);
  if (now < next || !next_poll_ns_.compare_exchange_strong(next, now + kPollNs)) return;  // one thread polls
  std::lock_guard lock(mu_);
  read_if_changed();
}

std::string XlaModules::optimizing_now(bool* first) {
  if (first) *first = false;
  if (!on()) return {};
  std::lock_guard lock(mu_);
  read_if_changed();  // a stat; the directory is listed again only when it changed
  if (first && !optimizing_.empty() && optimizing_said_.size() < kMaxSaid)
    *first = optimizing_said_.insert(optimizing_).second;
  return optimizing_;
}


// Under mu_, with the directory read since its last change: a module holding its kernels may
// have been dumped after another one that holds them too (jax.random's jit__normal, once per shape).
XlaModules::Match XlaModules::match(CUmodule module) {
  std::string why;
  const std::set<std::string> names = function_names(module, why);
  if (names.empty()) return {{}, why};
  xla::ModulesFor usable = xla::modules_for(kernel_names_, names, dir_);
  Match m{{}, std::move(usable.reason), generation_.load(std::memory_order_relaxed), usable.none_hold};
  for (size_t i : usable.modules) m.modules.push_back(modules_[i]);
  return m;
}

// Under mu_: the match of `module`. With no module dumped yet (a program that is not XLA's, or
// XLA before its first compile) there is no reason to give and nothing is remembered, so a module
// loaded later is matched then.
XlaModules::Found XlaModules::find(CUmodule module) {
  std::lock_guard lock(mu_);
  Found f;
  auto it = by_module_.find(module);
  if (it == by_module_.end()) read_if_changed();
  // A miss matched before modules were added since (an autotuner's candidate sharing the
  // program's CUmodule) is matched again.
  if (it != by_module_.end() && it->second.modules.empty() && it->second.generation != generation()) {
    by_module_.erase(it);
    it = by_module_.end();
  }
  if (!modules_.empty()) {
    if (it == by_module_.end()) {
      if (by_module_.size() >= kMaxMatches) by_module_.clear();  // bounded: later launches match again
      it = by_module_.emplace(module, match(module)).first;
      f.matched_now = true;
    }
    f.modules = it->second.modules;
    f.reason = it->second.reason;
    f.none_hold = it->second.none_hold;
  } else if (compiling_began_) {
    f.none_hold = true;
    // XLA began its first compile but finished none: nothing is remembered, a later launch
    // matches again (KernelTable::resolve, after generation_ moved).
    f.reason = fmt::format("no module in {} is dumped yet", dir_);
  }
  f.errors.swap(errors_);
  return f;
}

XlaModules::Modules XlaModules::lookup(void* function, std::string& reason, CUmodule& module, bool& none_hold) {
  module = nullptr;
  reason.clear();
  none_hold = false;
  if (!on()) return {};
  {
    ToolScope tool;
    if (cuFuncGetModule(&module, static_cast<CUfunction>(function)) != CUDA_SUCCESS || !module) {
      module = nullptr;
      return {};  // a runtime CUkernel: no module to match
    }
  }
  const Found f = find(module);  // what it says is said after mu_ is released
  for (const std::string& e : f.errors)
    log_.warning(schema::warning_what::xla_dumps, "XLA dumps: " + e + " (its kernels stay not inspected)");
  if (f.matched_now && log_.debug_enabled()) say_match(f);
  reason = f.reason;
  none_hold = f.none_hold;
  return f.modules;
}

void XlaModules::say_match(const Found& f) const {
  if (f.modules.empty()) return log_.debug("XLA: a loaded module matched no dump module: " + f.reason);
  std::string names;
  for (size_t i = 0; i < f.modules.size() && i < 4; ++i) names += (i ? ", " : "") + f.modules[i]->name;
  if (f.modules.size() > 4) names += ", ...";
  log_.debug(f.modules.size() == 1 ? fmt::format("XLA: a loaded module is dump module {} ({} kernel thunks)", names,
                                                 f.modules[0]->kernels.size())
                                   : fmt::format("XLA: a loaded module may be {} dump modules ({}): each launch picks",
                                                 f.modules.size(), names));
}

// The loader's lock is taken with runtime_mu_ released: a thread inside dlopen (holding the
// loader's lock) may launch a kernel whose decode comes here.
std::string XlaModules::loaded_xla_runtime() {
  unsigned long long seen = 0;
  {
    std::lock_guard lock(runtime_mu_);
    if (!runtime_.empty()) return runtime_;
    seen = runtime_loads_seen_;
  }
  std::string found = xla::loaded_xla_runtime(seen);
  std::lock_guard lock(runtime_mu_);
  runtime_loads_seen_ = std::max(runtime_loads_seen_, seen);
  if (runtime_.empty()) runtime_ = std::move(found);
  return runtime_;
}

std::string XlaModules::without_dumps() {
  if (on()) return {};
  const std::string runtime = loaded_xla_runtime();
  if (runtime.empty()) return {};
  std::string reason = xla::no_dumps_reason(runtime, dumps_off_);
  if (!dumps_off_ && !advised_.exchange(true))
    log_.warning(schema::warning_what::xla_no_dumps, reason + "; until then XLA's kernels are not inspected");
  return reason;
}

void XlaModules::remove_if_unused() const {
  if (!on()) return;
  const std::filesystem::path dir(dir_);
  if (!dir.filename().string().starts_with("nanscope-xla-")) return;
  std::error_code ec;
  std::filesystem::remove(dir, ec);  // a directory that holds anything is not removed
}

void XlaModules::on_unload(CUmodule module) {
  if (!on()) return;
  std::lock_guard lock(mu_);
  by_module_.erase(module);
}

}  // namespace nanscope

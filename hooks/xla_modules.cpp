// See xla_modules.hpp.
#include "xla_modules.hpp"

#include <fmt/format.h>


#include "log_schema.hpp"
#include "tool_scope.hpp"
#include "xla_dump_dir.hpp"

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

void XlaModules::read_new_modules() {
  xla::DumpDirRead read = xla::read_dump_dir(dir_, known_, kMaxFileBytes);
  for (std::string& e : read.errors) errors_.push_back(std::move(e));
  for (xla::DumpModule& m : read.modules) {
    known_.insert(m.name);
    if (modules_.size() >= kMaxModules) continue;  // bounded; its kernels stay not inspected
    kernel_names_.push_back(m.kernel_names());
    modules_.push_back(std::make_shared<const xla::DumpModule>(std::move(m)));
  }
}

XlaModules::Match XlaModules::match(CUmodule module) {
  std::string why;
  const std::set<std::string> names = function_names(module, why);
  if (names.empty()) return {nullptr, why};
  auto find = [&]() -> Match {
    const xla::ModuleMatch found = xla::match_kernel_names(kernel_names_, names);
    if (found.found()) return {modules_[found.candidates[0]], {}};
    if (found.ambiguous())
      return {nullptr, fmt::format("{} dump modules of {} have exactly its module's kernels", found.candidates.size(), dir_)};
    return {nullptr, fmt::format("no dump module in {} has exactly its module's {} kernels", dir_, names.size())};
  };
  Match m = find();
  if (m.module || !m.reason.starts_with("no dump module")) return m;
  read_new_modules();  // compiled since the last read
  return find();
}

std::shared_ptr<const xla::DumpModule> XlaModules::lookup(void* function, std::string& reason, CUmodule& module) {
  module = nullptr;
  if (!on()) {
    reason = "no XLA dump directory (run under `nanscope --`, or set XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text)";
    return nullptr;
  }
  {
    ToolScope tool;
    if (cuFuncGetModule(&module, static_cast<CUfunction>(function)) != CUDA_SUCCESS || !module) {
      reason = "not a module function";
      return nullptr;
    }
  }
  std::shared_ptr<const xla::DumpModule> found;
  std::vector<std::string> errors;
  bool matched_now = false;
  {
    std::lock_guard lock(mu_);
    auto it = by_module_.find(module);
    if (it == by_module_.end()) {
      if (by_module_.size() >= kMaxMatches) by_module_.clear();  // bounded: later launches match again
      it = by_module_.emplace(module, match(module)).first;
      matched_now = true;
    }
    reason = it->second.reason;
    found = it->second.module;
    errors.swap(errors_);
  }
  for (const std::string& e : errors)
    log_.warning(schema::warning_what::xla_dumps, "XLA dumps: " + e + " (its kernels stay not inspected)");
  if (matched_now && log_.debug_enabled())
    log_.debug(found ? fmt::format("XLA: a loaded module is dump module {} ({} kernel thunks)", found->name, found->kernels.size())
                     : "XLA: a loaded module matched no dump module: " + reason);
  return found;
}

}  // namespace nanscope

namespace nanscope {

void XlaModules::on_unload(CUmodule module) {
  if (!on()) return;
  std::lock_guard lock(mu_);
  by_module_.erase(module);
}

}  // namespace nanscope

// What the user asked to watch: rules (NANSCOPE_RULES), watches declared through the C API and
// the global padding spec, with each watch's name and action kept for late findings.
#pragma once
#include "lock_rank.hpp"
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "event_log.hpp"
#include "finding_event.hpp"
#include "padding.hpp"
#include "rules.hpp"
#include "watch_registry.hpp"

namespace nanscope {

class Watches {
 public:
  Watches(Mode mode, EventLog& log) : mode_(mode), log_(log) {}

  // NANSCOPE_RULES, loaded before the first launch; problems are logged.
  void load_rules(const std::string& path);
  const std::vector<Rule>& rules() const { return rules_; }  // stable address: KernelTable keeps it
  // Said once per rule: a launch the rule cannot resolve is not scanned by it.
  void warn_rule(uint32_t rule_index, const std::string& error);

  // Watches declared through the C API. Host-side only: usable before CUDA starts.
  uint32_t add(WatchSpec spec);
  bool remove(uint32_t id) { return registry_.remove(id); }
  bool any() const { return !registry_.empty(); }
  std::shared_ptr<const WatchRegistry::Snapshot> snapshot() const { return registry_.snapshot(); }
  // The name and action of watch (or rule) `id`, also after unwatch.
  std::optional<WatchMeta> meta(uint32_t id);

  void set_global_padding(std::optional<PaddingSpec> spec);
  std::shared_ptr<const PaddingSpec> global_padding() const { return std::atomic_load(&global_padding_); }

  // NANSCOPE_MODE=fix|abort applies to every watch and rule that did not ask for more.
  Action effective(Action declared) const;

 private:
  const Mode mode_;
  EventLog& log_;
  std::vector<Rule> rules_;
  WatchRegistry registry_;
  Ranked<std::mutex, LockLevel::part> meta_mu_{"Watches::meta_mu_"};
  std::unordered_map<uint32_t, WatchMeta> meta_;  // kept after unwatch, for late findings
  std::set<uint32_t> warned_rules_;
  std::shared_ptr<const PaddingSpec> global_padding_;  // atomic_load/store
};

}  // namespace nanscope

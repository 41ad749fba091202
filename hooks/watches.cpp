#include "watches.hpp"

#include <fmt/format.h>

namespace nanscope {

void Watches::load_rules(const std::string& path) {
  if (path.empty()) return;
  RulesResult loaded = nanscope::load_rules(path);
  for (const auto& err : loaded.errors) {
    log_.warning(schema::warning_what::rules, err);
  }
  rules_ = std::move(loaded.file.rules);
  {
    std::lock_guard lock(meta_mu_);
    for (uint32_t i = 0; i < rules_.size(); ++i) meta_[kRuleWatchBit | i] = {rules_[i].name, rules_[i].action};
  }
  log_.info(fmt::format("{} rule(s) loaded from NANSCOPE_RULES={}", rules_.size(), path));
}

void Watches::warn_rule(uint32_t rule_index, const std::string& error) {
  {
    std::lock_guard lock(meta_mu_);
    if (!warned_rules_.insert(rule_index).second) return;
  }
  const std::string msg = error + " (said once per rule; launches it cannot resolve are not scanned by it)";
  log_.warning(schema::warning_what::rule, msg);
}

uint32_t Watches::add(WatchSpec spec) {
  const std::string name = spec.name;
  const Action action = spec.action;
  const uint32_t id = registry_.add(std::move(spec));
  std::lock_guard lock(meta_mu_);
  meta_[id] = {name, action};
  return id;
}

std::optional<WatchMeta> Watches::meta(uint32_t id) {
  std::lock_guard lock(meta_mu_);
  if (auto it = meta_.find(id); it != meta_.end()) return it->second;
  return std::nullopt;
}

void Watches::set_global_padding(std::optional<PaddingSpec> spec) {
  std::atomic_store(&global_padding_, spec ? std::make_shared<const PaddingSpec>(*spec) : nullptr);
}

Action Watches::effective(Action declared) const {
  if (declared != Action::detect) return declared;
  return mode_ == Mode::fix ? Action::fix : mode_ == Mode::abort ? Action::abort : Action::detect;
}

}  // namespace nanscope

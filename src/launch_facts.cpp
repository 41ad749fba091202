#include "launch_facts.hpp"

namespace nanscope {

// One seqlock per slot, as PythonFrames' launch ring had: the writer clears `tag`, writes the
// rest, then publishes `tag` (launch id + 1, so launch id 0, an initial scan after a device
// copy, can be filed too); a reader that sees the same tag before and after its reads read one
// filing. `extra`: candidates or a collective wait in extras_ under the lock.
struct LaunchFactsStore::Slot {
  std::atomic<uint64_t> tag{0}, python{0};
  std::atomic<bool> extra{false};
};

uint64_t finding_python(uint64_t launch_id, uint32_t kernel_id, const std::optional<LaunchFacts>& launch,
                        const std::optional<CandidateList>& candidates) {
  const auto named = candidates ? candidates->last() : std::nullopt;
  if (named && named->launch_id == launch_id && named->kernel_id == kernel_id) return named->python;
  return launch ? launch->python : 0;
}

LaunchFactsStore::LaunchFactsStore(Limits limits) : limits_(limits) {}

LaunchFactsStore::~LaunchFactsStore() { delete[] slots_.load(); }

LaunchFactsStore::Slot* LaunchFactsStore::slots() {
  std::call_once(alloc_once_, [&] { slots_.store(new Slot[limits_.eager + limits_.captured], std::memory_order_release); });
  return slots_.load(std::memory_order_acquire);
}

uint32_t LaunchFactsStore::file(LaunchFacts facts, bool captured) {
  if (facts.candidates && facts.candidates->empty()) facts.candidates.reset();
  if (facts.empty()) return 0;
  Slot* all = slots();
  const uint32_t number = take_slot(captured);
  if (!number) return 0;
  bool extra = false;
  if (facts.candidates || facts.collective) {
    std::lock_guard lock(mu_);
    extra = keep_extra(number - 1, facts, captured);
  }
  Slot& slot = all[number - 1];
  slot.tag.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.python.store(facts.python, std::memory_order_relaxed);
  slot.extra.store(extra, std::memory_order_relaxed);
  slot.tag.store(facts.launch_id + 1, std::memory_order_release);
  return number;
}

uint32_t LaunchFactsStore::take_slot(bool captured) {
  if (!captured) return static_cast<uint32_t>(next_eager_.fetch_add(1, std::memory_order_relaxed) % limits_.eager) + 1;
  std::lock_guard lock(mu_);
  if (captured_used_ >= limits_.captured) {
    ++refused_;
    return 0;
  }
  return limits_.eager + captured_used_++ + 1;
}

bool LaunchFactsStore::keep_extra(uint32_t index, LaunchFacts& facts, bool captured) {
  if (facts.candidates && captured) {
    if (captured_candidates_ < limits_.captured_candidates) {
      ++captured_candidates_;
    } else {
      ++refused_;
      facts.candidates.reset();  // the graph's candidates would otherwise push out others'
    }
  }
  const bool candidates = facts.candidates.has_value(), collective = facts.collective.has_value();
  if (!candidates && !collective) return false;
  extras_[index] = Extra{facts.launch_id, std::move(facts.candidates), std::move(facts.collective)};
  if (captured) return true;
  if (candidates) {
    eager_candidates_.emplace_back(index, facts.launch_id);
    age(eager_candidates_, limits_.eager_candidates, true);
  }
  if (collective) {
    eager_collectives_.emplace_back(index, facts.launch_id);
    age(eager_collectives_, limits_.eager_collectives, false);
  }
  return true;
}

// The oldest eager lists past their cap go; an entry a later launch took over is not theirs.
void LaunchFactsStore::age(std::deque<Filed>& order, uint32_t cap, bool candidates) {
  while (order.size() > cap) {
    const auto [index, launch_id] = order.front();
    order.pop_front();
    const auto it = extras_.find(index);
    if (it == extras_.end() || it->second.launch_id != launch_id) continue;
    if (candidates) it->second.candidates.reset();
    else it->second.collective.reset();
    if (!it->second.candidates && !it->second.collective) extras_.erase(it);
  }
}

std::optional<LaunchFacts> LaunchFactsStore::find(uint32_t slot, uint64_t launch_id) const {
  const Slot* all = slots_.load(std::memory_order_acquire);
  if (!slot || !all || slot > limits_.eager + limits_.captured) return std::nullopt;
  const Slot& s = all[slot - 1];
  const uint64_t tag = launch_id + 1;
  if (s.tag.load(std::memory_order_acquire) != tag) return std::nullopt;
  LaunchFacts out;
  out.launch_id = launch_id;
  out.python = s.python.load(std::memory_order_relaxed);
  const bool extra = s.extra.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.tag.load(std::memory_order_relaxed) != tag) return std::nullopt;
  if (!extra) return out;
  std::lock_guard lock(mu_);
  if (const auto it = extras_.find(slot - 1); it != extras_.end() && it->second.launch_id == launch_id) {
    out.candidates = it->second.candidates;
    out.collective = it->second.collective;
  }
  return out;
}

uint64_t LaunchFactsStore::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

}  // namespace nanscope

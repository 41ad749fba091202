// Findings propagated through a candidate (docs/origin.md#candidates): a launch nanscope could not
// see into whose pointer words hit a buffer that, as last judged before it ran, held non-finite
// values. Its output's NaN is then most likely what it was given, so the finding is propagated from
// that earlier finding, with the launch kept as its candidate, and never a new root. Exactly: the
// judgement is the last scan that wrote the buffer's state word before the launch (BufferSlots),
// and the earlier finding is that scan's own finding in that buffer.
#include <algorithm>

#include "lineage.hpp"

namespace nanscope::lineage {

void Tracker::remember_judged(const DeviceFinding& f) {
  const JudgedWrite key{f.site.launch_id, f.buffer.ptr};
  if (!key.launch_id) return;
  auto [it, inserted] = judged_.insert_or_assign(key, f.seq);
  if (!inserted) return;
  judged_order_.push_back(key);
  if (judged_order_.size() > limits_.max_buffers) {
    judged_.erase(judged_order_.front());
    judged_order_.pop_front();
  }
}

std::vector<uint64_t> Tracker::candidate_parents(const DeviceFinding& f) {
  std::vector<uint64_t> seqs;
  for (const JudgedWrite& in : f.candidate_inputs) {
    auto it = judged_.find(in);
    if (it == judged_.end() || it->second == f.seq || !find_seq(it->second)) continue;
    if (std::find(seqs.begin(), seqs.end(), it->second) == seqs.end()) seqs.push_back(it->second);
  }
  return seqs;
}

}  // namespace nanscope::lineage

#include "candidate.hpp"

#include <algorithm>

namespace nanscope {

void CandidateList::add(const OpaqueWrite& write) {
  for (uint32_t i = 0; i < n; ++i) {
    if (w[i].launch_id != write.launch_id || w[i].kernel_id != write.kernel_id || w[i].host != write.host) continue;
    for (uint32_t j = i; j + 1 < n; ++j) w[j] = w[j + 1];  // now the newest
    w[n - 1] = write;
    return;
  }
  if (n == kMax) {
    for (uint32_t j = 0; j + 1 < n; ++j) w[j] = w[j + 1];
    --n;
    ++dropped;
  }
  w[n++] = write;
}

void CandidateList::merge(const CandidateList& other) {
  dropped += other.dropped;
  intended_inf |= other.intended_inf;
  for (uint32_t i = 0; i < other.n; ++i) add(other.w[i]);
}

std::optional<OpaqueWrite> CandidateList::last() const {
  if (n == 0) return std::nullopt;
  return w[n - 1];
}

CandidateList CandidateList::kernels() const {
  CandidateList out;
  out.dropped = dropped;
  for (uint32_t i = 0; i < n; ++i)
    if (!w[i].host) out.w[out.n++] = w[i];
  return out;
}

std::optional<CandidateList> attach_candidates(const std::optional<CandidateList>& found, lineage::DeviceFinding& d) {
  if (d.parent_count || d.host || !found) return std::nullopt;
  for (uint32_t i = 0; i < found->n; ++i) {
    const OpaqueWrite& w = found->w[i];
    d.candidates.push_back(w.kernel_id);
    for (uint32_t k = 0; k < w.input_count; ++k)
      if (std::find(d.candidate_inputs.begin(), d.candidate_inputs.end(), w.inputs[k]) == d.candidate_inputs.end())
        d.candidate_inputs.push_back(w.inputs[k]);
  }
  return found;
}

void OpaqueWrite::add_input(lineage::JudgedWrite in) {
  if (!in.launch_id || input_count >= kMaxInputs) return;
  for (uint32_t k = 0; k < input_count; ++k)
    if (inputs[k] == in) return;
  inputs[input_count++] = in;
}

}  // namespace nanscope

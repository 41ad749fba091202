// Candidate origins: a finding whose values were last written, as far as nanscope can tell, by a
// launch it could not see into (no decoder, no typed signature, a refused decode, a library
// kernel). Such a launch's parameter words pointed into the buffer, so it may have written it;
// nanscope cannot prove it did. The finding names those launches as its candidates instead of
// calling the origin unknown or blaming the decoded reader that found the values
// (docs/origin.md). Pure host code: the lists; each scan's wait for its findings in
// LaunchFactsStore (src/launch_facts.hpp).
#pragma once
#include <cstdint>
#include <optional>

#include "lineage.hpp"

namespace nanscope {

// A launch or host operation that may have written a buffer nanscope had not judged since.
struct OpaqueWrite {
  uint32_t kernel_id = 0;
  uint64_t launch_id = 0;
  bool host = false;    // a host copy or memset wrote it (origin host), not an opaque kernel
  uint64_t stream = 0;  // the launch's stream as the app passed it (0: the legacy default stream)
  uint64_t python = 0;  // where the launch came from in Python (hooks/python_frames.hpp), 0: unknown
  // What its pointer words hit, as last judged before it ran (the first kMaxInputs judged ones):
  // a finding there makes its output's finding propagated through it (lineage_candidate.cpp).
  static constexpr uint32_t kMaxInputs = 4;
  lineage::JudgedWrite inputs[kMaxInputs];
  uint32_t input_count = 0;
  void add_input(lineage::JudgedWrite in);
};

// The writers of one buffer since a scan last judged it, oldest first: the last kMax distinct
// launches, and how many older ones were dropped.
struct CandidateList {
  static constexpr uint32_t kMax = 4;
  OpaqueWrite w[kMax];
  uint32_t n = 0;
  uint32_t dropped = 0;
  // NS_INTENT_* bits: infinities decoded launches wrote into the buffer on purpose since it was
  // last judged (a mask filled into a slice of it), for its initial scan's verdict.
  uint8_t intended_inf = 0;

  // A launch noted again (a buffer and a view inside it) is one candidate.
  void add(const OpaqueWrite& write);
  void merge(const CandidateList& other);
  bool empty() const { return n == 0; }
  std::optional<OpaqueWrite> last() const;
  // The kernels only: a host copy or set is an origin of its own (host), never a candidate.
  CandidateList kernels() const;
};

// The candidates of a drained finding (those its scan filed: src/launch_facts.hpp): only when no
// tracked non-finite input (propagated) or host write explains it. Their kernel ids go into `d`,
// which the lineage then classifies as candidate.
std::optional<CandidateList> attach_candidates(const std::optional<CandidateList>& found, lineage::DeviceFinding& d);

}  // namespace nanscope

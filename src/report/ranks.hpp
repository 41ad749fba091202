// Cross-rank origin (docs/origin.md, "Across ranks"): the findings in NCCL buffers of every
// rank's log, joined by (communicator, sequence number). A rank's recvbuff that turned
// non-finite while its own sendbuff was finite is propagated from the ranks whose data was
// non-finite going in (the contributors), and its first cause is what introduced the value on
// those ranks, followed through their own lineage (`root`). With no contributor and every peer
// accounted for, the collective itself introduced it; with a peer unaccounted for (its log
// missing, or it logged nothing for that call), the origin across ranks is unknown.
//
// The join is pure (join_collectives, first_causes); Analysis::join_ranks (ranks.cpp) feeds it
// and folds its verdicts back into the report: origins, first causes, lineage edges.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model.hpp"

namespace nanscope::report {

// What the join made of a finding in a collective's buffer.
enum class CrossVerdict : std::uint8_t {
  contributor,            // its rank's data was non-finite going in (send_state nonfinite, or role send)
  propagated,             // from contributors on other ranks
  collective_introduced,  // no rank contributed and every peer is accounted for
  unknown,                // no contributor found, some peer unaccounted for
};
const char* cross_verdict_name(CrossVerdict v);

// A first cause: a finding on some rank (site and event), with the origin the report gives it.
struct Cause {
  std::uint32_t proc = 0, site = 0;
  std::int64_t id = 0, ts = 0;
  Origin origin = Origin::none;
  std::int64_t coll = -1;   // the collective finding it is, when it is one
  bool resolved = true;     // false: the log names a root the report never read
  bool operator==(const Cause& o) const { return proc == o.proc && id == o.id; }
};

// One finding whose buffer belongs to a collective, as read.
struct CollFinding {
  Snapshot snap;              // proc, site, file, line, event (snap.ev.collective is the call)
  std::uint32_t stream = 0;   // the finding's stream on its process
  std::vector<Cause> roots;   // its `root` ids resolved on its process while reading
  // the join's result
  CrossVerdict verdict = CrossVerdict::contributor;
  std::vector<std::uint32_t> parents;      // contributor findings (indices) whose data reached it
  std::vector<std::uint32_t> unaccounted;  // peers (ranks in the communicator) with no event at this call
  const Collective& call() const { return snap.ev.collective; }
};

// A finding outside any collective whose `root` names a collective finding (a later kernel on a
// receiving rank): its first causes are that finding's.
struct Dependent {
  std::uint32_t proc = 0, site = 0, coll = 0;
  std::int64_t id = 0;
};

struct CrossRank {
  static constexpr std::size_t kMaxFindings = 16384, kMaxDependents = 16384, kMaxPeerEntries = 1u << 22;
  std::vector<CollFinding> findings;
  std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t> by_event;  // (proc, id) -> finding
  std::vector<Dependent> dependents;
  std::int64_t not_joined = 0, dependents_not_listed = 0;
  std::size_t peer_entries = 0;
  bool joined = false;
  std::string refused;  // why the join did not run (two logs claim one rank), or ""
  // Results of the join.
  std::vector<std::vector<Cause>> causes;                  // per finding
  std::map<std::uint64_t, std::uint32_t> edge_call;        // cross-rank lineage edge -> receiving finding
  std::vector<std::pair<std::uint32_t, std::uint32_t>> flows;  // (contributor, receiver)
};

// Groups `f` by (comm, seq) and sets each finding's verdict, parents and unaccounted peers.
void join_collectives(std::vector<CollFinding>& f);
// Each finding's first causes (earliest first, at most kMaxCauses), following contributors
// across ranks and roots within a rank; by_event maps (proc, event id) to findings.
inline constexpr std::size_t kMaxCauses = 8;
std::vector<std::vector<Cause>> first_causes(const std::vector<CollFinding>& f,
                                             const std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t>& by_event);

// "all_reduce #12 comm 00000000c0ffee01"
std::string call_label(const Collective& c);

// Renderers (ranks_render.cpp); each shows nothing when the logs hold no collective finding and
// no two ranks.
void render_cross_rank_text(const Analysis& a, std::ostream& out, bool color);
std::string cross_rank_html(const Analysis& a);
nlohmann::ordered_json cross_rank_json(const Analysis& a);
// For the lineage: " via all_reduce #12 comm …" when parent -> child crosses ranks, else "".
std::string cross_rank_via(const Analysis& a, std::uint32_t parent_site, std::uint32_t child_site);
// For the first cause card: what the join says of this finding, or "".
std::string cross_rank_note(const Analysis& a, const Snapshot& s);

}  // namespace nanscope::report

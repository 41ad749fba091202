// The cross-rank join (ranks.hpp): keeping the collectives' findings while reading, joining
// them by (communicator, sequence number) once every log is read, and folding the verdicts back
// into the report.
#include "ranks.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

namespace nanscope::report {

namespace {

constexpr std::size_t kMaxParents = 64, kMaxUnaccounted = 64;

// A recvbuff whose own sendbuff was not non-finite: what reached it came from elsewhere, or
// from the collective itself.
bool receives(const Collective& c) { return !c.contributes(); }

using Group = std::vector<std::uint32_t>;

// Per rank of the communicator, whether the call's findings say its data was finite going in.
std::map<std::uint32_t, bool> sent_finite(const std::vector<CollFinding>& f, const Group& g) {
  std::map<std::uint32_t, bool> finite;
  for (std::uint32_t i : g) {
    const Collective& c = f[i].call();
    auto [it, fresh] = finite.emplace(c.rank, c.send_state == SendState::finite && !c.contributes());
    if (!fresh) it->second = it->second && c.send_state == SendState::finite && !c.contributes();
  }
  return finite;
}

bool is_finite(const std::map<std::uint32_t, bool>& finite, std::uint32_t peer) {
  const auto it = finite.find(peer);
  return it != finite.end() && it->second;
}

// The peers of a receiver no contributor reached that are not known to have sent finite data
// (this rank included): listed in r.unaccounted (the first 64), counted in the result.
std::uint32_t unaccounted_peers(CollFinding& r, const std::map<std::uint32_t, bool>& finite) {
  const Collective& c = r.call();
  std::uint32_t total = 0;
  auto note = [&](std::uint32_t peer) {
    if (r.unaccounted.size() < kMaxUnaccounted) r.unaccounted.push_back(peer);
    ++total;
  };
  if (c.all_peers) {  // up to 2^20 ranks: count the finite ones, list the first others
    std::uint32_t finite_peers = 0;
    for (const auto& [peer, fin] : finite) finite_peers += fin && peer < c.nranks;
    for (std::uint32_t p = 0; p < c.nranks && r.unaccounted.size() < kMaxUnaccounted; ++p)
      if (!is_finite(finite, p)) r.unaccounted.push_back(p);
    total = c.nranks - finite_peers;
  } else {
    for (std::uint32_t p : c.peers)
      if (!is_finite(finite, p)) note(p);
  }
  if (c.send_state != SendState::finite) note(c.rank);
  std::sort(r.unaccounted.begin(), r.unaccounted.end());
  r.unaccounted.erase(std::unique(r.unaccounted.begin(), r.unaccounted.end()), r.unaccounted.end());
  return total;
}

void judge_receiver(std::vector<CollFinding>& f, std::uint32_t i, const Group& contributors,
                    const std::map<std::uint32_t, bool>& finite) {
  CollFinding& r = f[i];
  const Collective& c = r.call();
  for (std::uint32_t j : contributors)
    if (j != i && c.has_peer(f[j].call().rank) && r.parents.size() < kMaxParents) r.parents.push_back(j);
  if (!r.parents.empty()) {
    r.verdict = CrossVerdict::propagated;
    return;
  }
  // No contributor reached it: the call introduced it only if every peer is known to have sent
  // finite data.
  r.verdict = unaccounted_peers(r, finite) == 0 ? CrossVerdict::collective_introduced : CrossVerdict::unknown;
}

Cause self_cause(const CollFinding& f, std::uint32_t i, Origin origin) {
  return {f.snap.proc, f.snap.site, f.snap.ev.id, f.snap.ev.ts_ns, origin, std::int64_t(i), true};
}

void merge_causes(std::vector<Cause>& into, const std::vector<Cause>& from) {
  for (const Cause& c : from)
    if (std::find(into.begin(), into.end(), c) == into.end()) into.push_back(c);
}

class CauseFinder {
 public:
  CauseFinder(const std::vector<CollFinding>& f, const std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t>& idx)
      : f_(f), idx_(idx), state_(f.size(), 0), memo_(f.size()) {}

  const std::vector<Cause>& of(std::uint32_t i) {
    if (state_[i] != 0) return memo_[i];  // done, or on the path (a cycle in a hostile log): as far as known
    state_[i] = 1;
    std::vector<Cause> out;
    const CollFinding& x = f_[i];
    switch (x.verdict) {
      case CrossVerdict::propagated:
        for (std::uint32_t j : x.parents) merge_causes(out, of(j));
        break;
      case CrossVerdict::collective_introduced: out.push_back(self_cause(x, i, Origin::introduced)); break;
      case CrossVerdict::unknown: out.push_back(self_cause(x, i, Origin::unknown)); break;
      case CrossVerdict::contributor: out = local_causes(i); break;
    }
    std::sort(out.begin(), out.end(), [](const Cause& a, const Cause& b) { return a.ts != b.ts ? a.ts < b.ts : a.id < b.id; });
    if (out.size() > kMaxCauses) out.resize(kMaxCauses);
    memo_[i] = std::move(out);
    state_[i] = 2;
    return memo_[i];
  }

 private:
  // A contributor's own lineage: its roots on its rank, each followed across ranks again when
  // it is itself a collective's finding.
  std::vector<Cause> local_causes(std::uint32_t i) {
    const CollFinding& x = f_[i];
    std::vector<Cause> out;
    if (x.roots.empty()) {
      Cause self = self_cause(x, i, x.snap.ev.origin);
      self.resolved = x.snap.ev.origin != Origin::propagated;  // propagated, but no root named
      out.push_back(self);
    }
    for (const Cause& r : x.roots) {
      if (r.id == x.snap.ev.id) {
        merge_causes(out, {self_cause(x, i, x.snap.ev.origin)});
        continue;
      }
      const auto it = idx_.find({r.proc, r.id});
      if (it != idx_.end()) merge_causes(out, of(it->second));
      else merge_causes(out, {r});
    }
    return out;
  }

  const std::vector<CollFinding>& f_;
  const std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t>& idx_;
  std::vector<char> state_;
  std::vector<std::vector<Cause>> memo_;
};

}  // namespace

const char* cross_verdict_name(CrossVerdict v) {
  switch (v) {
    case CrossVerdict::contributor: return "contributor";
    case CrossVerdict::propagated: return "propagated across ranks";
    case CrossVerdict::collective_introduced: return "introduced by the collective";
    case CrossVerdict::unknown: return "unknown across ranks";
  }
  return "";
}

std::string call_label(const Collective& c) {
  return std::string(coll_op_name(c.op)) + " #" + std::to_string(c.seq) + " comm " + comm_hex(c.comm);
}

namespace {

// What one NCCL call is, across ranks: a collective by (communicator, sequence number); a
// point-to-point message by (communicator, sender, receiver, sequence number), as the library
// numbers sends and receives per peer and direction (NCCL matches them so). A send carries
// rank = sender, peers = [receiver]; a recv rank = receiver, peers = [sender].
struct CallKey {
  std::uint64_t comm, seq;
  bool p2p;
  std::uint32_t sender, receiver;
  bool operator<(const CallKey& o) const {
    return std::tie(comm, p2p, sender, receiver, seq) < std::tie(o.comm, o.p2p, o.sender, o.receiver, o.seq);
  }
};

CallKey call_key(const Collective& c) {
  const std::uint32_t peer = c.peers.size() == 1 ? c.peers[0] : ~0u;  // ~0: a malformed message joins nothing
  if (c.op == CollOp::send) return {c.comm, c.seq, true, c.rank, peer};
  if (c.op == CollOp::recv) return {c.comm, c.seq, true, peer, c.rank};
  return {c.comm, c.seq, false, 0, 0};
}

}  // namespace

void join_collectives(std::vector<CollFinding>& f) {
  std::map<CallKey, Group> groups;
  for (std::uint32_t i = 0; i < f.size(); ++i) groups[call_key(f[i].call())].push_back(i);
  for (auto& [key, g] : groups) {
    Group contributors;
    for (std::uint32_t i : g) {
      f[i].parents.clear();
      f[i].unaccounted.clear();
      f[i].verdict = CrossVerdict::contributor;
      if (f[i].call().contributes()) contributors.push_back(i);
    }
    const auto finite = sent_finite(f, g);
    for (std::uint32_t i : g) {
      if (receives(f[i].call())) judge_receiver(f, i, contributors, finite);
    }
  }
}

std::vector<std::vector<Cause>> first_causes(const std::vector<CollFinding>& f,
                                             const std::map<std::pair<std::uint32_t, std::int64_t>, std::uint32_t>& by_event) {
  CauseFinder finder(f, by_event);
  std::vector<std::vector<Cause>> out(f.size());
  for (std::uint32_t i = 0; i < f.size(); ++i) out[i] = finder.of(i);
  return out;
}

// ---- Analysis: reading and folding back ---------------------------------------------------

namespace {

// A `root` id of a finding on process `pi`, resolved like a parent (analyze.cpp link_parents):
// through the process's recent findings, or the first finding of each site.
Cause resolve_root(const Analysis& a, std::uint32_t pi, std::int64_t id) {
  const Proc& p = a.procs[pi];
  if (!p.recent.empty()) {
    const Proc::Recent& rc = p.recent[std::size_t(id) % p.recent.size()];
    if (rc.id == id) return {pi, rc.site, id, rc.ts, a.sites[rc.site].origin, -1, true};
  }
  if (const auto it = p.site_first.find(id); it != p.site_first.end())
    return {pi, it->second, id, a.sites[it->second].first_ts, a.sites[it->second].origin, -1, true};
  return {pi, 0, id, 0, Origin::none, -1, false};
}

}  // namespace

bool Analysis::defer_collective(const Event& e, std::uint32_t file, std::uint32_t pi, std::uint32_t si,
                                std::int64_t line, std::uint32_t stream) {
  if (!e.collective.present) {
    if (!cross || cross->by_event.empty()) return false;
    for (std::int64_t r : e.root) {  // a later finding descending from a collective's finding
      const auto it = cross->by_event.find({pi, r});
      if (it == cross->by_event.end()) continue;
      if (cross->dependents.size() < CrossRank::kMaxDependents) cross->dependents.push_back({pi, si, it->second, e.id});
      else cross->dependents_not_listed++;
      break;
    }
    return false;
  }
  if (!cross) cross = std::make_unique<CrossRank>();
  CrossRank& x = *cross;
  if (x.findings.size() >= CrossRank::kMaxFindings || x.peer_entries + e.collective.peers.size() > CrossRank::kMaxPeerEntries) {
    x.not_joined++;  // kept as logged
    return false;
  }
  CollFinding f;
  f.snap = {true, file, pi, si, line, e};
  f.snap.ev.collective_json.clear();  // decoded into snap.ev.collective; the text may be megabytes
  f.stream = stream;
  for (std::size_t k = 0; k < e.root.size() && k < kMaxCauses; ++k) f.roots.push_back(resolve_root(*this, pi, e.root[k]));
  x.peer_entries += e.collective.peers.size();
  x.by_event.emplace(std::make_pair(pi, e.id), std::uint32_t(x.findings.size()));
  x.findings.push_back(std::move(f));
  return receives(e.collective);
}

void Analysis::join_ranks(std::ostream& err) {
  std::map<std::int64_t, std::uint32_t> file_of_rank;
  std::set<std::pair<std::int64_t, std::uint32_t>> said;
  bool duplicate = false, ranked = false;
  for (const Proc& p : procs) {
    if (p.rank < 0) continue;
    ranked = true;
    const auto [it, fresh] = file_of_rank.emplace(p.rank, p.file);
    if (fresh || it->second == p.file || !said.insert({p.rank, p.file}).second) continue;
    err << "nanscope report: rank " << p.rank << " is claimed by two logs: " << files[it->second] << " and "
        << files[p.file] << " (each rank's events belong in one log: are these two runs?)\n";
    duplicate = true;
  }
  if (ranked && files.size() > 1) {
    std::set<std::uint32_t> told;
    for (const Proc& p : procs)
      if (p.rank < 0 && told.insert(p.file).second)
        err << "nanscope report: " << files[p.file] << ": its events carry no rank, unlike the other logs: it is shown "
            << "by pid, and its collectives' findings are joined by their ranks in the communicator alone\n";
  }
  if (duplicate) input_error = true;
  if (!cross) return;
  if (duplicate) cross->refused = "two logs claim the same rank";
  apply_join();
}

// Folds the join's verdicts into the report. Without a join (refused) the deferred findings
// count as logged, as before this join existed.
void Analysis::apply_join() {
  CrossRank& x = *cross;
  if (x.refused.empty()) {
    join_collectives(x.findings);
    x.causes = first_causes(x.findings, x.by_event);
    x.joined = true;
  }
  for (std::uint32_t i = 0; i < x.findings.size(); ++i) {
    CollFinding& f = x.findings[i];
    if (!receives(f.call())) continue;  // noted while reading
    Event ev = f.snap.ev;
    if (x.joined) {
      ev.origin = f.verdict == CrossVerdict::propagated              ? Origin::propagated
                  : f.verdict == CrossVerdict::collective_introduced ? Origin::introduced
                                                                     : Origin::unknown;
      Site& s = sites[f.snap.site];
      if (s.first_id == ev.id) s.origin = ev.origin;
      // Its own rank's `cause` names itself; across ranks its cause is the contributors' (the
      // selection by origin follows them).
      if (f.verdict == CrossVerdict::propagated) ev.cause.clear();
    }
    note_first_causes(ev, f.snap.file, f.snap.proc, f.snap.site, f.snap.line);
    for (std::uint32_t j : f.parents) {
      const std::uint64_t key = (std::uint64_t(x.findings[j].snap.site) << 32) | f.snap.site;
      edges[key]++;
      x.edge_call.emplace(key, i);
      x.flows.emplace_back(j, i);
    }
  }
}

}  // namespace nanscope::report

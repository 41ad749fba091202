// Synthetic multi-rank logs with NCCL collectives (the `collective` object of docs/log-schema.md)
// for the cross-rank join's tests (test_ranks.cpp).
#pragma once

#include <set>

#include "synth.hpp"

namespace synth {

inline constexpr const char* kComm = "00000000c0ffee01";
inline constexpr const char* kNcclKernel = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

inline json collective(std::int64_t comm_rank, const char* send_state, std::int64_t seq = 12, int nranks = 4,
                       const char* role = "recv", const char* op = "all_reduce") {
  json peers = json::array();
  for (int r = 0; r < nranks; ++r) peers.push_back(r);
  return {{"op", op},         {"comm", kComm},   {"seq", seq},           {"rank", comm_rank},
          {"nranks", nranks}, {"peers", peers},  {"send_state", send_state}, {"role", role}};
}

// The recvbuff finding of the all_reduce on one rank; `extra` adds origin fields.
inline std::int64_t all_reduce_finding(Log& log, std::int64_t t_us, std::int64_t rank, const char* send_state,
                                       json extra) {
  extra["collective"] = collective(rank, send_state);
  extra["buffer"] = {{"arg", 1}, {"ptr", "0x7f5000000000"}, {"dtype", "f32"}, {"elements", 4096}};
  extra["region"] = "unknown";
  return log.nonfinite(t_us, kNcclKernel, 4096, extra);
}

struct RankScenario {
  std::set<int> contributors = {1};  // ranks whose own kernel introduces the NaN before the all_reduce
  std::set<int> omit;                // ranks whose log is not written
  bool later_kernel_on_rank0 = true;
  const char* receiver_send_state = "finite";
};

// Four ranks: each contributor's K<r> introduces a NaN (50 us + r), its all_reduce recvbuff is
// propagated from it (sendbuff non-finite); the other ranks' recvbuffs are, by their own
// reckoning, introduced at the NCCL kernel (sendbuff finite). Rank 0 then runs layer_norm on the
// reduced buffer. Writes rank<r>.jsonl; returns nothing the tests need beyond the files.
inline void write_ranks(const TempDir& dir, const RankScenario& s = {}) {
  for (int r = 0; r < 4; ++r) {
    Log log(2000 + r, r);
    log.start(0);
    if (s.contributors.count(r)) {
      const std::int64_t k = log.nonfinite(50 + r, "init_weights_" + std::to_string(r) + "(float*, int)", 7,
                                           {{"region", "unknown"}, {"origin", "introduced"}});
      all_reduce_finding(log, 80 + r, r, "nonfinite", {{"origin", "propagated"}, {"parents", {k}}, {"root", {k}}});
    } else {
      const std::int64_t recv = all_reduce_finding(log, 80 + r, r, s.receiver_send_state, {{"origin", "introduced"}});
      if (r == 0 && s.later_kernel_on_rank0)
        log.nonfinite(120, "void layer_norm<float>(float*, float const*, int)", 4096,
                      {{"region", "real"}, {"origin", "propagated"}, {"parents", {recv}}, {"root", {recv}},
                       {"buffer", {{"arg", 0}, {"ptr", "0x7f6000000000"}, {"dtype", "f32"}, {"elements", 4096}}}});
    }
    log.summary(1000);
    if (!s.omit.count(r)) log.write(dir / ("rank" + std::to_string(r) + ".jsonl"));
  }
}

inline std::vector<std::string> rank_files(const TempDir& dir, std::set<int> omit = {}) {
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r)
    if (!omit.count(r)) files.push_back(dir / ("rank" + std::to_string(r) + ".jsonl"));
  return files;
}

}  // namespace synth

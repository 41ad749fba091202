// The NCCL call a finding's buffer belongs to (`collective` of a nonfinite event,
// docs/log-schema.md), decoded from the JSON text the line parser keeps. Unlike `python` and
// `candidates`, a bad `collective` is an error: the cross-rank join (ranks.hpp) trusts it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope::report {

enum class CollOp : std::uint8_t { all_reduce, reduce_scatter, all_gather, broadcast, reduce, send, recv };
// This rank's sendbuff before the call, as the library scanned it.
enum class SendState : std::uint8_t { finite, nonfinite, unknown };
// recv: the finding is the call's recvbuff; send: a send-only op's non-finite sendbuff.
enum class CollRole : std::uint8_t { recv, send };

// Bounds a log cannot pass: a communicator of more ranks, or more peers, is refused.
inline constexpr std::uint32_t kMaxCommRanks = 1u << 20;

struct Collective {
  bool present = false;
  CollOp op = CollOp::all_reduce;
  SendState send_state = SendState::unknown;
  CollRole role = CollRole::recv;
  std::uint64_t comm = 0, seq = 0;
  std::uint32_t rank = 0, nranks = 0;
  bool all_peers = false;             // `peers` absent, or every rank of the communicator
  std::vector<std::uint32_t> peers;   // sorted, distinct; empty when all_peers

  // This rank's data was non-finite going into the call.
  bool contributes() const { return role == CollRole::send || send_state == SendState::nonfinite; }
  bool has_peer(std::uint32_t r) const;
  void clear();
};

// Decodes `text` (one JSON value, already validated as JSON) into `out`. "" and null leave it
// absent. Returns "" or the error, worded like the parser's ("field 'collective.comm': ...").
std::string decode_collective(std::string_view text, Collective& out);

const char* coll_op_name(CollOp op);
const char* send_state_name(SendState s);
const char* coll_role_name(CollRole r);
std::string comm_hex(std::uint64_t comm);  // 16 lower-case hex digits, as logged

}  // namespace nanscope::report

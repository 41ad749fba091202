// Decoding a nonfinite event's `collective` (collective.hpp). The enum strings are the schema's
// (log_schema.hpp); each enum's strings are one table, read both ways.
#include "collective.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>

#include "log_schema.hpp"

namespace nanscope::report {

namespace {

namespace ck = schema::collective_key;
using json = nlohmann::json;

template <typename E>
struct Name {
  E value;
  const char* name;
};

constexpr std::array<Name<CollOp>, 7> kOps{{
    {CollOp::all_reduce, schema::collective_op_str::all_reduce},
    {CollOp::reduce_scatter, schema::collective_op_str::reduce_scatter},
    {CollOp::all_gather, schema::collective_op_str::all_gather},
    {CollOp::broadcast, schema::collective_op_str::broadcast},
    {CollOp::reduce, schema::collective_op_str::reduce},
    {CollOp::send, schema::collective_op_str::send},
    {CollOp::recv, schema::collective_op_str::recv},
}};
constexpr std::array<Name<SendState>, 3> kSendStates{{
    {SendState::finite, schema::send_state_str::finite},
    {SendState::nonfinite, schema::send_state_str::nonfinite},
    {SendState::unknown, schema::send_state_str::unknown},
}};
constexpr std::array<Name<CollRole>, 2> kRoles{{
    {CollRole::recv, schema::role_str::recv},
    {CollRole::send, schema::role_str::send},
}};

template <typename E, std::size_t N>
const char* name_of(const std::array<Name<E>, N>& table, E v) {
  for (const auto& n : table)
    if (n.value == v) return n.name;
  return "";
}

template <typename E, std::size_t N>
std::optional<E> value_of(const std::array<Name<E>, N>& table, std::string_view s) {
  for (const auto& n : table)
    if (s == n.name) return n.value;
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string one_of(const std::array<Name<E>, N>& table) {
  std::string s;
  for (const auto& n : table) s += std::string(s.empty() ? "" : ", ") + n.name;
  return s;
}

std::string field_error(std::string_view member, const std::string& expected) {
  return "field 'collective" + std::string(member.empty() ? "" : ".") + std::string(member) + "': " + expected;
}

// An unsigned integer member no larger than `max`.
std::string unsigned_member(const json& j, const char* key, std::uint64_t max, std::uint64_t& out) {
  const auto it = j.find(key);
  if (it == j.end()) return field_error(key, "missing");
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0))
    return field_error(key, "expected an integer in 0.." + std::to_string(max));
  const std::uint64_t v = it->get<std::uint64_t>();
  if (v > max) return field_error(key, "expected an integer in 0.." + std::to_string(max));
  out = v;
  return {};
}

template <typename E, std::size_t N>
std::string enum_member(const json& j, const char* key, const std::array<Name<E>, N>& table, E& out) {
  const auto it = j.find(key);
  if (it == j.end()) return field_error(key, "missing");
  const auto v = it->is_string() ? value_of(table, it->get_ref<const std::string&>()) : std::nullopt;
  if (!v) return field_error(key, "expected one of " + one_of(table));
  out = *v;
  return {};
}

std::string comm_member(const json& j, std::uint64_t& out) {
  const auto it = j.find(ck::comm);
  if (it == j.end()) return field_error(ck::comm, "missing");
  const bool hex16 = it->is_string() && it->get_ref<const std::string&>().size() == 16 &&
                     std::all_of(it->get_ref<const std::string&>().begin(), it->get_ref<const std::string&>().end(),
                                 [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
  if (!hex16) return field_error(ck::comm, "expected a string of 16 hex digits");
  out = std::stoull(it->get<std::string>(), nullptr, 16);
  return {};
}

std::string peers_member(const json& j, Collective& c) {
  const auto it = j.find(ck::peers);
  if (it == j.end() || it->is_null()) {
    c.all_peers = true;  // not said: any rank of the communicator may have contributed
    return {};
  }
  if (!it->is_array()) return field_error(ck::peers, "expected an array of ranks");
  if (it->size() > c.nranks)
    return field_error(ck::peers, "expected at most nranks (" + std::to_string(c.nranks) + ") ranks, got " +
                                      std::to_string(it->size()));
  for (const json& p : *it) {
    if (!p.is_number_integer() || p.get<std::int64_t>() < 0 || p.get<std::uint64_t>() >= c.nranks)
      return field_error(ck::peers, "expected ranks in 0..nranks-1 (" + std::to_string(c.nranks - 1) + ")");
    c.peers.push_back(p.get<std::uint32_t>());
  }
  std::sort(c.peers.begin(), c.peers.end());
  if (std::adjacent_find(c.peers.begin(), c.peers.end()) != c.peers.end())
    return field_error(ck::peers, "expected distinct ranks");
  if (c.peers.size() == c.nranks) c.all_peers = true, c.peers.clear();
  return {};
}

std::string decode_members(const json& j, Collective& c) {
  std::uint64_t nranks = 0, rank = 0;
  std::string e;
  if (!(e = enum_member(j, ck::op, kOps, c.op)).empty()) return e;
  if (!(e = comm_member(j, c.comm)).empty()) return e;
  if (!(e = unsigned_member(j, ck::seq, UINT64_MAX, c.seq)).empty()) return e;
  if (!(e = unsigned_member(j, ck::nranks, kMaxCommRanks, nranks)).empty()) return e;
  if (nranks == 0) return field_error(ck::nranks, "expected at least 1");
  c.nranks = static_cast<std::uint32_t>(nranks);
  if (!(e = unsigned_member(j, ck::rank, nranks - 1, rank)).empty()) return e;
  c.rank = static_cast<std::uint32_t>(rank);
  if (!(e = peers_member(j, c)).empty()) return e;
  if (!(e = enum_member(j, ck::send_state, kSendStates, c.send_state)).empty()) return e;
  return enum_member(j, ck::role, kRoles, c.role);
}

}  // namespace

bool Collective::has_peer(std::uint32_t r) const {
  return all_peers ? r < nranks : std::binary_search(peers.begin(), peers.end(), r);
}

void Collective::clear() { *this = Collective{}; }

std::string decode_collective(std::string_view text, Collective& out) {
  out.clear();
  if (text.empty() || text == "null") return {};
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return field_error("", "expected an object");
  std::string e = decode_members(j, out);
  if (!e.empty()) {
    out.clear();
    return e;
  }
  out.present = true;
  return {};
}

const char* coll_op_name(CollOp op) { return name_of(kOps, op); }
const char* send_state_name(SendState s) { return name_of(kSendStates, s); }
const char* coll_role_name(CollRole r) { return name_of(kRoles, r); }

std::string comm_hex(std::uint64_t comm) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, comm >>= 4) s[std::size_t(i)] = kHex[comm & 15];
  return s;
}

}  // namespace nanscope::report

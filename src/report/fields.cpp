// The parser's key tables (fields.hpp). The schema's names, never literals: a key the report
// reads is spelled in log_schema.hpp alone.
#include "fields.hpp"

#include <algorithm>
#include <array>

#include "log_schema.hpp"

namespace nanscope::report {

namespace {

namespace k = schema::key;
using K = FieldKind;
using F = Field<Event>;

constexpr F integer(std::string_view key, std::int64_t Event::*m, std::uint64_t has = 0) {
  return {key, K::i64, m, nullptr, nullptr, nullptr, nullptr, has};
}
constexpr F string(std::string_view key, std::string Event::*m, std::uint64_t has = 0) {
  return {key, K::str, nullptr, m, nullptr, nullptr, nullptr, has};
}
constexpr F boolean(std::string_view key, bool Event::*m, std::uint64_t has = 0) {
  return {key, K::boolean, nullptr, nullptr, m, nullptr, nullptr, has};
}
constexpr F ints(std::string_view key, std::vector<std::int64_t> Event::*m, std::uint64_t has = 0) {
  return {key, K::ints, nullptr, nullptr, nullptr, m, nullptr, has};
}
constexpr F special(std::string_view key, FieldKind kind) { return {key, kind}; }
constexpr F raw(std::string_view key, std::string Event::*m) {
  return {key, K::raw, nullptr, m, nullptr, nullptr, nullptr, 0};
}

const F kTop[] = {
    // every event
    string(k::schema, &Event::schema, h_schema),
    string(k::event, &Event::event, h_event),
    integer(k::id, &Event::id, h_id),
    integer(k::ts_ns, &Event::ts_ns, h_ts),
    integer(k::pid, &Event::pid, h_pid),
    integer(k::rank, &Event::rank, h_rank),
    integer(k::local_rank, &Event::local_rank, h_local_rank),
    special(k::world_size, K::ignored),  // multi-rank logs: read by the cross-rank join (issue 21)
    // start
    string(k::version, &Event::version),
    string(k::attach, &Event::attach),
    string(k::argv0, &Event::argv0),
    special(k::config, K::ignored),
    special(k::config_errors, K::ignored),
    special(k::cupti, K::ignored),
    // nonfinite
    integer(k::device, &Event::device, h_device),
    string(k::stream, &Event::stream),
    string(k::kernel, &Event::kernel, h_kernel),
    string(k::kernel_mangled, &Event::kernel_mangled),
    integer(k::launch_id, &Event::launch_id, h_launch_id),
    integer(k::correlation_id, &Event::correlation_id, h_correlation_id),
    special(k::buffer, K::object),
    special(k::counts, K::object),
    integer(k::first_index, &Event::first_index, h_first_index),
    integer(k::last_index, &Event::last_index),
    integer(k::graph_id, &Event::graph_id, h_graph_id),
    integer(k::graph_node, &Event::graph_node, h_graph_node),
    integer(k::replay, &Event::replay, h_replay),
    special(k::region, K::region),
    integer(k::counts_padding, &Event::counts_padding, h_counts_padding),
    integer(k::counts_real, &Event::counts_real, h_counts_real),
    special(k::rows, K::object),
    integer(k::rows_total, &Event::rows_total, h_rows_total),
    string(k::watch, &Event::watch),
    special(k::padding_source, K::ignored),
    special(k::rows_inferred, K::ignored),
    special(k::action, K::action),
    boolean(k::fixed, &Event::fixed, h_fixed),  // older logs
    special(k::origin, K::origin),
    string(k::origin_why, &Event::origin_why),
    ints(k::parents, &Event::parents),
    ints(k::root, &Event::root),
    special(k::origin_incomplete, K::ignored),
    boolean(k::leak, &Event::leak, h_leak),
    special(k::rows_before, K::ignored),
    special(k::rows_after, K::ignored),
    string(k::dump, &Event::dump, h_dump),
    raw(k::python, &Event::python_json),
    raw(k::candidates, &Event::candidates_json),
    raw(k::collective, &Event::collective_json),
    special(k::inf, K::inf),
    boolean(k::fault, &Event::fault),
    ints(k::cause, &Event::cause, h_cause),
    ints(k::intended_from, &Event::intended_from),
    special(k::spread, K::object),
    special(k::last_writer, K::object),
    // repeat
    integer(k::of, &Event::of, h_of),
    integer(k::count, &Event::count, h_count),
    integer(k::total, &Event::total, h_total),
    integer(k::first_replay, &Event::first_replay, h_first_replay),
    integer(k::last_replay, &Event::last_replay, h_last_replay),
    boolean(k::final_, &Event::final_, h_final),
    // escalation
    string(k::phase, &Event::phase),
    integer(k::window, &Event::window),
    integer(k::finding, &Event::finding),
    // not_inspected, warning, abort
    string(k::reason, &Event::reason),
    string(k::message, &Event::message),
    string(k::what, &Event::what),
    // summary
    integer(k::launches, &Event::launches),
    integer(k::scans, &Event::scans),
    integer(k::findings, &Event::findings),
    integer(k::kernels_inspected, &Event::kernels_inspected),
    integer(k::kernels_not_inspected, &Event::kernels_not_inspected),
    integer(k::scans_dropped, &Event::scans_dropped, h_scans_dropped),
    special(k::graph_scans_overlapped, K::ignored),
    special(k::graph_scans_merged, K::ignored),
    special(k::graph_edges_programmatic, K::ignored),
    special(k::eager_scans_batched, K::ignored),
    special(k::eager_batch_launches, K::ignored),
    integer(k::overflow, &Event::overflow, h_overflow),
    special(k::corrupt_records, K::ignored),
    special(k::rescans_unchanged, K::ignored),
    special(k::python_line_captures, K::ignored),
    special(k::python_line_ns, K::ignored),
    integer(k::duration_ns, &Event::duration_ns),
    special(k::origins, K::ignored),
    raw(k::coverage, &Event::coverage_json),
    special(k::tensor_extents, K::ignored),
    integer(k::faults, &Event::faults, h_faults),
    special(k::infinities, K::object),
};

const Field<Event::Buffer> kBuffer[] = {
    {schema::buffer_key::arg, K::i64, &Event::Buffer::arg},
    {schema::buffer_key::ptr, K::str, nullptr, &Event::Buffer::ptr},
    {schema::buffer_key::dtype, K::str, nullptr, &Event::Buffer::dtype},
    {schema::buffer_key::elements, K::i64, &Event::Buffer::elements},
    {schema::buffer_key::name, K::str, nullptr, &Event::Buffer::name},
};

const Field<Counts> kCounts[] = {
    {schema::counts_key::nan, K::i64, &Counts::nan},
    {schema::counts_key::pos_inf, K::i64, &Counts::pos_inf},
    {schema::counts_key::neg_inf, K::i64, &Counts::neg_inf},
};

const F kRows[] = {
    {schema::rows_key::padding, K::ranges, nullptr, nullptr, nullptr, nullptr, &Event::rows_padding},
    {schema::rows_key::real, K::ranges, nullptr, nullptr, nullptr, nullptr, &Event::rows_real},
    {schema::rows_key::unknown, K::ignored},
    boolean(schema::rows_key::truncated, &Event::rows_truncated),
};

const Field<Event::Spread> kSpread[] = {
    {schema::spread_key::before, K::real, nullptr, nullptr, nullptr, nullptr, nullptr, 0, &Event::Spread::before},
    {schema::spread_key::after, K::real, nullptr, nullptr, nullptr, nullptr, nullptr, 0, &Event::Spread::after},
};

const Field<Event::LastWriter> kLastWriter[] = {
    {schema::last_writer_key::event, K::i64, &Event::LastWriter::event},
    {k::kernel, K::str, nullptr, &Event::LastWriter::kernel},
    {k::launch_id, K::i64, &Event::LastWriter::launch_id},
    {k::python, K::raw, nullptr, &Event::LastWriter::python_json},
};

const F kInfinities[] = {
    integer(schema::infinities_key::intended, &Event::infinities_intended),
    integer(schema::infinities_key::arithmetic, &Event::infinities_arithmetic),
};

// The top-level keys in an open-addressing table: a lookup is one hash of a few bytes and,
// mostly, one comparison (a binary search over the sorted keys cost a comparison per step, and
// every event has some 40 keys).
constexpr std::size_t kSlots = 256;  // a power of two, over 3x the keys: short probe runs

constexpr std::size_t slot_of(std::string_view key) {
  const std::size_t n = key.size();
  if (n == 0) return 0;
  const auto byte = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(key[i])); };
  return (n * 131 + byte(0) * 31 + byte(n - 1) * 7 + byte(n / 2)) & (kSlots - 1);
}

const std::array<const F*, kSlots>& top_slots() {
  static_assert(std::size(kTop) < kSlots / 2, "the key table must keep empty slots: lookups end at one");
  static const std::array<const F*, kSlots> slots = [] {
    std::array<const F*, kSlots> t{};
    for (const F& f : kTop) {
      std::size_t i = slot_of(f.key);
      while (t[i]) i = (i + 1) & (kSlots - 1);
      t[i] = &f;
    }
    return t;
  }();
  return slots;
}

template <typename O>
std::vector<std::string_view> keys_of(std::span<const Field<O>> table) {
  std::vector<std::string_view> out;
  for (const Field<O>& f : table) out.push_back(f.key);
  return out;
}

}  // namespace

const Field<Event>* top_field(std::string_view key) {
  const std::array<const F*, kSlots>& slots = top_slots();
  for (std::size_t i = slot_of(key);; i = (i + 1) & (kSlots - 1)) {
    const F* f = slots[i];
    if (!f) return nullptr;  // an unknown key
    if (f->key.size() == key.size() && f->key == key) return f;
  }
}

// Beside the tables: every field they fill starts empty again.
void Event::reset() {
  has = 0;
  coverage_json.clear();
  kind = Kind::other;
  schema.clear();
  event.clear();
  id = ts_ns = pid = 0;
  rank = local_rank = -1;
  device = launch_id = correlation_id = 0;
  stream.clear();
  kernel.clear();
  kernel_mangled.clear();
  buffer.arg = -1;
  buffer.elements = 0;
  buffer.ptr.clear();
  buffer.dtype.clear();
  buffer.name.clear();
  counts = {};
  first_index = last_index = 0;
  graph_id = graph_node = replay = 0;
  region = Region::none;
  counts_padding = counts_real = 0;
  rows_padding.clear();
  rows_real.clear();
  rows_truncated = false;
  rows_total = 0;
  watch.clear();
  fixed = false;
  origin = Origin::none;
  origin_why.clear();
  parents.clear();
  root.clear();
  leak = false;
  dump.clear();
  python_json.clear();
  candidates_json.clear();
  collective_json.clear();
  collective.clear();
  inf = InfKind::none;
  fault = false;
  cause.clear();
  intended_from.clear();
  spread = {};
  last_writer.event = last_writer.launch_id = 0;
  last_writer.kernel.clear();
  last_writer.python_json.clear();
  of = count = total = first_replay = last_replay = 0;
  final_ = false;
  phase.clear();
  window = finding = 0;
  version.clear();
  attach.clear();
  argv0.clear();
  reason.clear();
  message.clear();
  what.clear();
  launches = scans = findings = kernels_inspected = kernels_not_inspected = scans_dropped =
      overflow = duration_ns = 0;
  faults = infinities_intended = infinities_arithmetic = 0;
}

bool Event::self_caused() const { return std::find(cause.begin(), cause.end(), id) != cause.end(); }

const char* inf_kind_name(InfKind kind) {
  switch (kind) {
    case InfKind::intended: return schema::inf_str::intended;
    case InfKind::arithmetic: return schema::inf_str::arithmetic;
    case InfKind::other: return "other";
    case InfKind::none: break;
  }
  return "";
}

std::span<const Field<Event::Buffer>> buffer_fields() { return kBuffer; }
std::span<const Field<Counts>> counts_fields() { return kCounts; }
std::span<const Field<Event>> rows_fields() { return kRows; }
std::span<const Field<Event::Spread>> spread_fields() { return kSpread; }
std::span<const Field<Event::LastWriter>> last_writer_fields() { return kLastWriter; }
std::span<const Field<Event>> infinities_fields() { return kInfinities; }

std::vector<std::string_view> parser_known_keys(std::string_view object) {
  if (object.empty()) return keys_of<Event>(kTop);
  if (object == k::buffer) return keys_of(buffer_fields());
  if (object == k::counts) return keys_of(counts_fields());
  if (object == k::rows) return keys_of(rows_fields());
  if (object == k::spread) return keys_of(spread_fields());
  if (object == k::last_writer) return keys_of(last_writer_fields());
  if (object == k::infinities) return keys_of(infinities_fields());
  return {};
}

}  // namespace nanscope::report

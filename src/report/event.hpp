// One parsed line of a nanscope/1 log (docs/log-schema.md), and the fast line parser.
//
// The parser is a strict, allocation-free (after warm-up) JSON reader specialised for the
// fields the report uses: it validates the whole line as JSON (so a corrupt line is always
// rejected), decodes the known fields into a reusable Event and skips unknown ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collective.hpp"
#include "log_schema.hpp"

namespace nanscope::report {

enum class Kind : std::uint8_t { other, start, nonfinite, repeat, not_inspected, warning, summary, escalation };

// The log's enums and their strings are the schema's (log_schema.hpp), shared with the writer.
using schema::Origin;
using schema::Region;
using schema::origin_name;
using schema::region_name;

// A nonfinite event's `inf` (schema::inf_str): what an infinity-only finding's infinities are.
// `none`: the key is absent (a NaN finding, or a log older than NaN-first verdicts); `other`: a
// string this reader does not know (a newer writer's), taken as a fault like `none`.
enum class InfKind : std::uint8_t { none, intended, arithmetic, other };
const char* inf_kind_name(InfKind k);  // "" for none, "other" for other

// Saturating arithmetic for figures summed over a log: a hostile or absurd log pins a total at
// INT64_MAX (shown as such) instead of wrapping into a negative number that passes the gate.
constexpr std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
constexpr std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

struct Counts {
  std::int64_t nan = 0, pos_inf = 0, neg_inf = 0;
  std::int64_t total() const { return sat_add(sat_add(nan, pos_inf), neg_inf); }
  Counts& operator+=(const Counts& o) {
    nan = sat_add(nan, o.nan);
    pos_inf = sat_add(pos_inf, o.pos_inf);
    neg_inf = sat_add(neg_inf, o.neg_inf);
    return *this;
  }
  Counts times(std::int64_t n) const { return {sat_mul(nan, n), sat_mul(pos_inf, n), sat_mul(neg_inf, n)}; }
};

using RowRange = std::pair<std::int64_t, std::int64_t>;

// Field presence bits (only for optional fields whose absence matters).
enum Has : std::uint64_t {
  h_schema = 1ull << 0,
  h_event = 1ull << 1,
  h_id = 1ull << 2,
  h_ts = 1ull << 3,
  h_pid = 1ull << 4,
  h_rank = 1ull << 5,
  h_local_rank = 1ull << 6,
  h_kernel = 1ull << 7,
  h_counts = 1ull << 8,
  h_launch_id = 1ull << 9,
  h_graph_id = 1ull << 10,
  h_graph_node = 1ull << 11,
  h_replay = 1ull << 12,
  h_region = 1ull << 13,
  h_counts_padding = 1ull << 14,
  h_counts_real = 1ull << 15,
  h_rows = 1ull << 16,
  h_rows_total = 1ull << 17,
  h_fixed = 1ull << 18,
  h_origin = 1ull << 19,
  h_leak = 1ull << 20,
  h_dump = 1ull << 21,
  h_of = 1ull << 22,
  h_count = 1ull << 23,
  h_total = 1ull << 24,
  h_first_replay = 1ull << 25,
  h_last_replay = 1ull << 26,
  h_final = 1ull << 27,
  h_buffer = 1ull << 28,
  h_device = 1ull << 29,
  h_first_index = 1ull << 30,
  h_correlation_id = 1ull << 31,
  h_scans_dropped = 1ull << 32,
  h_overflow = 1ull << 33,
  h_inf = 1ull << 34,
  h_spread = 1ull << 35,
  h_last_writer = 1ull << 36,
  h_faults = 1ull << 37,
  h_infinities = 1ull << 38,
  h_cause = 1ull << 39,
};

struct Event {
  std::uint64_t has = 0;
  Kind kind = Kind::other;
  std::string schema, event;
  std::int64_t id = 0, ts_ns = 0, pid = 0, rank = -1, local_rank = -1;

  // nonfinite
  std::int64_t device = 0, launch_id = 0, correlation_id = 0;
  std::string stream, kernel, kernel_mangled;
  struct Buffer {
    std::int64_t arg = -1, elements = 0;
    std::string ptr, dtype, name;
  } buffer;
  Counts counts;
  std::int64_t first_index = 0, last_index = 0;
  std::int64_t graph_id = 0, graph_node = 0, replay = 0;
  Region region = Region::none;
  std::int64_t counts_padding = 0, counts_real = 0;
  std::vector<RowRange> rows_padding, rows_real;
  bool rows_truncated = false;
  std::int64_t rows_total = 0;
  std::string watch;
  bool fixed = false;
  Origin origin = Origin::none;
  std::string origin_why;  // schema::origin_why_str; `sentinel`: a replay that ran only sentinel scans
  std::vector<std::int64_t> parents, root;
  bool leak = false;
  std::string dump;
  std::string python_json, candidates_json;  // as written; decoded by launch_site.hpp when shown
  std::string collective_json;               // as written; decoded into `collective` by parse_line
  Collective collective;
  // NaN-first verdicts (docs/origin.md)
  InfKind inf = InfKind::none;
  bool fault = false;  // `fault: true`: the run treated every infinity as a fault
  std::vector<std::int64_t> cause, intended_from;
  struct Spread {  // `spread`: shares of elements (0..1) non-finite before (parents) and after
    double before = 0, after = 0;
  } spread;
  struct LastWriter {  // `last_writer` (origin preexisting)
    std::int64_t event = 0, launch_id = 0;
    std::string kernel, python_json;
  } last_writer;

  // repeat
  std::int64_t of = 0, count = 0, total = 0, first_replay = 0, last_replay = 0;
  bool final_ = false;

  // escalation (the sentinel tier; also graph_id, replay)
  std::string phase;  // schema::escalation_phase_str
  std::int64_t window = 0, finding = 0;

  // start / not_inspected / warning
  std::string version, attach, argv0, reason, message, what;

  // summary
  std::int64_t launches = 0, scans = 0, findings = 0, kernels_inspected = 0,
               kernels_not_inspected = 0, scans_dropped = 0, overflow = 0, duration_ns = 0;
  std::string coverage_json;  // summary.coverage as written (src/coverage.cpp), decoded by Analysis
  std::int64_t faults = 0, infinities_intended = 0, infinities_arithmetic = 0;

  bool has_field(Has h) const { return (has & h) != 0; }
  bool infinity_only() const { return counts.nan == 0 && (counts.pos_inf > 0 || counts.neg_inf > 0); }
  bool self_caused() const;  // its own id is in its `cause`
  void reset();
};

enum class ErrorKind : std::uint8_t {
  none,
  syntax,  // the line is not valid JSON (incl. truncated lines)
  field,   // valid JSON but not a valid nanscope/1 event (wrong type, missing field, ...)
  schema,  // a schema other than nanscope/1
  limit,   // nesting deeper than the parser allows
};

struct ParseError {
  ErrorKind kind = ErrorKind::none;
  std::string message;
  explicit operator bool() const { return kind != ErrorKind::none; }
};

// Parses one line (without its newline). On success returns an empty error and fills `ev`
// (which is reset first). Never throws on bad input. A line whose figures are out of range
// (check_ranges) is a field error.
ParseError parse_line(std::string_view line, Event& ev);

// The figures a well-formed event can hold: counts, repeat counts, rows, ids and pids are never
// negative and timestamps are times since the epoch. Empty when `ev` is in range; else names
// the first field that is not (validate.cpp).
ParseError check_ranges(const Event& ev);

bool schema_supported(std::string_view schema);
// After a line parsed as JSON: the fields every event needs are there, and `ev.kind` is set from
// its name (validate.cpp).
ParseError check_event(Event& ev);

}  // namespace nanscope::report

// What a well-formed event is, once its line parsed as JSON (event.hpp): the schema it names and
// the fields its kind needs (check_event), and the ranges of its figures (check_ranges). The
// parser has already checked the types; check_ranges says which values no writer produces, so
// that a log cannot pass the CI gate with a negative count or send a total past INT64_MAX. Each
// range rule is one row of a table.
#include <array>

#include "event.hpp"
#include "log_schema.hpp"

namespace nanscope::report {

bool schema_supported(std::string_view s) {
  // "nanscope/1"; a future "nanscope/1.x" minor revision only adds optional fields.
  constexpr std::string_view v = schema::kVersion;
  return s.starts_with(v) && (s.size() == v.size() || s[v.size()] == '.');
}

namespace {

struct NonNegative {
  const char* name;          // as the error names it ("counts.nan")
  std::int64_t Event::*top;  // a top-level figure, or
  std::int64_t Counts::*counts;
};

constexpr std::int64_t Event::*kNoTop = nullptr;
constexpr std::int64_t Counts::*kNoCounts = nullptr;

// Figures that are counts, ids or indices: never negative.
constexpr std::array<NonNegative, 26> kNonNegative{{
    {"id", &Event::id, kNoCounts},
    {"ts_ns", &Event::ts_ns, kNoCounts},
    {"pid", &Event::pid, kNoCounts},
    {"counts.nan", kNoTop, &Counts::nan},
    {"counts.pos_inf", kNoTop, &Counts::pos_inf},
    {"counts.neg_inf", kNoTop, &Counts::neg_inf},
    {"counts_padding", &Event::counts_padding, kNoCounts},
    {"counts_real", &Event::counts_real, kNoCounts},
    {"rows_total", &Event::rows_total, kNoCounts},
    {"replay", &Event::replay, kNoCounts},
    {"of", &Event::of, kNoCounts},
    {"count", &Event::count, kNoCounts},
    {"total", &Event::total, kNoCounts},
    {"first_replay", &Event::first_replay, kNoCounts},
    {"last_replay", &Event::last_replay, kNoCounts},
    {"launches", &Event::launches, kNoCounts},
    {"scans", &Event::scans, kNoCounts},
    {"findings", &Event::findings, kNoCounts},
    {"kernels_inspected", &Event::kernels_inspected, kNoCounts},
    {"kernels_not_inspected", &Event::kernels_not_inspected, kNoCounts},
    {"scans_dropped", &Event::scans_dropped, kNoCounts},
    {"overflow", &Event::overflow, kNoCounts},
    {"duration_ns", &Event::duration_ns, kNoCounts},
    {"faults", &Event::faults, kNoCounts},
    {"infinities.intended", &Event::infinities_intended, kNoCounts},
    {"infinities.arithmetic", &Event::infinities_arithmetic, kNoCounts},
}};

ParseError out_of_range(const std::string& field, const char* expected) {
  return {ErrorKind::field, "field '" + field + "': expected " + expected};
}

ParseError check_rows(const std::vector<RowRange>& rows, std::string_view name) {
  for (const RowRange& r : rows)
    if (r.first < 0 || r.second < r.first)
      return out_of_range("rows." + std::string(name), "[lo,hi] pairs with 0 <= lo <= hi");
  return {};
}

// A repeat's counts are what its `count` findings held: none without findings, at most every
// element of the buffer each, and its padding and real rows a part of them.
ParseError check_repeat_counts(const Event& e) {
  if (e.kind != Kind::repeat || !e.has_field(h_counts)) return {};
  const std::int64_t values = e.counts.total();
  if (e.count == 0 && values != 0) return out_of_range("counts", "no values in a repeat of 0 findings");
  if (e.buffer.elements > 0 && values > sat_mul(e.count, e.buffer.elements))
    return out_of_range("counts", "at most count x buffer.elements values");
  if (sat_add(e.counts_padding, e.counts_real) > values)
    return out_of_range("counts_padding", "counts_padding + counts_real within the counts");
  return {};
}

}  // namespace

// The fields every event needs, and its kind from its name.
ParseError check_event(Event& e) {
  auto missing = [](const char* f) {
    return ParseError{ErrorKind::field, std::string("missing field '") + f + "'"};
  };
  if (!(e.has & h_schema)) return missing(schema::key::schema);
  if (!schema_supported(e.schema))
    return {ErrorKind::schema, "unsupported schema \"" + e.schema + "\" (this report reads nanscope/1)"};
  if (!(e.has & h_event)) return missing(schema::key::event);
  if (!(e.has & h_id)) return missing(schema::key::id);
  if (!(e.has & h_ts)) return missing(schema::key::ts_ns);
  if (!(e.has & h_pid)) return missing(schema::key::pid);
  const std::string& n = e.event;
  if (n == schema::event::nonfinite) {
    e.kind = Kind::nonfinite;
    if (!(e.has & h_kernel)) return missing(schema::key::kernel);
    if (!(e.has & h_counts)) return missing(schema::key::counts);
  } else if (n == schema::event::repeat) {
    e.kind = Kind::repeat;
    if (!(e.has & h_of)) return missing(schema::key::of);
    if (!(e.has & h_count)) return missing(schema::key::count);
  } else if (n == schema::event::summary) {
    e.kind = Kind::summary;
  } else if (n == schema::event::start) {
    e.kind = Kind::start;
  } else if (n == schema::event::not_inspected) {
    e.kind = Kind::not_inspected;
  } else if (n == schema::event::warning) {
    e.kind = Kind::warning;
  } else if (n == schema::event::escalation) {
    e.kind = Kind::escalation;
  } else {
    e.kind = Kind::other;  // a future event kind: ignored
  }
  return {};
}

ParseError check_ranges(const Event& e) {
  for (const NonNegative& rule : kNonNegative) {
    const std::int64_t v = rule.top ? e.*rule.top : e.counts.*rule.counts;
    if (v < 0) return out_of_range(rule.name, "a non-negative integer");
  }
  if (e.buffer.elements < 0) return out_of_range("buffer.elements", "a non-negative integer");
  if (ParseError pe = check_repeat_counts(e)) return pe;
  if (ParseError pe = check_rows(e.rows_real, schema::rows_key::real)) return pe;
  return check_rows(e.rows_padding, schema::rows_key::padding);
}

}  // namespace nanscope::report

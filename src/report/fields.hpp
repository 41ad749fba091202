// What the line parser does with each key of a nanscope/1 event: one table per object (the
// event's top level, buffer, counts, rows), keyed by the schema's names (log_schema.hpp), so
// the keys the parser knows can be listed and checked against the writer's (test_log_schema).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "event.hpp"

namespace nanscope::report {

enum class FieldKind : std::uint8_t {
  ignored,  // written, not used by the report: validated and skipped
  i64,      // an integer into `i`
  str,      // a string into `s`
  boolean,  // a boolean into `b`
  ints,     // an array of integers into `v`
  ranges,   // an array of [lo, hi] pairs into `r`
  real,     // a number (integer or not) into `d`
  object,   // a nested object: its own table (object_fields)
  region,   // the region enum string
  origin,   // the origin enum string
  inf,      // the inf enum string (InfKind)
  action,   // "zeroed": the finding's padding rows were fixed
  raw,      // any value, validated, its JSON text kept in `s` (decoded later: summary.coverage)
};

// One key of an object of type O. `has`: the presence bit set when the value had the right
// type (0: none kept).
template <typename O>
struct Field {
  std::string_view key;
  FieldKind kind = FieldKind::ignored;
  std::int64_t O::*i = nullptr;
  std::string O::*s = nullptr;
  bool O::*b = nullptr;
  std::vector<std::int64_t> O::*v = nullptr;
  std::vector<RowRange> O::*r = nullptr;
  std::uint64_t has = 0;
  double O::*d = nullptr;
};

// The top level's field for `key`, or null (an unknown key: skipped).
const Field<Event>* top_field(std::string_view key);
// The nested objects' tables (top-level keys buffer, counts, rows, spread, last_writer,
// infinities).
std::span<const Field<Event::Buffer>> buffer_fields();
std::span<const Field<Counts>> counts_fields();
std::span<const Field<Event>> rows_fields();
std::span<const Field<Event::Spread>> spread_fields();
std::span<const Field<Event::LastWriter>> last_writer_fields();
std::span<const Field<Event>> infinities_fields();

// Every key the parser knows, decoded or skipped on purpose: `object` "" for the top level,
// else the top-level key of a nested object ("buffer", "counts", "rows", "spread", "last_writer",
// "infinities"); empty for others.
std::vector<std::string_view> parser_known_keys(std::string_view object);

}  // namespace nanscope::report

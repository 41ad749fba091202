// Findings as the drain thread sees them, for the finding -> event tests: a typed output, a
// captured graph finding, a watch with padding rows (fixed, leaking) and rows inferred from the
// global padding spec without a padding source.
#pragma once
#include <cstdint>
#include <vector>

#include "channel.hpp"
#include "finding_event.hpp"
#include "lineage.hpp"

namespace nanscope::samples {

inline Finding typed_output() {
  Finding f;
  f.launch_id = 7;
  f.correlation_id = 41;
  f.stream = 0x5000;
  f.ptr = 0x7f0000001000;
  f.elements = 1024;
  f.nan = 3;
  f.pos_inf = 1;
  f.first_index = 17;
  f.last_index = 900;
  f.kernel_id = 2;
  f.arg = 1;
  f.dtype = DType::f32;
  return f;
}

inline Finding captured() {
  Finding f = typed_output();
  f.captured = true;
  f.graph_id = uint64_t{1} << 40;
  f.graph_node = 4;
  f.replay = 9;
  f.origin_tracked = true;
  f.seq = 12;
  return f;
}

inline Finding watch_rows() {
  Finding f = typed_output();
  f.dtype = DType::bf16;
  f.row_aware = true;
  f.fixed = true;
  f.watch_id = 3;
  f.padding_source = PaddingSource::seq_lens;
  f.rows_total = 8;
  f.elements = 8 * 128;
  f.verdict.ranges = {{0, 1, false}, {6, 7, true}};
  f.verdict.counts_real = 2;
  f.verdict.counts_padding = 5;
  f.origin_tracked = true;
  f.seq = 13;
  f.parents = {12, 0};
  f.parent_count = 2;
  return f;
}

inline Finding inferred_rows() {
  Finding f = typed_output();
  f.row_aware = true;
  f.watch_id = kGlobalWatchBit | 1;
  f.padding_source = PaddingSource::none;
  f.rows_total = 4;
  f.elements = 4 * 256;
  f.verdict.ranges = {{2, 2, false}};
  f.verdict.truncated = true;
  f.origin_tracked = true;
  f.reads_untracked = true;
  f.seq = 14;
  return f;
}

inline lineage::Verdict introduced(uint64_t event_id) {
  lineage::Verdict v;
  v.event_id = event_id;
  v.origin = lineage::Origin::introduced;
  v.roots = {event_id};
  return v;
}

inline lineage::Verdict leaking(uint64_t event_id) {
  lineage::Verdict v;
  v.event_id = event_id;
  v.origin = lineage::Origin::propagated;
  v.parents = {5};
  v.roots = {5};
  v.incomplete = true;
  v.leak = true;
  v.rows_before.ranges = {{6, 7, true}};
  v.rows_before.counts_padding = 2;
  v.rows_after.ranges = {{0, 1, false}, {6, 7, true}};
  return v;
}

inline lineage::Verdict unknown(uint64_t event_id) {
  lineage::Verdict v;
  v.event_id = event_id;
  v.origin = lineage::Origin::unknown;
  v.why = lineage::Unknown::untracked_read;
  v.roots = {event_id};
  return v;
}

}  // namespace nanscope::samples

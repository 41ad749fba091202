#include "channel.hpp"

#include <atomic>

namespace nanscope {

namespace {

// The origin fields, valid when the scan kept origin state (NS_ORIGIN_TRACKED).
void decode_origin(const nanscope_record& r, Finding& out) {
  out.origin_tracked = (r.origin_flags & NS_ORIGIN_TRACKED) != 0;
  out.parents.clear();
  out.prior_seq = 0;
  if (!out.origin_tracked) return;
  out.parent_count = r.parent_count;
  for (uint32_t i = 0; i < r.parent_count && i < NANSCOPE_ORIGIN_MAX_PARENTS; ++i) out.parents.push_back(r.parents[i]);
  out.reads_untracked = (r.origin_flags & NS_ORIGIN_READS_UNTRACKED) != 0;
  out.input_unknown = (r.origin_flags & NS_ORIGIN_INPUT_UNKNOWN) != 0;
  out.host_write = (r.origin_flags & NS_ORIGIN_HOST) != 0;
  out.unwritten = (r.origin_flags & NS_ORIGIN_UNWRITTEN) != 0;
  out.prior_seq = r.prior_seq;
}

}  // namespace

bool decode_record(const nanscope_record& r, Finding& out) {
  if (r.dtype > NS_F8E5M2) return false;
  if (r.nan + r.pos_inf + r.neg_inf == 0) return false;
  if (r.nan + r.pos_inf + r.neg_inf > r.elements) return false;
  if (r.first_index > r.last_index || r.last_index >= r.elements) return false;
  out.launch_id = r.launch_id;
  out.correlation_id = NS_CORRELATION_OF(r.correlation_id);
  out.facts_slot = NS_FACTS_SLOT_OF(r.correlation_id);
  out.stream = r.stream;
  out.ptr = r.ptr;
  out.elements = r.elements;
  out.nan = r.nan;
  out.pos_inf = r.pos_inf;
  out.neg_inf = r.neg_inf;
  out.first_index = r.first_index;
  out.last_index = r.last_index;
  out.graph_id = r.graph_id;
  out.kernel_id = r.kernel_id;
  out.replay = r.replay;
  out.graph_node = r.graph_node;
  out.arg = r.arg;
  if (r.intent > (NS_INTENT_NEG_INF | NS_INTENT_POS_INF)) return false;
  out.intent = static_cast<uint8_t>(r.intent);
  out.dtype = static_cast<DType>(r.dtype);
  out.captured = (r.flags & NS_RECORD_CAPTURED) != 0;
  out.row_aware = (r.flags & NS_RECORD_ROWS) != 0;
  out.fixed = (r.flags & NS_RECORD_FIXED) != 0;
  out.unchanged = (r.flags & NS_RECORD_UNCHANGED) != 0;
  out.seq = r.seq;
  decode_origin(r, out);
  out.verdict = RowVerdict{};
  if (!out.row_aware) return true;
  if (r.counts_padding > out.total() || r.range_count > NANSCOPE_MAX_ROW_RANGES ||
      !padding_source_valid(r.padding_source))
    return false;
  out.watch_id = r.watch_id;
  out.rows_total = r.rows_total;
  out.padding_source = static_cast<PaddingSource>(r.padding_source);
  const bool known = out.padding_source != PaddingSource::none;
  out.verdict.counts_padding = known ? r.counts_padding : 0;
  out.verdict.counts_real = known ? out.total() - r.counts_padding : 0;
  out.verdict.truncated = r.ranges_truncated != 0;
  for (uint32_t i = 0; i < r.range_count; ++i) {
    if (r.range_first[i] > r.range_last[i] || r.range_last[i] >= r.rows_total) return false;
    out.verdict.ranges.push_back({r.range_first[i], r.range_last[i], ((r.range_padding_bits >> i) & 1u) != 0});
  }
  return true;
}

ChannelReader::ChannelReader(nanscope_channel_host* header, nanscope_record* records)
    : header_(header), records_(records) {}

std::size_t ChannelReader::drain(const std::function<void(const Finding&)>& sink) {
  const uint64_t cap = header_->capacity;
  std::size_t consumed = 0;
  for (;;) {
    nanscope_record& slot = records_[next_ % cap];
    std::atomic_ref<unsigned long long> seq(slot.seq);
    if (seq.load(std::memory_order_acquire) != next_ + 1) break;
    Finding f;
    if (decode_record(slot, f)) sink(f);
    else ++corrupt_;
    ++next_;
    ++consumed;
    // Release the slot to the device: it may reuse it once read_index passes it.
    std::atomic_ref<unsigned long long> ri(const_cast<unsigned long long&>(header_->read_index));
    ri.store(next_, std::memory_order_release);
  }
  return consumed;
}

}  // namespace nanscope

// Host side of the device->host finding channel: a ring of nanscope_record in mapped pinned
// memory. The device reserves slots in order and publishes each with a release store of
// `seq`; the host consumes strictly in index order and publishes its read index back.
#pragma once
#include <cstdint>
#include <functional>

#include <vector>

#include "padding.hpp"
#include "scan_abi.h"
#include "signature.hpp"

namespace nanscope {

struct Finding {
  uint64_t launch_id = 0;
  uint64_t correlation_id = 0;
  uint32_t facts_slot = 0;  // where its launch's facts wait (src/launch_facts.hpp), 0: none
  uint64_t stream = 0;
  uint64_t ptr = 0;
  uint64_t elements = 0;
  uint64_t nan = 0, pos_inf = 0, neg_inf = 0;
  uint64_t first_index = 0, last_index = 0;
  uint64_t graph_id = 0;
  uint32_t kernel_id = 0;
  uint32_t replay = 0;
  uint32_t graph_node = 0;
  uint16_t arg = 0;
  DType dtype = DType::none;
  bool captured = false;
  // Row-aware scans (watches, rules) only.
  bool row_aware = false;
  bool fixed = false;
  bool unchanged = false;  // same counts and positions as the watch's previous scan
  uint32_t watch_id = 0;
  PaddingSource padding_source = PaddingSource::none;
  uint64_t rows_total = 0;
  RowVerdict verdict;
  // Origin, judged on the device from the state of the launch's tracked inputs.
  uint64_t seq = 0;               // this finding's sequence number in its context's channel
  bool origin_tracked = false;
  std::vector<uint64_t> parents;  // sequence numbers of the findings behind non-finite inputs
  uint32_t parent_count = 0;      // non-finite inputs (may exceed parents.size())
  bool reads_untracked = false;
  bool input_unknown = false;
  bool host_write = false;        // the values came from a host copy or memset
  bool unwritten = false;         // an initial scan of memory no write nanscope saw filled
  uint8_t intent = 0;             // NS_INTENT_*: infinities the launch writes here on purpose
  uint64_t prior_seq = 0;         // the finding that left the buffer non-finite before (0: none)

  uint64_t total() const { return nan + pos_inf + neg_inf; }
};

// Validates and converts one published record. Returns false for a record whose fields are
// out of range (a torn or corrupt record): it is counted, never logged as a finding.
bool decode_record(const nanscope_record& r, Finding& out);

class ChannelReader {
 public:
  // `header` and `records` are host addresses of the mapped ring.
  ChannelReader(nanscope_channel_host* header, nanscope_record* records);
  // Consumes every record published so far, in order. Returns the number consumed.
  std::size_t drain(const std::function<void(const Finding&)>& sink);
  uint64_t corrupt() const { return corrupt_; }
  uint64_t overflow() const { return header_->overflow; }  // findings the device had to drop
  uint64_t unchanged() const { return header_->unchanged; }  // quiet unchanged rescans, counted on the device
  uint64_t read_index() const { return next_; }

 private:
  nanscope_channel_host* header_;
  nanscope_record* records_;
  uint64_t next_ = 0;
  uint64_t corrupt_ = 0;
};

}  // namespace nanscope

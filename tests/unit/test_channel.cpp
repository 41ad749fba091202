// Record decoding and the in-order channel protocol, driven by a host-only fake ring.
#include <gtest/gtest.h>

#include <vector>

#include "channel.hpp"

using namespace nanscope;

namespace {

nanscope_record valid_record() {
  nanscope_record r{};
  r.launch_id = 7;
  r.correlation_id = 11;
  r.stream = 0x1234;
  r.ptr = 0x7f0000000000;
  r.elements = 4096;
  r.nan = 512;
  r.first_index = 3584;
  r.last_index = 4095;
  r.kernel_id = 3;
  r.arg = 1;
  r.dtype = NS_BF16;
  return r;
}

struct FakeRing {
  explicit FakeRing(uint64_t cap) : records(cap) { header.capacity = cap; }
  // What the device does: write the record, then publish seq = index + 1.
  void publish(uint64_t index, nanscope_record r) {
    r.seq = index + 1;
    records[index % header.capacity] = r;
  }
  nanscope_channel_host header{};
  std::vector<nanscope_record> records;
};

}  // namespace

// The task's correlation id carries the host's facts slot in its high half: the log's
// correlation id stays CUPTI's.
TEST(RecordDecoding, SplitsTheFactsSlotFromTheCorrelationId) {
  nanscope_record r = valid_record();
  r.correlation_id = NS_CORRELATION_WITH_FACTS(11, 70000u);
  Finding f;
  ASSERT_TRUE(decode_record(r, f));
  EXPECT_EQ(f.correlation_id, 11u);
  EXPECT_EQ(f.facts_slot, 70000u);
  ASSERT_TRUE(decode_record(valid_record(), f));
  EXPECT_EQ(f.facts_slot, 0u);
}

TEST(RecordDecoding, ConvertsEveryField) {
  Finding f;
  ASSERT_TRUE(decode_record(valid_record(), f));
  EXPECT_EQ(f.launch_id, 7u);
  EXPECT_EQ(f.correlation_id, 11u);
  EXPECT_EQ(f.stream, 0x1234u);
  EXPECT_EQ(f.elements, 4096u);
  EXPECT_EQ(f.nan, 512u);
  EXPECT_EQ(f.total(), 512u);
  EXPECT_EQ(f.first_index, 3584u);
  EXPECT_EQ(f.last_index, 4095u);
  EXPECT_EQ(f.kernel_id, 3u);
  EXPECT_EQ(f.arg, 1u);
  EXPECT_EQ(f.dtype, DType::bf16);
  EXPECT_FALSE(f.captured);
}

TEST(RecordDecoding, CapturedFlagCarriesGraphFields) {
  auto r = valid_record();
  r.flags = NS_RECORD_CAPTURED;
  r.graph_id = 42;
  r.graph_node = 2;
  r.replay = 9;
  Finding f;
  ASSERT_TRUE(decode_record(r, f));
  EXPECT_TRUE(f.captured);
  EXPECT_EQ(f.graph_id, 42u);
  EXPECT_EQ(f.graph_node, 2u);
  EXPECT_EQ(f.replay, 9u);
}

// NaN-first fields: the intended infinities of the buffer, the finding its word named before the
// launch, and an initial scan of memory nothing nanscope saw wrote.
TEST(RecordDecoding, IntentPriorFindingAndUnwritten) {
  auto r = valid_record();
  r.intent = NS_INTENT_NEG_INF;
  r.origin_flags = NS_ORIGIN_TRACKED | NS_ORIGIN_UNWRITTEN;
  r.prior_seq = 41;
  Finding f;
  ASSERT_TRUE(decode_record(r, f));
  EXPECT_EQ(f.intent, NS_INTENT_NEG_INF);
  EXPECT_EQ(f.prior_seq, 41u);
  EXPECT_TRUE(f.unwritten);
  EXPECT_FALSE(f.host_write);
  r.origin_flags = 0;  // no origin state: no prior finding is taken from the record
  ASSERT_TRUE(decode_record(r, f));
  EXPECT_EQ(f.prior_seq, 0u);
  r.intent = 4;  // no such bit
  EXPECT_FALSE(decode_record(r, f));
  EXPECT_EQ(NS_BUFFER_ARG(NS_BUFFER_ARG_WITH_INTENT(5u, NS_INTENT_POS_INF)), 5u);
  EXPECT_EQ(NS_BUFFER_INTENT(NS_BUFFER_ARG_WITH_INTENT(5u, NS_INTENT_POS_INF)), NS_INTENT_POS_INF);
}

TEST(RecordDecoding, RejectsInconsistentRecords) {
  Finding f;
  auto bad_dtype = valid_record();
  bad_dtype.dtype = 9;
  EXPECT_FALSE(decode_record(bad_dtype, f));
  auto empty = valid_record();
  empty.nan = 0;
  EXPECT_FALSE(decode_record(empty, f));
  auto too_many = valid_record();
  too_many.nan = 5000;
  EXPECT_FALSE(decode_record(too_many, f));
  auto index_out = valid_record();
  index_out.last_index = 4096;
  EXPECT_FALSE(decode_record(index_out, f));
  auto reversed = valid_record();
  reversed.first_index = 4000;
  reversed.last_index = 10;
  EXPECT_FALSE(decode_record(reversed, f));
}

TEST(ChannelReader, ConsumesInOrderAndPublishesReadIndex) {
  FakeRing ring(4);
  ChannelReader reader(&ring.header, ring.records.data());
  std::vector<uint64_t> seen;
  auto sink = [&](const Finding& f) { seen.push_back(f.launch_id); };
  EXPECT_EQ(reader.drain(sink), 0u);
  for (uint64_t i = 0; i < 3; ++i) {
    auto r = valid_record();
    r.launch_id = 100 + i;
    ring.publish(i, r);
  }
  EXPECT_EQ(reader.drain(sink), 3u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{100, 101, 102}));
  EXPECT_EQ(ring.header.read_index, 3u);
}

TEST(ChannelReader, WaitsForAReservedButUnpublishedSlot) {
  FakeRing ring(8);
  ChannelReader reader(&ring.header, ring.records.data());
  uint64_t n = 0;
  auto sink = [&](const Finding&) { ++n; };
  ring.publish(1, valid_record());  // index 0 is reserved but still being written
  EXPECT_EQ(reader.drain(sink), 0u);
  ring.publish(0, valid_record());
  EXPECT_EQ(reader.drain(sink), 2u);
  EXPECT_EQ(n, 2u);
}

TEST(ChannelReader, WrapsAroundTheRing) {
  FakeRing ring(2);
  ChannelReader reader(&ring.header, ring.records.data());
  uint64_t n = 0;
  auto sink = [&](const Finding&) { ++n; };
  for (uint64_t i = 0; i < 10; ++i) {
    ring.publish(i, valid_record());
    EXPECT_EQ(reader.drain(sink), 1u);
  }
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(reader.read_index(), 10u);
}

TEST(ChannelReader, CountsCorruptRecordsWithoutStalling) {
  FakeRing ring(4);
  ChannelReader reader(&ring.header, ring.records.data());
  auto bad = valid_record();
  bad.dtype = 200;
  ring.publish(0, bad);
  ring.publish(1, valid_record());
  uint64_t n = 0;
  EXPECT_EQ(reader.drain([&](const Finding&) { ++n; }), 2u);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(reader.corrupt(), 1u);
}

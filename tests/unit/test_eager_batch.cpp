// Held eager scans (src/eager_batch.hpp): when must a stream's held scans be launched? Synthetic
// driver-call sequences against a replay model: a scan held on a stream must be launched before
// any later call that writes what it reads (or every later call that could reveal the stream's
// progress), which is what running it right after its kernel guarantees.
#include <gtest/gtest.h>

#include "eager_batch.hpp"

namespace nanscope::eager {
namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000;  // two app streams; 0 is the legacy stream
const Limits kLimits{};

Pending held_on(uint64_t stream, std::vector<Range> reads, uint64_t now = 100) {
  Pending p;
  p.stream = stream;
  p.legacy = stream == 0;
  hold(p, reads, now);
  return p;
}

Event at(Point point, uint64_t stream, std::vector<Range> ranges = {}, uint64_t now = 200) {
  Event e;
  e.point = point;
  e.stream = stream;
  e.legacy = stream == 0;
  e.ranges = std::move(ranges);
  e.now_ns = now;
  return e;
}

TEST(EagerBatch, NothingHeldNeverFlushes) {
  Pending p;
  p.stream = kA;
  for (Point pt : {Point::launch, Point::opaque_launch, Point::device_write, Point::host_read, Point::stream_point,
                   Point::context_point, Point::in_line_scan})
    EXPECT_EQ(must_flush(p, at(pt, kA, {{0, ~0ull}}, ~0ull), kLimits), Flush::none);
}

TEST(EagerBatch, OverwriteRightAfterTheWriter) {
  // K1 writes [0x100, 0x200) (held scan); K2 writes it again on the same stream.
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0x180, 0x181}}), kLimits), Flush::overwrite);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0x100, 0x101}}), kLimits), Flush::overwrite);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0x1ff, 0x200}}), kLimits), Flush::overwrite);
  // A word just past the end, or just before the allocation base, is another buffer.
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0x200, 0x201}}), kLimits), Flush::none);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0xff, 0x100}}), kLimits), Flush::none);
  // Another stream writing it (an app race, or ordered through an event recorded earlier) too.
  EXPECT_EQ(must_flush(p, at(Point::launch, kB, {{0x180, 0x181}}), kLimits), Flush::overwrite);
}

TEST(EagerBatch, AKernelThatOnlyReadsLetsTheScanWait) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0x300, 0x301}}), kLimits), Flush::none);  // writes elsewhere
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {}), kLimits), Flush::none);  // const pointers only
}

TEST(EagerBatch, UndecodedKernelOnTheStreamMayWriteAnything) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::opaque_launch, kA), kLimits), Flush::opaque);
  // On another stream only its parameter words count.
  EXPECT_EQ(must_flush(p, at(Point::opaque_launch, kB), kLimits), Flush::none);
  EXPECT_EQ(must_flush(p, at(Point::opaque_launch, kB, {{0x150, 0x151}}), kLimits), Flush::overwrite);
}

TEST(EagerBatch, SynchronisationAndEvents) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  // cuStreamSynchronize / cuStreamQuery / cuEventRecord / host function / begin capture on the stream.
  EXPECT_EQ(must_flush(p, at(Point::stream_point, kA), kLimits), Flush::stream_point);
  EXPECT_EQ(must_flush(p, at(Point::stream_point, kB), kLimits), Flush::none);
  EXPECT_EQ(must_flush(p, at(Point::context_point, kB), kLimits), Flush::context_point);
  // Waiting for or querying an event: what was held when it was recorded went at the record.
  EXPECT_EQ(must_flush(p, at(Point::event_wait, kA), kLimits), Flush::none);
  EXPECT_EQ(must_flush(p, at(Point::event_wait, kB), kLimits), Flush::none);
}

TEST(EagerBatch, TwoStreamsJoinedByAnEvent) {
  // A: K1 (held S1), record E (flush), B: wait E, K2 reads K1's output. S1 must be launched at
  // the record, before E is: nothing can still be held on A when B waits.
  Pending a = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(a, at(Point::stream_point, kA), kLimits), Flush::stream_point);
  clear(a);
  EXPECT_EQ(must_flush(a, at(Point::stream_point, kB), kLimits), Flush::none);
  // B's own held scans go when B waits (B may be joining a capture).
  const Pending b = held_on(kB, {{0x300, 0x400}});
  EXPECT_EQ(must_flush(b, at(Point::stream_point, kB), kLimits), Flush::stream_point);
}

TEST(EagerBatch, CopiesToTheHost) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::host_read, kA), kLimits), Flush::host_read);  // on the stream
  EXPECT_EQ(must_flush(p, at(Point::host_read, kB, {{0x100, 0x140}}), kLimits), Flush::host_read);  // of the buffer
  EXPECT_EQ(must_flush(p, at(Point::host_read, kB, {{0x400, 0x440}}), kLimits), Flush::none);
}

TEST(EagerBatch, FreesAndDeviceWrites) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  // cuMemFreeAsync / cuMemsetD32Async / cuMemcpyHtoDAsync of the held memory, on any stream.
  EXPECT_EQ(must_flush(p, at(Point::device_write, kA, {{0x0, 0x1000}}), kLimits), Flush::overwrite);
  EXPECT_EQ(must_flush(p, at(Point::device_write, kB, {{0x1f0, 0x300}}), kLimits), Flush::overwrite);
  EXPECT_EQ(must_flush(p, at(Point::device_write, kA, {{0x200, 0x300}}), kLimits), Flush::none);
  // cuMemFree (legacy order): every stream's held scans go first.
  EXPECT_EQ(must_flush(p, at(Point::device_write, 0, {{0x800, 0x900}}), kLimits), Flush::stream_point);
}

TEST(EagerBatch, TorchBlockReuse) {
  // The caching allocator frees a block without a CUDA call: nothing to do then, but the kernel
  // that reuses it writes into the held range, which flushes.
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::torch_free, kA, {{0x100, 0x200}}), kLimits), Flush::none);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {{0x100, 0x101}}), kLimits), Flush::overwrite);
}

TEST(EagerBatch, LegacyStreamIsOrderedWithEveryStream) {
  const Pending a = held_on(kA, {{0x100, 0x200}});
  // A kernel on the legacy stream runs after A's work: A's held scans go first (their state words).
  EXPECT_EQ(must_flush(a, at(Point::launch, 0, {{0x900, 0x901}}), kLimits), Flush::stream_point);
  EXPECT_EQ(must_flush(a, at(Point::stream_point, 0), kLimits), Flush::stream_point);
  // Held on the legacy stream: another stream's kernel waits for it.
  const Pending legacy = held_on(0, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(legacy, at(Point::launch, kA, {{0x900, 0x901}}), kLimits), Flush::stream_point);
  // The legacy stream's own next kernel that writes elsewhere lets its scans wait.
  EXPECT_EQ(must_flush(legacy, at(Point::launch, 0, {{0x900, 0x901}}), kLimits), Flush::none);
}

TEST(EagerBatch, ScansThatCannotWaitRunAfterTheHeldOnes) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::in_line_scan, kA), kLimits), Flush::scan_in_line);
  EXPECT_EQ(must_flush(p, at(Point::in_line_scan, kB), kLimits), Flush::none);
}

TEST(EagerBatch, CountBound) {
  Pending p;
  p.stream = kA;
  for (uint32_t i = 0; i < kLimits.max_buffers; ++i) {
    EXPECT_EQ(must_flush_before_join(p, 1, 100, kLimits), Flush::none) << i;
    hold(p, {{0x100u * (i + 1), 0x100u * (i + 1) + 8}}, 100);
  }
  EXPECT_EQ(must_flush_before_join(p, 1, 100, kLimits), Flush::full);
  // A task of several buffers that would overflow the group.
  Pending q = held_on(kA, {{0x100, 0x200}, {0x300, 0x400}, {0x500, 0x600}});
  EXPECT_EQ(must_flush_before_join(q, 5, 100, kLimits), Flush::none);
  EXPECT_EQ(must_flush_before_join(q, 6, 100, kLimits), Flush::full);
  Limits two;
  two.max_buffers = 2;
  EXPECT_EQ(must_flush_before_join(held_on(kA, {{0x100, 0x200}}), 1, 100, two), Flush::none);
  EXPECT_EQ(must_flush_before_join(held_on(kA, {{0x100, 0x200}, {0x300, 0x400}}), 1, 100, two), Flush::full);
}

TEST(EagerBatch, TimeBound) {
  const Pending p = held_on(kA, {{0x100, 0x200}}, 1000);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {}, 1000 + kLimits.max_age_ns), kLimits), Flush::none);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {}, 1001 + kLimits.max_age_ns), kLimits), Flush::age);
  EXPECT_EQ(must_flush(p, at(Point::event_wait, kB, {}, 1001 + kLimits.max_age_ns), kLimits), Flush::age);
  EXPECT_EQ(must_flush_before_join(p, 1, 1001 + kLimits.max_age_ns, kLimits), Flush::age);
  EXPECT_EQ(must_flush(p, at(Point::launch, kA, {}, 10), kLimits), Flush::none);  // a clock before: no age
}

TEST(EagerBatch, ExitAndTeardown) {
  const Pending p = held_on(kA, {{0x100, 0x200}});
  EXPECT_EQ(must_flush(p, at(Point::context_point, 0), kLimits), Flush::context_point);
  EXPECT_STREQ(flush_name(Flush::context_point), "context_point");
}

// Every sequence of up to 5 calls over 2 streams and 3 buffers: replaying held scans with
// must_flush never lets a scan see a later write of its buffer, never lets a stream point or a
// context point pass a scan held on its stream, and holds when nothing requires a launch.
struct Call {
  Point point;
  uint64_t stream;
  int buffer;  // -1: none
};

TEST(EagerBatch, ExhaustiveShortSequences) {
  const Range buffers[3] = {{0x100, 0x200}, {0x200, 0x300}, {0x300, 0x400}};
  const uint64_t streams[2] = {kA, kB};
  // The call kinds: a typed launch writing buffer b (its scan then held), an opaque launch, a
  // device write of b, a stream point, a context point.
  std::vector<Call> alphabet;
  for (uint64_t s : streams) {
    for (int b = 0; b < 3; ++b) alphabet.push_back({Point::launch, s, b});
    alphabet.push_back({Point::opaque_launch, s, -1});
    alphabet.push_back({Point::device_write, s, 0});
    alphabet.push_back({Point::stream_point, s, -1});
  }
  alphabet.push_back({Point::context_point, kA, -1});
  const size_t n = alphabet.size();
  uint64_t sequences = 0;
  for (int len = 1; len <= 5; ++len) {
    uint64_t total = 1;
    for (int i = 0; i < len; ++i) total *= n;
    for (uint64_t code = 0; code < total; ++code) {
      Pending held[2];
      held[0].stream = kA, held[1].stream = kB;
      std::vector<int> held_buffers[2];
      uint64_t c = code;
      for (int i = 0; i < len; ++i, c /= n) {
        const Call& call = alphabet[c % n];
        Event e = at(call.point, call.stream, call.buffer >= 0 ? std::vector<Range>{{buffers[call.buffer].lo + 8,
                                                                                      buffers[call.buffer].lo + 9}}
                                                                : std::vector<Range>{});
        for (int s = 0; s < 2; ++s) {
          const Flush f = must_flush(held[s], e, kLimits);
          bool required = false;  // what running each scan right after its kernel guarantees
          for (int b : held_buffers[s]) required |= call.buffer == b && call.point != Point::stream_point;
          required |= !held[s].empty() && call.point == Point::context_point;
          required |= !held[s].empty() && call.stream == held[s].stream &&
                      (call.point == Point::opaque_launch || call.point == Point::stream_point);
          ASSERT_TRUE(!required || f != Flush::none) << "code " << code << " len " << len << " call " << i;
          // A kernel on the stream that writes another buffer lets the held scans wait: batching.
          if (!required && call.point == Point::launch && call.stream == held[s].stream)
            ASSERT_EQ(f, Flush::none) << "code " << code << " len " << len << " call " << i;
          if (f != Flush::none) clear(held[s]), held_buffers[s].clear();
        }
        if (call.point == Point::launch) {
          const int s = call.stream == kA ? 0 : 1;
          if (must_flush_before_join(held[s], 1, 200, kLimits) != Flush::none) clear(held[s]), held_buffers[s].clear();
          hold(held[s], {buffers[call.buffer]}, 200);
          held_buffers[s].push_back(call.buffer);
        }
      }
      ++sequences;
    }
  }
  EXPECT_GT(sequences, 100000u);
}

// ---- HoldGate: streams where holding does not pay.

TEST(EagerHoldGate, LoneOverwritesInARowTurnHoldingOffForAWhile) {
  Limits l;
  l.bypass_after = 3;
  l.bypass_for = 5;
  HoldGate g;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(may_hold(g));
    on_flushed(g, 1, Flush::overwrite, l);
  }
  ASSERT_TRUE(may_hold(g));
  on_flushed(g, 1, Flush::overwrite, l);  // the third in a row
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(may_hold(g)) << "scan " << i << " of the bypass runs in line";
  EXPECT_TRUE(may_hold(g)) << "then holding is tried again";
}

TEST(EagerHoldGate, AFlushThatHeldSeveralOrForAnotherReasonResetsTheCount) {
  Limits l;
  l.bypass_after = 2;
  HoldGate g;
  on_flushed(g, 1, Flush::overwrite, l);
  on_flushed(g, 2, Flush::overwrite, l);  // batching paid: two scans in one launch
  on_flushed(g, 1, Flush::overwrite, l);
  EXPECT_TRUE(may_hold(g));
  on_flushed(g, 1, Flush::stream_point, l);  // a sync, not the next launch
  on_flushed(g, 1, Flush::overwrite, l);
  EXPECT_TRUE(may_hold(g));
  on_flushed(g, 1, Flush::overwrite, l);
  EXPECT_FALSE(may_hold(g));
}

TEST(EagerHoldGate, ZeroBypassAfterNeverBypasses) {
  Limits l;
  l.bypass_after = 0;
  HoldGate g;
  for (int i = 0; i < 100; ++i) on_flushed(g, 1, Flush::overwrite, l);
  EXPECT_TRUE(may_hold(g));
}

}  // namespace
}  // namespace nanscope::eager

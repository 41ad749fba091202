// Eager scans held back and launched as one grouped scan (NANSCOPE_EAGER_BATCH): when must a
// stream's held scans go to the GPU? A held scan reads its buffers later than it would have run,
// so it must be launched before anything that could change what it reads, or that lets the host
// or another stream see the stream's progress (the state words a scan writes are read by later
// scans in stream order: NaN origin). The rules are one pure function over a plain model, so they
// are tested without a GPU; hooks/eager_batcher.cpp feeds it the driver calls.
#pragma once
#include <cstdint>
#include <vector>

#include "scan_overlap.hpp"

namespace nanscope::eager {

using overlap::Range;

// What one stream's held scans read, and how many there are.
struct Pending {
  uint64_t stream = 0;         // the caller's key for the stream (compared with Event::stream)
  bool legacy = false;         // the legacy default stream (ordered with every blocking stream)
  uint32_t launches = 0;       // scans held
  uint32_t buffers = 0;        // their buffers
  uint64_t oldest_ns = 0;      // when the first one was held
  std::vector<Range> reads;    // [allocation base, buffer end) of each buffer (a kernel may write
                               // the whole allocation through its base, as graphs assume)
  bool empty() const { return launches == 0; }
};

// A driver call (or a scan), as far as held scans care.
enum class Point : uint8_t {
  launch,         // a kernel nanscope can see into: it may write `ranges` (its parameter words)
  opaque_launch,  // a kernel nanscope cannot see into: anything on its stream, and `ranges` elsewhere
  device_write,   // a copy, memset, free or unmap of `ranges`
  host_read,      // a copy to the host (of `ranges`, when known): the host may act on what it sees
  stream_point,   // everything before it on its stream must have run, or may be seen from outside:
                  // stream sync / query / destroy, event record, a stream waiting for an event,
                  // host function, stream memory operation, graph launch, begin capture, a copy
                  // nanscope does not decode
  context_point,  // every stream: cuCtxSynchronize, context teardown, process exit, nanscope_flush
  event_wait,     // cuEventQuery / cuEventSynchronize: nothing (the record flushed already)
  torch_free,     // a PyTorch block freed (no CUDA call): nothing (its reuse is a launch or copy)
  in_line_scan,   // a scan that cannot be held (row-aware, a fix) goes onto its stream
};

struct Event {
  Point point = Point::stream_point;
  uint64_t stream = 0;
  // On the legacy default stream (or the per-thread one, which is ordered with it): it waits for
  // every blocking stream's earlier work and they wait for it, so their held scans go first (their
  // state words are read after it). Held scans on the legacy stream go before any other stream's
  // work for the same reason. Every stream counts as blocking: the safe side.
  bool legacy = false;
  std::vector<Range> ranges;
  uint64_t now_ns = 0;
};

struct Limits {
  uint32_t max_buffers = 8;       // NANSCOPE_SCAN_MAX_BUFFERS: one grouped launch holds 8 buffers
  uint32_t max_launches = 8;      // and 8 launches
  uint64_t max_age_ns = 1000000;  // a held scan waits at most this long for the next driver call
  // A stream whose last `bypass_after` holds each went alone, overwritten by the very next launch
  // (a loop rewriting one tensor), gains nothing from holding and pays the flush check: its next
  // `bypass_for` scans run in line, then holding is tried again.
  uint32_t bypass_after = 4;
  uint32_t bypass_for = 256;
};

// Why the held scans go now (none: they may wait).
enum class Flush : uint8_t { none, overwrite, opaque, host_read, stream_point, context_point, scan_in_line, full, age };
const char* flush_name(Flush f);

// Whether `p`'s held scans must be launched before `e` happens.
Flush must_flush(const Pending& p, const Event& e, const Limits& l);
// Whether a new scan of `buffers` buffers can join `p` at `now_ns`; else `p` goes first.
Flush must_flush_before_join(const Pending& p, uint32_t buffers, uint64_t now_ns, const Limits& l);

// Holds a scan in `p` (the caller has flushed it when must_flush_before_join said so).
void hold(Pending& p, const std::vector<Range>& reads, uint64_t now_ns);
void clear(Pending& p);

// Whether holding pays on one stream (Limits::bypass_after).
struct HoldGate {
  uint32_t lone_overwrites = 0;  // flushes in a row that held one scan, for an overwrite
  uint32_t bypass_left = 0;      // scans still to run in line
};
// Whether the stream's next scan may be held (a scan run in line counts down the bypass).
bool may_hold(HoldGate& g);
// The stream's held scans (`launches` of them) went, for `why`.
void on_flushed(HoldGate& g, uint32_t launches, Flush why, const Limits& l);

}  // namespace nanscope::eager

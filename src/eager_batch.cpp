#include "eager_batch.hpp"

namespace nanscope::eager {

const char* flush_name(Flush f) {
  switch (f) {
    case Flush::none: return "none";
    case Flush::overwrite: return "overwrite";
    case Flush::opaque: return "opaque";
    case Flush::host_read: return "host_read";
    case Flush::stream_point: return "stream_point";
    case Flush::context_point: return "context_point";
    case Flush::scan_in_line: return "scan_in_line";
    case Flush::full: return "full";
    case Flush::age: return "age";
  }
  return "none";
}

namespace {

bool touches(const Pending& p, const std::vector<Range>& ranges) {
  for (const Range& r : ranges)
    for (const Range& held : p.reads)
      if (r.overlaps(held)) return true;
  return false;
}

bool too_old(const Pending& p, uint64_t now_ns, const Limits& l) {
  return now_ns > p.oldest_ns && now_ns - p.oldest_ns > l.max_age_ns;
}

// The point's own reason, before the age bound.
Flush point_flush(const Pending& p, const Event& e) {
  const bool own = e.stream == p.stream;
  // Another stream's call that the driver orders with this one (through the legacy stream).
  const bool cross = !own && (e.legacy || p.legacy);
  switch (e.point) {
    case Point::event_wait:
    case Point::torch_free:
      return Flush::none;
    case Point::context_point:
      return Flush::context_point;
    case Point::launch:
      if (touches(p, e.ranges)) return Flush::overwrite;
      return cross ? Flush::stream_point : Flush::none;
    case Point::opaque_launch:
      if (own) return Flush::opaque;
      if (touches(p, e.ranges)) return Flush::overwrite;
      return cross ? Flush::stream_point : Flush::none;
    case Point::device_write:
      if (touches(p, e.ranges)) return Flush::overwrite;
      return cross ? Flush::stream_point : Flush::none;
    case Point::host_read:
      if (own || touches(p, e.ranges)) return Flush::host_read;
      return cross ? Flush::stream_point : Flush::none;
    case Point::stream_point:
      return own || cross ? Flush::stream_point : Flush::none;
    case Point::in_line_scan:
      if (own) return Flush::scan_in_line;
      return cross ? Flush::stream_point : Flush::none;
  }
  return Flush::stream_point;  // a point this function does not know: the safe answer
}

}  // namespace

Flush must_flush(const Pending& p, const Event& e, const Limits& l) {
  if (p.empty()) return Flush::none;
  const Flush f = point_flush(p, e);
  if (f != Flush::none) return f;
  return too_old(p, e.now_ns, l) ? Flush::age : Flush::none;
}

Flush must_flush_before_join(const Pending& p, uint32_t buffers, uint64_t now_ns, const Limits& l) {
  if (p.empty()) return Flush::none;
  if (p.launches + 1 > l.max_launches || p.buffers + buffers > l.max_buffers) return Flush::full;
  return too_old(p, now_ns, l) ? Flush::age : Flush::none;
}

void hold(Pending& p, const std::vector<Range>& reads, uint64_t now_ns) {
  if (p.empty()) p.oldest_ns = now_ns;
  ++p.launches;
  p.buffers += static_cast<uint32_t>(reads.size());
  p.reads.insert(p.reads.end(), reads.begin(), reads.end());
}

bool may_hold(HoldGate& g) {
  if (g.bypass_left == 0) return true;
  --g.bypass_left;
  return false;
}

void on_flushed(HoldGate& g, uint32_t launches, Flush why, const Limits& l) {
  g.lone_overwrites = launches == 1 && why == Flush::overwrite ? g.lone_overwrites + 1 : 0;
  if (l.bypass_after && g.lone_overwrites >= l.bypass_after) {
    g.lone_overwrites = 0;
    g.bypass_left = l.bypass_for;
  }
}

void clear(Pending& p) {
  p.launches = p.buffers = 0;
  p.oldest_ns = 0;
  p.reads.clear();
}

}  // namespace nanscope::eager

// Chrome trace-event output: while reading, findings are spooled as fixed-size binary records
// to an anonymous temporary file (memory stays flat); write_trace() turns them into JSON.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace nanscope::report {

struct TraceRec {
  enum Type : std::uint8_t { finding = 0, repeat = 1, flow = 2 };
  std::uint8_t type = 0, region = 0, origin = 0, leak = 0;
  std::uint32_t proc = 0, stream = 0, site = 0;
  std::int64_t ts = 0, id = 0;
  std::int64_t a = 0, b = 0, c = 0;  // finding: nan/pos_inf/neg_inf; repeat: count/total/of
  std::int64_t launch = 0, replay = -1;
  std::int64_t from_ts = 0;           // flow: parent slice time
  std::uint32_t from_stream = 0, from_site = 0;
};

struct TraceSink {
  std::string path;
  std::FILE* tmp = nullptr;
  std::int64_t records = 0;
  explicit TraceSink(std::string p) : path(std::move(p)), tmp(std::tmpfile()) {}
  ~TraceSink() {
    if (tmp) std::fclose(tmp);
  }
  void put(const TraceRec& r) {
    if (tmp && std::fwrite(&r, sizeof r, 1, tmp) == 1) ++records;
  }
};

}  // namespace nanscope::report

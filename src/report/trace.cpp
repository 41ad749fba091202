// --trace: Chrome trace-event JSON (loads in Perfetto and chrome://tracing).
//   pid = one per process (its real pid when unique), tid = one per CUDA stream.
//   Each finding is a complete ("X") slice on its stream's track, each `repeat` an instant
//   ("i") event there, and each `parents` link a flow ("s" on the parent's slice, "f" with
//   "bp":"e" on the child's slice).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "model.hpp"
#include "trace.hpp"
#include "util.hpp"

namespace nanscope::report {

namespace {

std::string jstr(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ns since t0 as microseconds with three decimals (exact, no floating point).
struct Us {
  std::int64_t ns;
};

}  // namespace
}  // namespace nanscope::report

template <>
struct fmt::formatter<nanscope::report::Us> : fmt::formatter<std::string_view> {
  auto format(nanscope::report::Us u, format_context& ctx) const {
    std::int64_t v = u.ns < 0 ? 0 : u.ns;
    return fmt::format_to(ctx.out(), "{}.{:03}", v / 1000, v % 1000);
  }
};

namespace nanscope::report {

bool write_trace(Analysis& a, std::ostream& err) {
  TraceSink& t = *a.trace;
  std::FILE* out = std::fopen(t.path.c_str(), "wb");
  if (!out) {
    err << "nanscope report: cannot write " << t.path << '\n';
    return false;
  }
  const std::int64_t t0 = a.t0 == kNoTime ? 0 : a.t0;
  // pid per process: the real one unless two processes (e.g. on two hosts) share it.
  std::map<std::int64_t, int> pid_uses;
  for (auto& p : a.procs) pid_uses[p.pid]++;
  std::vector<std::int64_t> tpid(a.procs.size());
  for (std::size_t i = 0; i < a.procs.size(); ++i)
    tpid[i] = pid_uses[a.procs[i].pid] == 1 ? a.procs[i].pid : std::int64_t(1000000000) + std::int64_t(i);
  std::vector<std::string> kname(a.kernels.size()), kshort(a.kernels.size());
  for (std::size_t k = 0; k < a.kernels.size(); ++k) {
    kname[k] = jstr(a.kernels[k].name);
    kshort[k] = jstr(shorten_kernel(a.kernels[k].name, 48));
  }

  fmt::memory_buffer buf;
  auto flush = [&](bool force) {
    if (force || buf.size() > (1u << 20)) {
      std::fwrite(buf.data(), 1, buf.size(), out);
      buf.clear();
    }
  };
  fmt::format_to(std::back_inserter(buf), "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"nanscope report\","
                 "\"t0_ns\":{},\"t0\":\"{}\"}},\n\"traceEvents\":[\n", t0, iso8601(t0));
  bool first = true;
  auto sep = [&] {
    if (!first) fmt::format_to(std::back_inserter(buf), ",\n");
    first = false;
  };
  // Metadata: process and thread (stream) names.
  for (std::size_t i = 0; i < a.procs.size(); ++i) {
    const Proc& p = a.procs[i];
    std::string name = a.proc_label(std::uint32_t(i)) + (p.argv0.empty() ? "" : " " + p.argv0);
    sep();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":{}}}}}",
                   tpid[i], jstr(name));
    sep();
    fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"tid\":0,\"args\":{{\"sort_index\":{}}}}}",
                   tpid[i], p.rank >= 0 ? p.rank : std::int64_t(i) + 100000);
    for (std::size_t s = 0; s < p.streams.size(); ++s) {
      sep();
      fmt::format_to(std::back_inserter(buf), "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                     tpid[i], s + 1, jstr("stream " + p.streams[s]));
    }
  }
  // Findings: a slice lasts until the next finding on its track, at most 1 us (never overlaps).
  std::map<std::pair<std::uint32_t, std::uint32_t>, TraceRec> pending;
  auto emit_slice = [&](const TraceRec& r, std::int64_t dur) {
    const Site& s = a.sites[r.site];
    sep();
    fmt::format_to(std::back_inserter(buf),
                   "{{\"ph\":\"X\",\"cat\":\"nonfinite\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                   "\"args\":{{\"id\":{},\"ts_ns\":{},\"kernel\":{},\"arg\":{},\"nan\":{},\"pos_inf\":{},\"neg_inf\":{},"
                   "\"region\":\"{}\",\"origin\":\"{}\",\"leak\":{},\"launch_id\":{}",
                   kshort[s.kernel], tpid[r.proc], r.stream + 1, Us{r.ts - t0}, Us{dur}, r.id, r.ts, kname[s.kernel],
                   s.arg, r.a, r.b, r.c, region_name(Region(r.region)), origin_name(Origin(r.origin)),
                   r.leak ? "true" : "false", r.launch);
    if (r.replay >= 0) fmt::format_to(std::back_inserter(buf), ",\"replay\":{}", r.replay);
    if (s.has_graph) fmt::format_to(std::back_inserter(buf), ",\"graph_id\":{}", s.graph_id);
    fmt::format_to(std::back_inserter(buf), "}}}}");
  };
  std::int64_t flow_id = 0;
  std::rewind(t.tmp);
  TraceRec r;
  while (std::fread(&r, sizeof r, 1, t.tmp) == 1) {
    if (r.type == TraceRec::finding) {
      auto key = std::make_pair(r.proc, r.stream);
      auto it = pending.find(key);
      if (it != pending.end()) {
        std::int64_t gap = r.ts - it->second.ts;
        emit_slice(it->second, std::clamp<std::int64_t>(gap, 1, 1000));
        it->second = r;
      } else {
        pending.emplace(key, r);
      }
    } else if (r.type == TraceRec::repeat) {
      const Site& s = a.sites[r.site];
      sep();
      fmt::format_to(std::back_inserter(buf),
                     "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"repeat\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},"
                     "\"args\":{{\"id\":{},\"of\":{},\"count\":{},\"total\":{},\"kernel\":{}}}}}",
                     jstr("repeat ×" + std::to_string(r.a)), tpid[r.proc], r.stream + 1, Us{r.ts - t0}, r.id, r.c, r.a,
                     r.b, kname[s.kernel]);
    } else if (r.type == TraceRec::flow) {
      ++flow_id;
      sep();
      fmt::format_to(std::back_inserter(buf),
                     "{{\"ph\":\"s\",\"cat\":\"lineage\",\"name\":\"nonfinite lineage\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                     flow_id, tpid[r.proc], r.from_stream + 1, Us{r.from_ts - t0});
      sep();
      fmt::format_to(std::back_inserter(buf),
                     "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"lineage\",\"name\":\"nonfinite lineage\",\"id\":{},\"pid\":{},"
                     "\"tid\":{},\"ts\":{},\"args\":{{\"parent\":{},\"child\":{}}}}}",
                     flow_id, tpid[r.proc], r.stream + 1, Us{r.ts - t0}, r.a, r.id);
    }
    flush(false);
  }
  for (auto& [k, p] : pending) emit_slice(p, 1000);
  fmt::format_to(std::back_inserter(buf), "\n]}}\n");
  flush(true);
  bool ok = std::fclose(out) == 0;
  if (!ok) err << "nanscope report: error writing " << t.path << '\n';
  return ok;
}

}  // namespace nanscope::report

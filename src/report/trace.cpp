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
#include "ranks.hpp"
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

namespace {

// Writes one trace file: a buffered stream of trace events, comma-separated.
class TraceWriter {
 public:
  TraceWriter(const Analysis& a, std::FILE* out) : a_(a), out_(out), t0_(a.t0 == kNoTime ? 0 : a.t0) {
    // pid per process: the real one unless two processes (e.g. on two hosts) share it.
    std::map<std::int64_t, int> pid_uses;
    for (auto& p : a.procs) pid_uses[p.pid]++;
    tpid_.resize(a.procs.size());
    for (std::size_t i = 0; i < a.procs.size(); ++i)
      tpid_[i] = pid_uses[a.procs[i].pid] == 1 ? a.procs[i].pid : std::int64_t(1000000000) + std::int64_t(i);
    kname_.resize(a.kernels.size());
    kshort_.resize(a.kernels.size());
    for (std::size_t k = 0; k < a.kernels.size(); ++k) {
      kname_[k] = jstr(a.kernels[k].name);
      kshort_[k] = jstr(shorten_kernel(a.kernels[k].name, 48));
    }
  }

  void begin() {
    fmt::format_to(std::back_inserter(buf_), "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"nanscope report\","
                   "\"t0_ns\":{},\"t0\":\"{}\"}},\n\"traceEvents\":[\n", t0_, iso8601(t0_));
  }

  void end() {
    fmt::format_to(std::back_inserter(buf_), "\n]}}\n");
    flush(true);
  }

  // Metadata: process and thread (stream) names.
  void write_names() {
    for (std::size_t i = 0; i < a_.procs.size(); ++i) {
      const Proc& p = a_.procs[i];
      std::string name = a_.proc_label(std::uint32_t(i)) + (p.argv0.empty() ? "" : " " + p.argv0);
      sep();
      fmt::format_to(std::back_inserter(buf_), "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":{}}}}}",
                     tpid_[i], jstr(name));
      sep();
      fmt::format_to(std::back_inserter(buf_), "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"tid\":0,\"args\":{{\"sort_index\":{}}}}}",
                     tpid_[i], p.rank >= 0 ? p.rank : std::int64_t(i) + 100000);
      for (std::size_t s = 0; s < p.streams.size(); ++s) {
        sep();
        fmt::format_to(std::back_inserter(buf_), "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                       tpid_[i], s + 1, jstr("stream " + p.streams[s]));
      }
    }
  }

  // The records the analysis spooled to `tmp`, in order. A finding's slice is written when the
  // next finding on its track (process, stream) is read: it lasts until then, at most 1 us, so
  // slices never overlap.
  void write_records(std::FILE* tmp) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, TraceRec> pending;
    std::rewind(tmp);
    TraceRec r;
    while (std::fread(&r, sizeof r, 1, tmp) == 1) {
      if (r.type == TraceRec::finding) {
        auto key = std::make_pair(r.proc, r.stream);
        auto it = pending.find(key);
        if (it != pending.end()) {
          std::int64_t gap = r.ts - it->second.ts;
          write_slice(it->second, std::clamp<std::int64_t>(gap, 1, 1000));
          it->second = r;
        } else {
          pending.emplace(key, r);
        }
      } else if (r.type == TraceRec::repeat) {
        write_repeat(r);
      } else if (r.type == TraceRec::flow) {
        write_flow(r);
      }
      flush(false);
    }
    for (auto& [k, p] : pending) write_slice(p, 1000);
  }

  // The cross-rank join's arrows (ranks.hpp): from a contributor's finding on one rank's track
  // to each receiving rank's finding of the same collective.
  void write_cross_rank_flows() {
    if (!a_.cross) return;
    const CrossRank& x = *a_.cross;
    for (const auto& [from, to] : x.flows) {
      const CollFinding& p = x.findings[from];
      const CollFinding& c = x.findings[to];
      const Collective& call = c.call();
      ++flow_id_;
      sep();
      fmt::format_to(std::back_inserter(buf_),
                     "{{\"ph\":\"s\",\"cat\":\"cross_rank\",\"name\":\"nonfinite across ranks\",\"id\":{},\"pid\":{},"
                     "\"tid\":{},\"ts\":{}}}",
                     flow_id_, tpid_[p.snap.proc], p.stream + 1, Us{p.snap.ev.ts_ns - t0_});
      sep();
      fmt::format_to(std::back_inserter(buf_),
                     "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"cross_rank\",\"name\":\"nonfinite across ranks\",\"id\":{},"
                     "\"pid\":{},\"tid\":{},\"ts\":{},\"args\":{{\"op\":\"{}\",\"comm\":\"{}\",\"seq\":{},\"parent\":{},"
                     "\"child\":{}}}}}",
                     flow_id_, tpid_[c.snap.proc], c.stream + 1, Us{c.snap.ev.ts_ns - t0_}, coll_op_name(call.op),
                     comm_hex(call.comm), call.seq, p.snap.ev.id, c.snap.ev.id);
      flush(false);
    }
  }

 private:
  void sep() {
    if (!first_) fmt::format_to(std::back_inserter(buf_), ",\n");
    first_ = false;
  }

  void flush(bool force) {
    if (force || buf_.size() > (1u << 20)) {
      std::fwrite(buf_.data(), 1, buf_.size(), out_);
      buf_.clear();
    }
  }

  void write_slice(const TraceRec& r, std::int64_t dur) {
    const Site& s = a_.sites[r.site];
    sep();
    fmt::format_to(std::back_inserter(buf_),
                   "{{\"ph\":\"X\",\"cat\":\"nonfinite\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                   "\"args\":{{\"id\":{},\"ts_ns\":{},\"kernel\":{},\"arg\":{},\"nan\":{},\"pos_inf\":{},\"neg_inf\":{},"
                   "\"region\":\"{}\",\"origin\":\"{}\",\"leak\":{},\"launch_id\":{}",
                   kshort_[s.kernel], tpid_[r.proc], r.stream + 1, Us{r.ts - t0_}, Us{dur}, r.id, r.ts, kname_[s.kernel],
                   s.arg, r.a, r.b, r.c, region_name(Region(r.region)), origin_name(Origin(r.origin)),
                   r.leak ? "true" : "false", r.launch);
    if (r.replay >= 0) fmt::format_to(std::back_inserter(buf_), ",\"replay\":{}", r.replay);
    if (s.has_graph) fmt::format_to(std::back_inserter(buf_), ",\"graph_id\":{}", s.graph_id);
    fmt::format_to(std::back_inserter(buf_), "}}}}");
  }

  void write_repeat(const TraceRec& r) {
    const Site& s = a_.sites[r.site];
    sep();
    fmt::format_to(std::back_inserter(buf_),
                   "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"repeat\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},"
                   "\"args\":{{\"id\":{},\"of\":{},\"count\":{},\"total\":{},\"kernel\":{}}}}}",
                   jstr("repeat ×" + std::to_string(r.a)), tpid_[r.proc], r.stream + 1, Us{r.ts - t0_}, r.id, r.c, r.a,
                   r.b, kname_[s.kernel]);
  }

  // A parent -> child link: the flow starts on the parent's slice and binds to the child's.
  void write_flow(const TraceRec& r) {
    ++flow_id_;
    sep();
    fmt::format_to(std::back_inserter(buf_),
                   "{{\"ph\":\"s\",\"cat\":\"lineage\",\"name\":\"nonfinite lineage\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                   flow_id_, tpid_[r.proc], r.from_stream + 1, Us{r.from_ts - t0_});
    sep();
    fmt::format_to(std::back_inserter(buf_),
                   "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"lineage\",\"name\":\"nonfinite lineage\",\"id\":{},\"pid\":{},"
                   "\"tid\":{},\"ts\":{},\"args\":{{\"parent\":{},\"child\":{}}}}}",
                   flow_id_, tpid_[r.proc], r.stream + 1, Us{r.ts - t0_}, r.a, r.id);
  }

  const Analysis& a_;
  std::FILE* out_;
  const std::int64_t t0_;
  std::vector<std::int64_t> tpid_;                 // trace pid of each process
  std::vector<std::string> kname_, kshort_;        // each kernel's name, full and short, as JSON strings
  fmt::memory_buffer buf_;
  bool first_ = true;
  std::int64_t flow_id_ = 0;
};

}  // namespace

bool write_trace(Analysis& a, std::ostream& err) {
  TraceSink& t = *a.trace;
  std::FILE* out = std::fopen(t.path.c_str(), "wb");
  if (!out) {
    err << "nanscope report: cannot write " << t.path << '\n';
    return false;
  }
  {
    TraceWriter w(a, out);
    w.begin();
    w.write_names();
    w.write_records(t.tmp);
    w.write_cross_rank_flows();
    w.end();
  }
  bool ok = std::fclose(out) == 0;
  if (!ok) err << "nanscope report: error writing " << t.path << '\n';
  return ok;
}

}  // namespace nanscope::report

#include "finding_event.hpp"

#include <bit>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "log_schema.hpp"
#include "npy_writer.hpp"

namespace nanscope {

// The log's names, in one place (docs/log-schema.md): what `nanscope report` reads back.
namespace event_name {
const char* const nonfinite = schema::event::nonfinite;
const char* const repeat = schema::event::repeat;
const char* const abort = schema::event::abort;
const char* const summary = schema::event::summary;
}  // namespace event_name

namespace {

// The log's keys, from the one schema (src/log_schema.hpp) that `nanscope report` reads too.
namespace buffer_key = schema::buffer_key;
namespace counts_key = schema::counts_key;
namespace dump_key = schema::dump_key;
namespace key = schema::key;
namespace origins_key = schema::origins_key;
namespace python_key = schema::python_key;
namespace root_key = schema::root_key;
namespace rows_key = schema::rows_key;

// Values the log spells out.
constexpr const char* kGlobalSpecWatch = "(global padding spec)";
constexpr const char* kZeroed = schema::action_str::zeroed;
constexpr const char* kDumpSchema = schema::kDumpVersion;
constexpr const char* kDumpNote = "copied when the finding was drained: later writes to the buffer may show";

bool api_watch(const Finding& f) { return f.row_aware && !(f.watch_id & (kRuleWatchBit | kGlobalWatchBit)); }

Json rows_json(const Finding& f) {
  Json padding = Json::array(), real = Json::array(), unknown = Json::array();
  for (const RowRange& r : f.verdict.ranges) {
    Json range = Json::array({r.first, r.last});
    if (f.padding_source == PaddingSource::none) unknown.push_back(range);
    else (r.padding ? padding : real).push_back(range);
  }
  Json j{{rows_key::padding, padding}, {rows_key::real, real}};
  if (!unknown.empty()) j[rows_key::unknown] = unknown;
  j[rows_key::truncated] = f.verdict.truncated;
  return j;
}

Json rowset_json(const RowVerdict& v) {
  Json padding = Json::array(), real = Json::array();
  for (const RowRange& r : v.ranges) (r.padding ? padding : real).push_back(Json::array({r.first, r.last}));
  return Json{{rows_key::padding, padding}, {rows_key::real, real}, {rows_key::truncated, v.truncated}};
}

void add_rows_fields(Json& j, const FindingFacts& facts) {
  const Finding& f = facts.finding;
  j[key::counts_padding] = f.verdict.counts_padding;
  j[key::counts_real] = f.verdict.counts_real;
  j[key::rows] = rows_json(f);
  j[key::rows_total] = f.rows_total;
  j[key::watch] = facts.watch.name;
  j[key::padding_source] = padding_source_name(f.padding_source);
  if (rows_inferred(f)) j[key::rows_inferred] = true;
  if (f.fixed) j[key::action] = kZeroed;
}

// NaN-first: what an infinity-only finding is, the first cause(s), the intended infinities the
// cause was made from, and a spread point's shares.
void add_nan_first_fields(Json& j, const lineage::Verdict& v) {
  if (v.inf != lineage::InfKind::none) {
    j[key::inf] = lineage::inf_kind_name(v.inf);
    if (v.fault) j[key::fault] = true;  // NANSCOPE_INF=fault
  }
  if (!v.causes.empty()) j[key::cause] = v.causes;
  if (!v.intended_from.empty()) j[key::intended_from] = v.intended_from;
  if (v.spread) j[key::spread] = {{schema::spread_key::before, v.spread->before}, {schema::spread_key::after, v.spread->after}};
}

void add_origin_fields(Json& j, const lineage::Verdict& origin) {
  j[key::origin] = lineage::origin_name(origin.origin);
  if (origin.origin == lineage::Origin::unknown) j[key::origin_why] = lineage::unknown_name(origin.why);
  if (origin.through_candidate) j[key::origin_why] = schema::origin_why_str::through_candidate;
  if (!origin.parents.empty()) j[key::parents] = origin.parents;
  j[key::root] = origin.roots;
  if (origin.incomplete) j[key::origin_incomplete] = true;  // a parent finding was never seen
  if (origin.leak) {
    j[key::leak] = true;
    j[key::rows_before] = rowset_json(origin.rows_before);
    // A leak through a buffer with no padding spec (a per-tensor amax) has no rows to show.
    if (lineage::rows_known(origin.rows_after) || !origin.rows_after.ranges.empty())
      j[key::rows_after] = rowset_json(origin.rows_after);
  }
  add_nan_first_fields(j, origin);
}

Json candidates_json(const std::vector<CandidateFacts>& candidates) {
  Json list = Json::array();
  for (const CandidateFacts& c : candidates)
    list.push_back(Json{{key::kernel, c.kernel}, {key::launch_id, c.launch_id}, {key::stream, hex(c.stream)},
                        {key::python, python_json(c.python)}});
  return list;
}

std::string graph_where(bool captured, uint64_t graph_id, uint32_t graph_node, uint32_t replay) {
  return captured ? fmt::format(", graph {} node {} replay {}", graph_id, graph_node, replay) : std::string();
}

Json root_json(const lineage::RootSummary& r, const KernelName& kernel_name) {
  Json j{{key::event, r.event_id},
         {key::kernel, kernel_name(r.site.kernel_id)},
         {key::origin, lineage::origin_name(r.origin)},
         {key::launch_id, r.site.launch_id},
         {key::stream, hex(r.site.stream)},
         {key::buffer, hex(r.buffer.ptr)},
         {key::rows, rowset_json(r.rows)},
         {key::findings, r.findings},
         {origins_key::leaks, r.leaks},
         {root_key::kernels_reached, r.kernels.size()},
         {root_key::buffers_reached, r.buffers.size()},
         {root_key::last_event, r.last_event_id}};
  if (r.origin == lineage::Origin::unknown) j[key::origin_why] = lineage::unknown_name(r.why);
  if (r.inf != lineage::InfKind::none) j[key::inf] = lineage::inf_kind_name(r.inf);
  j[key::fault] = r.nan_cause;  // a NaN names it as its first cause
  if (!r.intended_from.empty()) j[key::intended_from] = r.intended_from;
  if (r.origin == lineage::Origin::candidate) {
    Json names = Json::array();
    for (uint32_t id : r.candidates) names.push_back(kernel_name(id));
    j[key::candidates] = names;
  }
  if (r.site.captured)
    j[key::graph_id] = r.site.graph_id, j[key::graph_node] = r.site.graph_node, j[key::replay] = r.site.replay;
  if (r.first_leak) {
    j[root_key::first_leak] = {{key::event, r.first_leak->event_id},
                          {key::kernel, kernel_name(r.first_leak->site.kernel_id)},
                          {key::launch_id, r.first_leak->site.launch_id},
                          {key::buffer, hex(r.first_leak->buffer.ptr)},
                          {key::rows_before, rowset_json(r.first_leak->rows_before)},
                          {key::rows_after, rowset_json(r.first_leak->rows_after)}};
  } else {
    j[root_key::first_leak] = nullptr;
  }
  return j;
}

}  // namespace

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

Json python_json(const std::optional<PythonLine>& line) {
  if (!line) return nullptr;
  Json j{{python_key::file, line->file}, {python_key::line, line->line}, {python_key::function, line->function}};
  if (!line->generated_file.empty())
    j[schema::python_key::generated] = Json{{python_key::file, line->generated_file}, {python_key::line, line->generated_line}};
  if (!line->op.empty()) j[python_key::op] = line->op;
  return j;
}

std::string short_name(const std::string& kernel) {
  return kernel.size() > 120 ? kernel.substr(0, 117) + "..." : kernel;
}

const char* region_of(const Finding& f) {
  if (!f.row_aware || f.padding_source == PaddingSource::none) return "unknown";
  return f.verdict.region();
}

std::string ranges_text(const Finding& f) {
  std::string out;
  for (const RowRange& r : f.verdict.ranges) {
    if (!out.empty()) out += ",";
    out += r.first == r.last ? fmt::format("{}", r.first) : fmt::format("{}-{}", r.first, r.last);
    out += f.padding_source == PaddingSource::none ? "" : r.padding ? "p" : "r";
  }
  return out + (f.verdict.truncated ? ",..." : "");
}

bool rows_inferred(const Finding& f) {
  return f.row_aware && (f.watch_id & kGlobalWatchBit) && !(f.watch_id & kRuleWatchBit);
}

bool needs_watch_lookup(const Finding& f) { return f.row_aware && !rows_inferred(f); }

WatchMeta finding_watch(const Finding& f, const std::optional<WatchMeta>& registered) {
  if (rows_inferred(f)) return WatchMeta{kGlobalSpecWatch, Action::detect};
  if (f.row_aware && registered) return *registered;
  return {};
}

bool writes_arg(const std::vector<ParamRole>& roles, uint32_t arg) {
  return arg < roles.size() && roles[arg] == ParamRole::output;
}

bool stale_rescan(const Finding& f, bool known_writer) { return f.unchanged && api_watch(f) && !known_writer; }

bool aborts(const Finding& f, Action action) {
  return f.row_aware && !rows_inferred(f) && action == Action::abort && f.verdict.counts_real > 0;
}

static_assert(lineage::kIntendNegInf == NS_INTENT_NEG_INF && lineage::kIntendPosInf == NS_INTENT_POS_INF);

std::optional<lineage::DeviceFinding> device_finding(const Finding& f, int device) {
  if (!f.origin_tracked) return std::nullopt;
  // Sequence numbers are per context: the device ordinal keeps contexts apart.
  const uint64_t ctx_bits = static_cast<uint64_t>(device + 1) << 48;
  lineage::DeviceFinding d;
  d.seq = ctx_bits | f.seq;
  d.buffer = {f.ptr};
  if (f.row_aware && f.padding_source != PaddingSource::none) d.rows = f.verdict;
  d.site = {f.launch_id, f.kernel_id, f.stream, f.captured, f.graph_id, f.graph_node, f.replay};
  for (uint64_t p : f.parents) d.parent_seqs.push_back(p ? ctx_bits | p : 0);
  d.parent_count = f.parent_count;
  d.input_unknown = f.input_unknown;
  d.reads_untracked = f.reads_untracked;
  d.host = f.host_write;
  d.unwritten = f.unwritten;
  d.fixed = f.fixed;
  d.values = {f.nan, f.pos_inf, f.neg_inf, f.elements};
  d.intent = f.intent;
  d.prior_seq = f.prior_seq ? ctx_bits | f.prior_seq : 0;
  return d;
}

const char* origin_kind(const std::optional<lineage::DeviceFinding>& d) {
  return d ? lineage::origin_name(lineage::device_origin(*d)) : "";
}

SiteKey site_key(const Finding& f, const char* origin_kind) {
  const CountsKey counts{f.nan, f.pos_inf, f.neg_inf, f.row_aware ? f.verdict.counts_padding : 0,
                         f.row_aware ? f.verdict.counts_real : 0};
  return {f.kernel_id, f.arg,   f.graph_id, f.graph_node, region_of(f),
          f.ptr,       f.watch_id, (f.row_aware ? ranges_text(f) : std::string()) + "|" + origin_kind, counts};
}

void FoldedCounts::add(const Finding& f) {
  nan += f.nan, pos_inf += f.pos_inf, neg_inf += f.neg_inf;
  if (f.row_aware) padding += f.verdict.counts_padding, real += f.verdict.counts_real;
}

Site* Sites::record(const SiteKey& key, uint32_t replay) {
  auto it = sites_.find(key);
  if (it == sites_.end()) {
    if (sites_.size() >= kMaxSites) return nullptr;
    it = sites_.emplace(key, Site{}).first;
  }
  Site& site = it->second;
  ++site.total;
  if (site.total == 1) site.first_replay = replay;
  site.last_replay = replay;
  return &site;
}

std::optional<Json> Sites::fold(Site& s, const Finding& f, bool captured) {
  ++s.pending;
  s.pending_counts.add(f);
  if ((s.total & (s.total - 1)) != 0 || (std::countr_zero(s.total) % 2) != 0) return std::nullopt;
  Json r = repeat_event(s, captured, /*final=*/false);
  s.pending = 0;
  s.pending_counts = {};
  return r;
}

std::vector<Json> Sites::closing() {
  std::vector<Json> out;
  for (auto& [key, site] : sites_) {
    if (site.total <= 1) continue;
    out.push_back(repeat_event(site, std::get<2>(key) != 0, /*final=*/true));
    site.pending = 0;
    site.pending_counts = {};
  }
  return out;
}

Json site_identity(const Finding& f, const std::string& kernel) {
  Json j{{key::kernel, kernel},
         {key::buffer, {{buffer_key::arg, f.arg}, {buffer_key::ptr, hex(f.ptr)}, {buffer_key::elements, f.elements}}},
         {key::region, region_of(f)}};
  if (f.row_aware) j[key::rows] = rows_json(f);
  return j;
}

Json repeat_event(const Site& s, bool with_replays, bool final) {
  Json r{{key::of, s.first_event}, {key::count, s.pending}, {key::total, s.total}, {key::final_, final}};
  if (with_replays) r[key::first_replay] = s.first_replay, r[key::last_replay] = s.last_replay;
  const FoldedCounts& c = s.pending_counts;
  r[key::counts] = {{counts_key::nan, c.nan}, {counts_key::pos_inf, c.pos_inf}, {counts_key::neg_inf, c.neg_inf}};
  if (s.row_aware) r[key::counts_padding] = c.padding, r[key::counts_real] = c.real;
  if (s.identity.is_object())
    for (const auto& [k, v] : s.identity.items()) r[k] = v;
  return r;
}

Json finding_event(const FindingFacts& facts, const std::optional<lineage::Verdict>& origin) {
  const Finding& f = facts.finding;
  Json j;
  j[key::device] = facts.device;
  j[key::stream] = hex(f.stream);
  j[key::kernel] = facts.kernel;
  j[key::kernel_mangled] = facts.kernel_mangled;
  j[key::launch_id] = f.launch_id;
  j[key::correlation_id] = f.correlation_id;
  j[key::buffer] = {{buffer_key::arg, f.arg}, {buffer_key::ptr, hex(f.ptr)}, {buffer_key::dtype, dtype_name(f.dtype)}, {buffer_key::elements, f.elements}};
  if (f.row_aware) j[key::buffer][buffer_key::name] = facts.watch.name;
  j[key::counts] = {{counts_key::nan, f.nan}, {counts_key::pos_inf, f.pos_inf}, {counts_key::neg_inf, f.neg_inf}};
  j[key::first_index] = f.first_index;
  j[key::last_index] = f.last_index;
  if (f.captured) {
    j[key::graph_id] = f.graph_id;
    j[key::graph_node] = f.graph_node;
    j[key::replay] = f.replay;
    if (facts.graph_stream) j[key::stream] = hex(*facts.graph_stream);  // keeps its place
  }
  j[key::region] = region_of(f);
  if (f.row_aware) add_rows_fields(j, facts);
  if (origin) add_origin_fields(j, *origin);
  if (origin && (origin->origin == lineage::Origin::candidate || origin->through_candidate))
    j[key::candidates] = candidates_json(facts.candidates);
  if (origin && origin->last_writer && facts.last_writer)
    j[key::last_writer] = {{schema::last_writer_key::event, origin->last_writer->event_id},
                           {key::kernel, facts.last_writer->kernel},
                           {key::launch_id, facts.last_writer->launch_id},
                           {key::python, python_json(facts.last_writer->python)}};
  j[key::python] = python_json(facts.python);
  if (facts.collective) j[key::collective] = collective_json(*facts.collective, origin);
  return j;
}

Json collective_json(const CollectiveFacts& c, const std::optional<lineage::Verdict>& origin) {
  namespace ck = schema::collective_key;
  namespace ss = schema::send_state_str;
  const char* send_state = ss::unknown;
  if (c.role == CollectiveRole::send) send_state = ss::nonfinite;  // the scan of sendbuff itself found it
  else if (c.send_read && origin && origin->origin == lineage::Origin::introduced) send_state = ss::finite;
  else if (c.send_read && origin && origin->origin == lineage::Origin::propagated) send_state = ss::nonfinite;
  Json j;
  j[ck::op] = collective_op_name(c.op);
  j[ck::comm] = comm_hex(c.where.hash);
  j[ck::seq] = c.where.seq;
  j[ck::rank] = c.where.rank;
  j[ck::nranks] = c.where.nranks;
  j[ck::peers] = c.peers;
  j[ck::send_state] = send_state;
  j[ck::role] = c.role == CollectiveRole::send ? schema::role_str::send : schema::role_str::recv;
  return j;
}

std::string finding_line(const FindingFacts& facts) {
  const Finding& f = facts.finding;
  const std::string& kernel = facts.kernel;
  std::string where = fmt::format("launch {}, stream {}", f.launch_id, hex(f.stream));
  where += graph_where(f.captured, f.graph_id, f.graph_node, f.replay);
  std::string verdict;
  if (f.row_aware)
    verdict = fmt::format(" [{} '{}': {} in padding rows, {} in real rows; rows {}{}]", region_of(f), facts.watch.name,
                          f.verdict.counts_padding, f.verdict.counts_real, ranges_text(f),
                          f.fixed ? "; padding rows zeroed" : "");
  if (facts.python) where += fmt::format(", from {}:{} in {}", facts.python->file, facts.python->line, facts.python->function);
  return fmt::format("non-finite output: {} arg {} ({} x{} at {}): {} NaN, {} +Inf, {} -Inf, first at {} ({}){}",
                     kernel.size() > 160 ? kernel.substr(0, 157) + "..." : kernel, f.arg, dtype_name(f.dtype),
                     f.elements, hex(f.ptr), f.nan, f.pos_inf, f.neg_inf, f.first_index, where, verdict);
}

std::string leak_line(const FindingFacts& facts, uint64_t event_id, const lineage::Verdict& origin) {
  return fmt::format(
      "leak: non-finite values crossed from padding rows into real rows in {} ('{}', event {}, from event{} {})",
      short_name(facts.kernel), facts.watch.name.empty() ? hex(facts.finding.ptr) : facts.watch.name, event_id,
      origin.parents.size() > 1 ? "s" : "", fmt::join(origin.parents, ", "));
}

std::string abort_reason(const Finding& f, const std::string& kernel, const std::string& watch) {
  return fmt::format("nanscope: abort: {} non-finite value(s) in real rows of '{}' written by {} (launch {}{})",
                     f.verdict.counts_real, watch, kernel, f.launch_id,
                     f.captured ? fmt::format(", graph {} replay {}", f.graph_id, f.replay) : "");
}

Json abort_event(const Finding& f, const std::string& reason, const std::string& watch) {
  return Json{{key::reason, reason}, {key::launch_id, f.launch_id}, {key::watch, watch}};
}

std::vector<uint64_t> dump_shape(const Finding& f) {
  if (f.row_aware && f.rows_total && f.elements % f.rows_total == 0) return {f.rows_total, f.elements / f.rows_total};
  return {f.elements};
}

Json dump_sidecar(const Finding& f, uint64_t event_id, long pid, const Json& event, const std::vector<uint64_t>& shape) {
  Json side;
  side[key::schema] = kDumpSchema;
  side[dump_key::event_id] = event_id;
  side[key::pid] = pid;
  side[key::kernel] = event.value(key::kernel, "");
  side[key::buffer] = event[key::buffer];
  side[buffer_key::dtype] = dtype_name(f.dtype);
  side[dump_key::storage] = npy_descr(f.dtype);
  side[dump_key::shape] = shape;
  side[key::counts] = event[key::counts];
  if (f.row_aware) {
    side[key::padding_source] = padding_source_name(f.padding_source);
    Json verdicts = Json::array();
    for (const RowRange& r : f.verdict.ranges)
      verdicts.push_back(Json{{key::rows, {r.first, r.last}},
                              {dump_key::kind, f.padding_source == PaddingSource::none ? "unknown" : r.padding ? "padding" : "real"},
                              {dump_key::verdict, "nonfinite"},
                              {key::fixed, f.fixed && r.padding}});
    side[dump_key::row_verdicts] = verdicts;
  }
  side[dump_key::note] = kDumpNote;
  return side;
}

Json origins_json(const lineage::Summary& o, const KernelName& kernel_name) {
  Json roots = Json::array();
  for (const lineage::RootSummary& r : o.roots) roots.push_back(root_json(r, kernel_name));
  return Json{{origins_key::roots, roots},          {origins_key::roots_not_listed, o.roots_not_listed},
              {origins_key::introduced, o.introduced}, {origins_key::propagated, o.propagated},
              {origins_key::host, o.host},            {rows_key::unknown, o.unknown},
              {origins_key::candidate, o.candidate},  {origins_key::preexisting, o.preexisting},
              {origins_key::leaks, o.leaks},          {origins_key::evictions, o.evictions}};
}

Json summary_event(const SummaryFigures& f, const std::optional<Json>& origins) {
  Json s;
  s[key::launches] = f.launches;
  s[key::scans] = f.scans;
  s[key::findings] = f.findings;
  s[key::kernels_inspected] = f.kernels_inspected;
  s[key::kernels_not_inspected] = f.kernels_not_inspected;
  s[key::scans_dropped] = f.scans_dropped;
  s[key::graph_scans_overlapped] = f.scans_overlapped;
  s[key::graph_scans_merged] = f.scans_merged;
  s[key::graph_edges_programmatic] = f.edges_programmatic;
  s[key::eager_scans_batched] = f.eager_batched;
  s[key::eager_batch_launches] = f.eager_batches;
  s[key::overflow] = f.overflow;
  s[key::corrupt_records] = f.corrupt;
  s[key::rescans_unchanged] = f.unchanged;
  s[key::python_line_captures] = f.python_captures;
  s[key::python_line_ns] = f.python_ns;
  s[key::counts] = {{counts_key::nan, f.nan}, {counts_key::pos_inf, f.pos_inf}, {counts_key::neg_inf, f.neg_inf}};
  s[key::duration_ns] = f.duration_ns;
  if (origins) s[key::origins] = *origins;
  return s;
}

std::string summary_line(const SummaryFigures& f) {
  return fmt::format("summary: {} launches, {} scans, {} findings ({} NaN, {} +Inf, {} -Inf), {} kernels "
                     "inspected, {} not inspected, {} scans dropped",
                     f.launches, f.scans, f.findings, f.nan, f.pos_inf, f.neg_inf, f.kernels_inspected,
                     f.kernels_not_inspected, f.scans_dropped);
}

void add_verdict_totals(Json& summary, const lineage::Summary& origins) {
  summary[key::faults] = origins.faults;
  summary[key::infinities] = {{schema::infinities_key::intended, origins.inf_intended},
                              {schema::infinities_key::arithmetic, origins.inf_arithmetic}};
}

namespace {

std::string cause_line(const lineage::RootSummary& r, bool first, const KernelName& kernel_name) {
  std::string line = fmt::format("{} cause: {} {} (event {}, launch {}{}) in {}", first ? "first" : "also",
                                 lineage::origin_name(r.origin), short_name(kernel_name(r.site.kernel_id)),
                                 r.event_id, r.site.launch_id,
                                 graph_where(r.site.captured, r.site.graph_id, r.site.graph_node, r.site.replay),
                                 hex(r.buffer.ptr));
  if (r.inf != lineage::InfKind::none) line += fmt::format(" ({} infinity)", lineage::inf_kind_name(r.inf));
  if (!r.intended_from.empty())
    line += fmt::format("; made NaN from the intended infinities of event{} {}", r.intended_from.size() > 1 ? "s" : "",
                        fmt::join(r.intended_from, ", "));
  if (r.first_leak)
    line += fmt::format("; leaked into real rows at {} (event {})", short_name(kernel_name(r.first_leak->site.kernel_id)),
                        r.first_leak->event_id);
  line += fmt::format("; reached {} kernel(s), {} buffer(s)", r.kernels.size(), r.buffers.size());
  return line;
}

}  // namespace

std::vector<std::string> cause_lines(const lineage::Summary& origins, const KernelName& kernel_name, bool inf_faults) {
  std::vector<std::string> lines;
  // NaN-first: the roots a NaN names as its cause; every root when every infinity is a fault.
  for (const lineage::RootSummary& r : origins.roots) {
    if (lines.size() == 5) break;
    if (r.nan_cause || inf_faults) lines.push_back(cause_line(r, lines.empty(), kernel_name));
  }
  const uint64_t infinities = origins.inf_intended + origins.inf_arithmetic;
  if (infinities && !inf_faults)
    lines.push_back(fmt::format("{} infinity-only finding(s) are not faults ({} intended, {} arithmetic); "
                                "NANSCOPE_INF=fault counts them",
                                infinities, origins.inf_intended, origins.inf_arithmetic));
  return lines;
}

}  // namespace nanscope

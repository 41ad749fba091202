// The nanscope/1 log schema (docs/log-schema.md) as data, shared by the writer (the engine,
// event_log.cpp, lineage.cpp) and the reader (`nanscope report`, src/report/parse.cpp): event
// names, JSON keys, the enum strings, and which keys each event carries. A key spelled here is
// spelled once; tests/unit/test_log_schema.cpp fails when the writer's key lists and the
// parser's known keys drift apart, in either direction.
//
// Names are char arrays, so they serve as `const char*` (nlohmann keys, C-style returns) and
// as std::string_view (the parser's tables) alike. No dependencies: the parser includes it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "nanscope/version.h"

namespace nanscope::schema {

inline constexpr char kVersion[] = NANSCOPE_LOG_SCHEMA;  // the `schema` field's value

namespace event {
inline constexpr char start[] = "start";
inline constexpr char nonfinite[] = "nonfinite";
inline constexpr char repeat[] = "repeat";
inline constexpr char not_inspected[] = "not_inspected";
inline constexpr char warning[] = "warning";
inline constexpr char abort[] = "abort";
inline constexpr char summary[] = "summary";
inline constexpr char escalation[] = "escalation";  // the sentinel tier's window (docs/sentinel.md)
}  // namespace event

// Top-level keys of the events (one namespace: several events share a key, e.g. `kernel`).
namespace key {
// every event (EventLog::emit_with_id)
inline constexpr char schema[] = "schema";
inline constexpr char event[] = "event";
inline constexpr char id[] = "id";
inline constexpr char ts_ns[] = "ts_ns";
inline constexpr char pid[] = "pid";
inline constexpr char rank[] = "rank";
inline constexpr char local_rank[] = "local_rank";
inline constexpr char world_size[] = "world_size";
// start
inline constexpr char version[] = "version";
inline constexpr char attach[] = "attach";
inline constexpr char config[] = "config";
inline constexpr char config_errors[] = "config_errors";
inline constexpr char argv0[] = "argv0";
inline constexpr char cupti[] = "cupti";  // {path, origin, source}: the CUPTI that was loaded
// nonfinite (and not_inspected, abort)
inline constexpr char device[] = "device";
inline constexpr char stream[] = "stream";
inline constexpr char kernel[] = "kernel";
inline constexpr char kernel_mangled[] = "kernel_mangled";
inline constexpr char launch_id[] = "launch_id";
inline constexpr char correlation_id[] = "correlation_id";
inline constexpr char buffer[] = "buffer";
inline constexpr char counts[] = "counts";
inline constexpr char first_index[] = "first_index";
inline constexpr char last_index[] = "last_index";
inline constexpr char graph_id[] = "graph_id";
inline constexpr char graph_node[] = "graph_node";
inline constexpr char replay[] = "replay";
inline constexpr char region[] = "region";
inline constexpr char counts_padding[] = "counts_padding";
inline constexpr char counts_real[] = "counts_real";
inline constexpr char rows[] = "rows";
inline constexpr char rows_total[] = "rows_total";
inline constexpr char watch[] = "watch";
inline constexpr char padding_source[] = "padding_source";
inline constexpr char rows_inferred[] = "rows_inferred";
inline constexpr char action[] = "action";
inline constexpr char origin[] = "origin";
inline constexpr char origin_why[] = "origin_why";
inline constexpr char phase[] = "phase";      // escalation: escalation_phase_str
inline constexpr char window[] = "window";    // escalation: replays run with every scan
inline constexpr char finding[] = "finding";  // escalation: the sentinel's nonfinite event id
inline constexpr char parents[] = "parents";
inline constexpr char root[] = "root";
inline constexpr char origin_incomplete[] = "origin_incomplete";
inline constexpr char leak[] = "leak";
inline constexpr char rows_before[] = "rows_before";
inline constexpr char rows_after[] = "rows_after";
inline constexpr char candidates[] = "candidates";  // origin candidate: kCandidateKeys objects
inline constexpr char python[] = "python";          // python_key object, or null
inline constexpr char dump[] = "dump";
inline constexpr char collective[] = "collective";  // kCollectiveKeys object: an NCCL call's buffer
// NaN-first verdicts (docs/origin.md#nan-first-verdicts)
inline constexpr char inf[] = "inf";                    // inf_str, on findings with no NaN: intended or arithmetic
inline constexpr char fault[] = "fault";                // true on an infinity under NANSCOPE_INF=fault
inline constexpr char cause[] = "cause";                // event ids: the finding's first cause(s), NaN-first
inline constexpr char intended_from[] = "intended_from";  // event ids: intended infinities its inputs held
inline constexpr char spread[] = "spread";              // kSpreadKeys object: confined NaN became (nearly) all
inline constexpr char last_writer[] = "last_writer";    // origin preexisting: kLastWriterKeys object
// repeat
inline constexpr char of[] = "of";
inline constexpr char count[] = "count";
inline constexpr char total[] = "total";
inline constexpr char first_replay[] = "first_replay";
inline constexpr char last_replay[] = "last_replay";
inline constexpr char final_[] = "final";
// not_inspected, warning, abort
inline constexpr char reason[] = "reason";
inline constexpr char message[] = "message";
inline constexpr char what[] = "what";
// summary
inline constexpr char launches[] = "launches";
inline constexpr char scans[] = "scans";
inline constexpr char findings[] = "findings";
inline constexpr char kernels_inspected[] = "kernels_inspected";
inline constexpr char kernels_not_inspected[] = "kernels_not_inspected";
inline constexpr char scans_dropped[] = "scans_dropped";
inline constexpr char graph_scans_overlapped[] = "graph_scans_overlapped";
inline constexpr char graph_scans_merged[] = "graph_scans_merged";
inline constexpr char graph_edges_programmatic[] = "graph_edges_programmatic";
inline constexpr char eager_scans_batched[] = "eager_scans_batched";
inline constexpr char eager_batch_launches[] = "eager_batch_launches";
inline constexpr char python_line_captures[] = "python_line_captures";
inline constexpr char python_line_ns[] = "python_line_ns";
inline constexpr char overflow[] = "overflow";
inline constexpr char corrupt_records[] = "corrupt_records";
inline constexpr char rescans_unchanged[] = "rescans_unchanged";
inline constexpr char duration_ns[] = "duration_ns";
inline constexpr char origins[] = "origins";
inline constexpr char faults[] = "faults";            // findings that are faults (NaN; infinities under NANSCOPE_INF=fault)
inline constexpr char infinities[] = "infinities";    // kInfinitiesKeys object: infinity-only findings by kind
inline constexpr char coverage[] = "coverage";              // Coverage::to_json (src/coverage.cpp)
inline constexpr char tensor_extents[] = "tensor_extents";  // where typed and Triton extents came from
// Read from older logs only; no writer emits it (a fixed finding says action: zeroed).
inline constexpr char fixed[] = "fixed";
}  // namespace key

// Keys of the nested objects.
namespace config_key {  // start.config: the settings in effect (src/config.hpp)
inline constexpr char mode[] = "mode";
inline constexpr char log[] = "log";
inline constexpr char level[] = "level";
inline constexpr char kernel_filter[] = "kernel_filter";
inline constexpr char kernel_exclude[] = "kernel_exclude";
inline constexpr char channel_records[] = "channel_records";
inline constexpr char max_captured_scans[] = "max_captured_scans";
inline constexpr char poll_us[] = "poll_us";
inline constexpr char max_scan_bytes[] = "max_scan_bytes";
inline constexpr char max_whole_alloc_bytes[] = "max_whole_alloc_bytes";
inline constexpr char typed[] = "typed";
inline constexpr char origin[] = "origin";
inline constexpr char aggregate[] = "aggregate";
inline constexpr char eager_batch[] = "eager_batch";
inline constexpr char rules[] = "rules";
inline constexpr char tier[] = "tier";
inline constexpr char escalate[] = "escalate";
}  // namespace config_key
namespace cupti_key {  // start.cupti: the CUPTI that was loaded
inline constexpr char path[] = "path";
inline constexpr char origin[] = "origin";
inline constexpr char source[] = "source";
}  // namespace cupti_key
namespace tensor_extents_key {  // summary.tensor_extents
inline constexpr char torch[] = "torch";
inline constexpr char torch_version[] = "torch_version";
inline constexpr char reason[] = "reason";
inline constexpr char blocks_live[] = "blocks_live";
inline constexpr char blocks_seen[] = "blocks_seen";
inline constexpr char blocks_dropped[] = "blocks_dropped";
inline constexpr char opaque_buffers[] = "opaque_buffers";
}  // namespace tensor_extents_key
namespace coverage_key {  // summary.coverage (src/coverage.cpp)
inline constexpr char launches[] = "launches";
inline constexpr char by_inspection[] = "by_inspection";
inline constexpr char inspected_share[] = "inspected_share";
inline constexpr char bytes_written_decoded[] = "bytes_written_decoded";
inline constexpr char bytes_written_decoded_scanned[] = "bytes_written_decoded_scanned";
inline constexpr char bytes_scanned[] = "bytes_scanned";
inline constexpr char kernels_not_inspected[] = "kernels_not_inspected";
inline constexpr char not_inspected_top[] = "not_inspected_top";
inline constexpr char library_top[] = "library_top";
inline constexpr char library_calls[] = "library_calls";
inline constexpr char not_inspected_uncounted_launches[] = "not_inspected_uncounted_launches";
inline constexpr char graph_replays_sentinel_only[] = "graph_replays_sentinel_only";  // NANSCOPE_TIER=sentinel
inline constexpr char graph_replays_every_scan[] = "graph_replays_every_scan";
inline constexpr char kernel[] = "kernel";  // a row of not_inspected_top and library_top
inline constexpr char reason[] = "reason";
}  // namespace coverage_key
namespace library_calls_key {  // summary.coverage.library_calls
inline constexpr char calls[] = "calls";
inline constexpr char scanned[] = "scanned";
inline constexpr char not_scanned[] = "not_scanned";
inline constexpr char api[] = "api";  // a row of not_scanned: api, reason, calls
inline constexpr char reason[] = "reason";
}  // namespace library_calls_key
namespace warning_what {  // warning.what of the warnings said where they arise (NS_ONCE_WARNINGS: once)
inline constexpr char cupti_load[] = "cupti_load";
inline constexpr char cupti_subscribe[] = "cupti_subscribe";
inline constexpr char rules[] = "rules";
inline constexpr char rule[] = "rule";
inline constexpr char xla_dumps[] = "xla_dumps";  // a dump directory or file that could not be read
inline constexpr char xla_no_dumps[] = "xla_no_dumps";  // XLA runs, no dumps are read: the variable to set
}  // namespace warning_what
namespace buffer_key {  // nonfinite.buffer
inline constexpr char arg[] = "arg";
inline constexpr char ptr[] = "ptr";
inline constexpr char dtype[] = "dtype";
inline constexpr char elements[] = "elements";
inline constexpr char name[] = "name";
}  // namespace buffer_key
namespace counts_key {  // nonfinite.counts, summary.counts
inline constexpr char nan[] = "nan";
inline constexpr char pos_inf[] = "pos_inf";
inline constexpr char neg_inf[] = "neg_inf";
}  // namespace counts_key
namespace rows_key {  // nonfinite.rows, rows_before, rows_after; origins roots' rows
inline constexpr char padding[] = "padding";
inline constexpr char real[] = "real";
inline constexpr char unknown[] = "unknown";  // rows, only when a watch without a spec has some
inline constexpr char truncated[] = "truncated";
}  // namespace rows_key
namespace collective_key {  // nonfinite.collective (docs/multi-gpu.md)
inline constexpr char op[] = "op";                  // collective_op_str
inline constexpr char comm[] = "comm";              // 16 hex digits: hash of the ncclUniqueId
inline constexpr char seq[] = "seq";                // per communicator (per peer for send/recv)
inline constexpr char rank[] = "rank";              // rank in the communicator
inline constexpr char nranks[] = "nranks";
inline constexpr char peers[] = "peers";            // ranks whose data reached the buffer / it goes to
inline constexpr char send_state[] = "send_state";  // send_state_str: this rank's sendbuff before the call
inline constexpr char role[] = "role";              // role_str: the buffer scanned
}  // namespace collective_key
namespace spread_key {  // nonfinite.spread: shares of elements that were non-finite
inline constexpr char before[] = "before";  // the largest share among the parents' buffers
inline constexpr char after[] = "after";    // this finding's share of its own buffer
}  // namespace spread_key
namespace last_writer_key {  // nonfinite.last_writer (origin preexisting)
inline constexpr char event[] = "event";    // the finding that left the buffer non-finite
// also: kernel, launch_id, python (key::)
}  // namespace last_writer_key
namespace infinities_key {  // summary.infinities
inline constexpr char intended[] = "intended";
inline constexpr char arithmetic[] = "arithmetic";
}  // namespace infinities_key
namespace python_key {  // nonfinite.python, candidates[i].python: where the kernel was launched from
inline constexpr char file[] = "file";
inline constexpr char line[] = "line";
inline constexpr char function[] = "function";
inline constexpr char generated[] = "generated";  // {file, line} of generated code, when file:line was mapped from it
inline constexpr char op[] = "op";  // the framework's op (XLA's op_name), when it says it
}  // namespace python_key
namespace origins_key {  // summary.origins
inline constexpr char roots[] = "roots";
inline constexpr char roots_not_listed[] = "roots_not_listed";
inline constexpr char introduced[] = "introduced";
inline constexpr char propagated[] = "propagated";
inline constexpr char host[] = "host";
inline constexpr char unknown[] = "unknown";
inline constexpr char candidate[] = "candidate";
inline constexpr char preexisting[] = "preexisting";
inline constexpr char leaks[] = "leaks";
inline constexpr char evictions[] = "evictions";
}  // namespace origins_key
namespace root_key {  // summary.origins.roots[i] and its first_leak
inline constexpr char event[] = "event";
inline constexpr char kernels_reached[] = "kernels_reached";
inline constexpr char buffers_reached[] = "buffers_reached";
inline constexpr char last_event[] = "last_event";
inline constexpr char first_leak[] = "first_leak";
// also: kernel, origin, origin_why, launch_id, stream, graph_id, graph_node, replay, buffer
// (a pointer string here), rows, findings, leaks, rows_before, rows_after (key::, origins_key::)
}  // namespace root_key

// The JSON sidecar of a tensor dump (`dump` of a nonfinite event, path + ".json"), read by
// `nanscope report --dump` (src/report/dump.cpp). Also: pid, kernel, buffer, counts,
// padding_source (key::), dtype (buffer_key::).
inline constexpr char kDumpVersion[] = "nanscope-dump/1";
namespace dump_key {
inline constexpr char event_id[] = "event_id";
inline constexpr char storage[] = "storage";          // the .npy descr
inline constexpr char shape[] = "shape";
inline constexpr char row_verdicts[] = "row_verdicts";
inline constexpr char note[] = "note";
// members of each row_verdicts entry
inline constexpr char rows[] = "rows";        // [lo, hi]
inline constexpr char row[] = "row";          // one row: older sidecars (reader only)
inline constexpr char kind[] = "kind";        // region_str: padding, real, unknown
inline constexpr char verdict[] = "verdict";  // verdict_nonfinite
inline constexpr char fixed[] = "fixed";
}  // namespace dump_key
inline constexpr char verdict_nonfinite[] = "nonfinite";

// ---- enum strings ------------------------------------------------------------------------

// A finding's first cause (docs/origin.md). `none` is the reader's "not recorded"; the writer
// never writes it.
// `candidate`: the values may have been written by a launch nanscope could not see into (the
// finding's `candidates`); nanscope did not prove it.
// `preexisting`: no input was non-finite, and the buffer already held non-finite values from an
// earlier finding at another site (`last_writer`): the launch may not have written them.
enum class Origin : uint8_t { none, introduced, propagated, host, unknown, candidate, preexisting };
// Where a finding's non-finite values lie. `none`: not recorded (reader only).
enum class Region : uint8_t { none, padding, real, mixed, unknown };

namespace origin_str {
inline constexpr char introduced[] = "introduced";
inline constexpr char propagated[] = "propagated";
inline constexpr char host[] = "host";
inline constexpr char unknown[] = "unknown";
inline constexpr char candidate[] = "candidate";
inline constexpr char preexisting[] = "preexisting";
}  // namespace origin_str
namespace inf_str {  // nonfinite.inf: what an infinity-only finding's infinities are
inline constexpr char intended[] = "intended";      // a constant +-inf written on purpose (a mask), or carried from one
inline constexpr char arithmetic[] = "arithmetic";  // made from finite values (overflow, log(0), x/0), or carried from one
}  // namespace inf_str
namespace origin_why_str {  // origin_why, for origin unknown (and one propagated case)
inline constexpr char untracked_read[] = "untracked_read";
inline constexpr char state_lost[] = "state_lost";
inline constexpr char unwritten[] = "unwritten";  // read before any write nanscope saw
// origin propagated: through a launch nanscope could not see into (its `candidates`), whose
// pointer words hit buffers the parents had left non-finite
inline constexpr char through_candidate[] = "through_candidate";
// a graph replay that ran only the sentinel tier's scans: nothing upstream was scanned
inline constexpr char sentinel[] = "sentinel";
inline constexpr char none[] = "none";  // lineage's Unknown::none; not written (origin is known)
}  // namespace origin_why_str
namespace escalation_phase_str {  // escalation.phase
inline constexpr char escalate[] = "escalate";            // a sentinel fired: the next `window` replays run every scan
inline constexpr char localized[] = "localized";          // it recurred in the window: its lineage is logged
inline constexpr char did_not_recur[] = "did_not_recur";  // the window was clean: first cause unknown
inline constexpr char incomplete[] = "incomplete";        // at exit, the window had not drained
}  // namespace escalation_phase_str
namespace region_str {
inline constexpr char padding[] = "padding";
inline constexpr char real[] = "real";
inline constexpr char mixed[] = "mixed";
inline constexpr char unknown[] = "unknown";
}  // namespace region_str
namespace collective_op_str {  // collective.op
inline constexpr char all_reduce[] = "all_reduce";
inline constexpr char reduce_scatter[] = "reduce_scatter";
inline constexpr char all_gather[] = "all_gather";
inline constexpr char broadcast[] = "broadcast";
inline constexpr char reduce[] = "reduce";
inline constexpr char send[] = "send";
inline constexpr char recv[] = "recv";
}  // namespace collective_op_str
namespace send_state_str {  // collective.send_state
inline constexpr char finite[] = "finite";
inline constexpr char nonfinite[] = "nonfinite";
inline constexpr char unknown[] = "unknown";
}  // namespace send_state_str
namespace role_str {  // collective.role: the buffer scanned was the call's recvbuff, or a send-only sendbuff
inline constexpr char recv[] = "recv";
inline constexpr char send[] = "send";
}  // namespace role_str
namespace action_str {
inline constexpr char zeroed[] = "zeroed";  // the padding rows were zeroed after the scan
}
namespace attach_str {  // start.attach
inline constexpr char injection[] = "injection";
inline constexpr char preload[] = "preload";
inline constexpr char linked[] = "linked";
}  // namespace attach_str
// buffer.dtype and padding_source strings are the names of the lists in scan_abi.h
// (NANSCOPE_SCAN_DTYPES, NANSCOPE_PADDING_SOURCES): dtype_name(), padding_source_name().

// The log's string of an origin / region; "" for none.
constexpr const char* origin_name(Origin o) {
  switch (o) {
    case Origin::introduced: return origin_str::introduced;
    case Origin::propagated: return origin_str::propagated;
    case Origin::host: return origin_str::host;
    case Origin::unknown: return origin_str::unknown;
    case Origin::candidate: return origin_str::candidate;
    case Origin::preexisting: return origin_str::preexisting;
    case Origin::none: break;
  }
  return "";
}
constexpr const char* region_name(Region r) {
  switch (r) {
    case Region::padding: return region_str::padding;
    case Region::real: return region_str::real;
    case Region::mixed: return region_str::mixed;
    case Region::unknown: return region_str::unknown;
    case Region::none: break;
  }
  return "";
}
// The reader's inverse: a string it does not know is `unknown` (a newer writer's value).
constexpr Origin origin_from(std::string_view s) {
  for (Origin o : {Origin::introduced, Origin::propagated, Origin::host, Origin::candidate, Origin::preexisting})
    if (s == origin_name(o)) return o;
  return Origin::unknown;
}
constexpr Region region_from(std::string_view s) {
  for (Region r : {Region::padding, Region::real, Region::mixed})
    if (s == region_name(r)) return r;
  return Region::unknown;
}

// ---- the keys of each event, as the writer emits them ------------------------------------

using Keys = std::span<const std::string_view>;

inline constexpr std::string_view kCommonKeys[] = {key::schema, key::event,      key::id,        key::ts_ns,
                                                   key::pid,    key::rank,       key::local_rank, key::world_size};
inline constexpr std::string_view kStartKeys[] = {key::version, key::attach, key::config, key::config_errors,
                                                  key::argv0,   key::cupti};
inline constexpr std::string_view kNonfiniteKeys[] = {
    key::device,         key::stream,      key::kernel,      key::kernel_mangled,    key::launch_id,
    key::correlation_id, key::buffer,      key::counts,      key::first_index,       key::last_index,
    key::graph_id,       key::graph_node,  key::replay,      key::region,            key::counts_padding,
    key::counts_real,    key::rows,        key::rows_total,  key::watch,             key::padding_source,
    key::rows_inferred,  key::action,      key::origin,      key::origin_why,        key::parents,
    key::root,           key::origin_incomplete, key::leak,  key::rows_before,       key::rows_after,
    key::candidates,     key::python,      key::dump,        key::collective,        key::inf,
    key::fault,          key::cause,       key::intended_from, key::spread,          key::last_writer};
inline constexpr std::string_view kRepeatKeys[] = {key::of,          key::count,          key::total,
                                                   key::first_replay, key::last_replay,    key::final_,
                                                   key::counts,       key::counts_padding, key::counts_real,
                                                   key::kernel,       key::buffer,         key::region,
                                                   key::rows};
// `buffer` ({arg, ptr}) only when an argument was refused: extent unknown (allocator pool).
inline constexpr std::string_view kNotInspectedKeys[] = {key::kernel, key::kernel_mangled, key::reason, key::buffer};
inline constexpr std::string_view kWarningKeys[] = {key::what, key::message};
// `finding` only for phase escalate.
inline constexpr std::string_view kEscalationKeys[] = {key::graph_id, key::phase, key::replay, key::window, key::finding};

// warning.what of the warnings said once per process (hooks/counters.hpp: warn_once), one row
// each: the registry of what was said is indexed by this enum (EventLog::first_time).
#define NS_ONCE_WARNINGS(X)                                                                          \
  X(callback) X(captured_scans) X(channel_overflow) X(context_setup) X(cudnn_graph) X(cudnn_store)   \
  X(decoded_extent) X(dump_budget) X(dump_copy) X(dump_write) X(graph_conditional) X(graph_merge)   \
  X(graph_overlap)                                                                                   \
  X(graph_overlap_stale) X(graph_pdl) X(graph_tier) X(graph_update) X(nccl_comm_unseen)             \
  X(python_line) X(scan_buffers) X(scan_launch) X(torch_blocks)
#define NS_ONCE_ID_(name) name,
enum class Once : uint8_t { NS_ONCE_WARNINGS(NS_ONCE_ID_) count };
#undef NS_ONCE_ID_
#define NS_ONCE_NAME_(name) #name,
inline constexpr const char* kOnceNames[] = {NS_ONCE_WARNINGS(NS_ONCE_NAME_)};
#undef NS_ONCE_NAME_
inline constexpr const char* once_name(Once w) { return kOnceNames[static_cast<size_t>(w)]; }
inline constexpr std::string_view kAbortKeys[] = {key::reason, key::launch_id, key::watch};
inline constexpr std::string_view kSummaryKeys[] = {
    key::launches,          key::scans,   key::findings,    key::kernels_inspected, key::kernels_not_inspected,
    key::scans_dropped,     key::graph_scans_overlapped,    key::graph_scans_merged, key::graph_edges_programmatic,
    key::eager_scans_batched,
    key::eager_batch_launches, key::overflow,
    key::corrupt_records,   key::rescans_unchanged,         key::python_line_captures, key::python_line_ns,
    key::counts,            key::duration_ns,
    key::origins,           key::coverage,                  key::tensor_extents,
    key::faults,            key::infinities};

struct EventSpec {
  std::string_view name;
  Keys keys;  // besides kCommonKeys
};
inline constexpr EventSpec kEvents[] = {
    {event::start, kStartKeys},          {event::nonfinite, kNonfiniteKeys}, {event::repeat, kRepeatKeys},
    {event::not_inspected, kNotInspectedKeys}, {event::warning, kWarningKeys}, {event::abort, kAbortKeys},
    {event::summary, kSummaryKeys},      {event::escalation, kEscalationKeys},
};

// Nested objects the reader decodes member by member: the object's key, and its members.
inline constexpr std::string_view kBufferKeys[] = {buffer_key::arg, buffer_key::ptr, buffer_key::dtype,
                                                   buffer_key::elements, buffer_key::name};
inline constexpr std::string_view kCountsKeys[] = {counts_key::nan, counts_key::pos_inf, counts_key::neg_inf};
inline constexpr std::string_view kRowsKeys[] = {rows_key::padding, rows_key::real, rows_key::unknown,
                                                 rows_key::truncated};
struct ObjectSpec {
  std::string_view key;  // a top-level key whose value is this object
  Keys keys;
};
inline constexpr ObjectSpec kObjects[] = {{key::buffer, kBufferKeys}, {key::counts, kCountsKeys}, {key::rows, kRowsKeys}};

// summary.origins (Engine::origins_json): the reader skips it whole.
inline constexpr std::string_view kOriginsKeys[] = {origins_key::roots,      origins_key::roots_not_listed,
                                                    origins_key::introduced, origins_key::propagated,
                                                    origins_key::host,       origins_key::unknown,
                                                    origins_key::candidate,  origins_key::preexisting,
                                                    origins_key::leaks,
                                                    origins_key::evictions};
inline constexpr std::string_view kRootKeys[] = {
    root_key::event, key::kernel,     key::origin,     key::origin_why,         key::launch_id,
    key::stream,     key::graph_id,   key::graph_node, key::replay,             key::buffer,
    key::rows,       key::findings,   origins_key::leaks, root_key::kernels_reached, root_key::buffers_reached,
    root_key::last_event, root_key::first_leak, key::candidates};
inline constexpr std::string_view kSpreadKeys[] = {spread_key::before, spread_key::after};
inline constexpr std::string_view kLastWriterKeys[] = {last_writer_key::event, key::kernel, key::launch_id, key::python};
inline constexpr std::string_view kInfinitiesKeys[] = {infinities_key::intended, infinities_key::arithmetic};
// nonfinite.candidates[i] and the python object (the reader keeps both as JSON text).
inline constexpr std::string_view kCandidateKeys[] = {key::kernel, key::launch_id, key::stream, key::python};
// nonfinite.collective.
inline constexpr std::string_view kCollectiveKeys[] = {
    collective_key::op,     collective_key::comm,  collective_key::seq,        collective_key::rank,
    collective_key::nranks, collective_key::peers, collective_key::send_state, collective_key::role};
inline constexpr std::string_view kPythonKeys[] = {python_key::file, python_key::line, python_key::function,
                                                   python_key::generated, python_key::op};
inline constexpr std::string_view kFirstLeakKeys[] = {root_key::event, key::kernel,      key::launch_id,
                                                      key::buffer,     key::rows_before, key::rows_after};

// Keys the reader still accepts from older logs that no writer emits.
inline constexpr std::string_view kLegacyKeys[] = {key::fixed};

// Whether the writer's list for `event` (or the common header) names `k`.
constexpr bool writer_emits(std::string_view event, std::string_view k) {
  for (std::string_view c : kCommonKeys)
    if (c == k) return true;
  for (const EventSpec& e : kEvents)
    if (e.name == event)
      for (std::string_view x : e.keys)
        if (x == k) return true;
  return false;
}

}  // namespace nanscope::schema

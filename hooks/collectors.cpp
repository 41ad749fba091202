#include "collectors.hpp"

#include <algorithm>
#include <cstring>

namespace nanscope {

void RulesCollector::collect(TaskDraft& draft) {
  const KernelInfo& k = draft.kernel;
  for (uint32_t ri : k.rules) {
    const Rule& rule = watches_.rules()[ri];
    const ParamReader read = [&](uint32_t param, uint32_t offset, void* out, size_t bytes) {
      const char* base = draft.param(param);
      if (!base || offset + bytes > k.params[param].second) return false;
      std::memcpy(out, base + offset, bytes);
      return true;
    };
    std::string error;
    if (auto w = resolve(rule, read, &error)) draft.add_rows(*w, kRuleWatchBit | ri, rule.output.ptr.param);
    else watches_.warn_rule(ri, error);
  }
}

void WatchesCollector::collect(TaskDraft& draft) {
  const KernelInfo& k = draft.kernel;
  if (!watches_.any() || !k.params_known) return;
  auto snapshot = watches_.snapshot();
  for (uint32_t i = 0; i < k.params.size(); ++i) {
    const ParamRole param_role = i < k.roles.size() ? k.roles[i] : ParamRole::other;
    const char* bytes = draft.param(i);
    if (!bytes) continue;
    for (uint32_t off = 0; off + 8 <= k.params[i].second; off += 8) {
      uint64_t v = 0;
      std::memcpy(&v, bytes + off, sizeof(v));
      if (!v) continue;
      // In PyTorch's std::array<char*, N> only the first pointer is the output.
      const ParamRole role =
          static_cast<int32_t>(i) == k.output_first_array ? (off == 0 ? ParamRole::output : ParamRole::input) : param_role;
      // A pointer to const (`float const*`, `void const*`) is read, not written: the buffer
      // cannot have changed.
      const bool may_write = role == ParamRole::output || k.may_write_through(i, off);
      WatchRegistry::for_each_containing(*snapshot, v, [&](const WatchEntry& e) {
        if (role != ParamRole::output) draft.add_watched_input(e.spec);
        if (may_write) draft.add_rows(e.spec, e.id, i, false, role != ParamRole::output);
      });
    }
  }
  draft.keep(std::move(snapshot));
}

namespace {

// A plain output of `elements` values at `ptr` (`arg`: its parameter, with NS_INTENT_* bits above);
// rows come from the global padding spec when
// its row count divides the elements evenly (then only reported, never fixed).
void add_output(TaskDraft& draft, const Watches& watches, uint64_t ptr, uint64_t elements, DType dtype, uint32_t arg) {
  if (elements == 0 || draft.full()) return;
  const auto global = watches.global_padding();
  if (global && global->rows && elements % global->rows == 0) {
    WatchSpec w;
    w.ptr = ptr;
    w.dtype = dtype;
    w.rows = global->rows;
    w.row_elements = elements / global->rows;
    w.padding = *global;
    draft.add_rows(w, kGlobalWatchBit | NS_BUFFER_ARG(arg), arg, /*inferred=*/true);
    return;
  }
  draft.add_plain(ptr, elements, dtype, arg, elements * dtype_size(dtype));
}

}  // namespace

std::vector<std::unique_ptr<TaskCollector>> task_collectors(const Config& cfg, Watches& watches, Allocations& allocs) {
  std::vector<std::unique_ptr<TaskCollector>> collectors;
  collectors.push_back(std::make_unique<RulesCollector>(watches));
  collectors.push_back(std::make_unique<WatchesCollector>(watches));
  // Exact writes before the typed outputs, which then skip what they cover.
  collectors.push_back(std::make_unique<DecodedWritesCollector>(cfg, watches, allocs));
  collectors.push_back(std::make_unique<TypedOutputsCollector>(cfg, watches, allocs));
  return collectors;
}

void DecodedWritesCollector::collect(TaskDraft& draft) {
  const KernelInfo& k = draft.kernel;
  if (k.decoder == Decoder::none || !cfg_.typed) return;
  const std::optional<decode::Decoded>& decoded = draft.launch.decoded(allocs_);
  if (!decoded) {
    draft.inspection = Inspection::mismatch;
    draft.refused = "more parameters than a decoded launch reads";
    return;
  }
  const decode::Decoded& out = *decoded;
  if (out.status == decode::Status::layout_mismatch) {
    draft.inspection = Inspection::mismatch;
    draft.refused = out.reason;
    return;
  }
  for (uint32_t i = 0; i < out.read_count; ++i) draft.add_read(out.reads[i], out.read_dtypes[i], out.read_elements[i]);
  // An integer output (no_nan) is exact for the graph planner (decoded_io), with nothing to scan.
  for (uint32_t i = 0; i < out.write_count; ++i)
    if (!out.writes[i].no_nan) add_write(draft, out.writes[i]);
}

void DecodedWritesCollector::add_write(TaskDraft& draft, const decode::Write& w) {
  DType dtype = w.dtype;
  if (dtype == DType::none && w.dtype_from) {  // a copy: the type of what it copies from, if judged
    const auto src = draft.context.slots().containing(w.dtype_from);
    // Not a type an earlier tensor at that address had (the allocator reuses addresses).
    if (src && allocs_.type_holds(*src) && (w.elem_size == 0 || dtype_size(src->dtype) == w.elem_size))
      dtype = src->dtype;
  }
  uint64_t span = w.span_bytes, elements = w.elements;
  if (w.extent_from_block) {
    const ScanBytes block = allocs_.scan_extent(w.ptr);
    if (block.pool && dtype != DType::none && !draft.covered(w.ptr)) {
      draft.refuse_pool(w.arg, w.ptr);
      return;
    }
    span = block.bytes;
    elements = dtype == DType::none ? 0 : span / dtype_size(dtype);
  } else if (w.elem_size == 0 && dtype != DType::none) {
    elements = span / dtype_size(dtype);
  }
  draft.written_bytes += span;
  // Only dense extents of a known type: never a neighbour's bytes, never a guessed type.
  if (dtype == DType::none || elements == 0 || elements * dtype_size(dtype) != span || draft.covered(w.ptr)) return;
  if (cfg_.max_scan_bytes) elements = std::min<uint64_t>(elements, cfg_.max_scan_bytes / dtype_size(dtype));
  if (!allocs_.holds(w.ptr, elements * dtype_size(dtype))) {  // a decoder's extent past the allocation
    draft.refused_extent = true;
    return;
  }
  static_assert(decode::kIntendNegInf == NS_INTENT_NEG_INF && decode::kIntendPosInf == NS_INTENT_POS_INF);
  if (cfg_.origin) allocs_.note_intended(w.ptr, w.intended_inf);
  add_output(draft, watches_, w.ptr, elements, dtype, NS_BUFFER_ARG_WITH_INTENT(w.arg, w.intended_inf));
}

void TypedOutputsCollector::collect(TaskDraft& draft) {
  if (!cfg_.typed) return;  // NANSCOPE_TYPED=0: watches and rules only
  for (const OutputParam& out : draft.kernel.outputs) {
    const char* param = draft.param(out.arg);
    if (!param) continue;
    uint64_t ptr = 0;
    std::memcpy(&ptr, param, sizeof(ptr));
    if (ptr == 0 || draft.covered(ptr)) continue;
    const ScanBytes extent = allocs_.scan_extent(ptr);
    if (extent.pool) draft.refuse_pool(out.arg, ptr);  // not truncated either: it would still read neighbours
    // Not device memory we can scan (host pointer, freed, foreign, unknown extent), or a pool.
    if (!extent.bytes) continue;
    uint64_t bytes = extent.bytes;
    if (cfg_.max_scan_bytes) bytes = std::min(bytes, cfg_.max_scan_bytes);
    add_output(draft, watches_, ptr, bytes / dtype_size(out.dtype), out.dtype, out.arg);
  }
}

}  // namespace nanscope

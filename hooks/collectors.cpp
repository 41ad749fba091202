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

void TypedOutputsCollector::collect(TaskDraft& draft) {
  if (!cfg_.typed) return;  // NANSCOPE_TYPED=0: watches and rules only
  const auto global = watches_.global_padding();
  for (const OutputParam& out : draft.kernel.outputs) {
    const char* param = draft.param(out.arg);
    if (!param) continue;
    uint64_t ptr = 0;
    std::memcpy(&ptr, param, sizeof(ptr));
    if (ptr == 0 || draft.covered(ptr)) continue;
    const auto range = allocs_.extent(ptr);
    if (!range) continue;  // not device memory we can scan (host pointer, freed, foreign)
    uint64_t bytes = range->base + range->size - ptr;
    if (cfg_.max_scan_bytes) bytes = std::min(bytes, cfg_.max_scan_bytes);
    const uint64_t elements = bytes / dtype_size(out.dtype);
    if (elements == 0 || draft.full()) continue;
    if (global && global->rows && elements % global->rows == 0) {
      // Rows inferred from the global spec: only when the element count divides evenly.
      WatchSpec w;
      w.ptr = ptr;
      w.dtype = out.dtype;
      w.rows = global->rows;
      w.row_elements = elements / global->rows;
      w.padding = *global;
      draft.add_rows(w, kGlobalWatchBit | out.arg, out.arg, /*inferred=*/true);
      continue;
    }
    draft.add_plain(ptr, elements, out.dtype, out.arg, bytes);
  }
}

}  // namespace nanscope

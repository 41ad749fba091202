// See xla.hpp.
#include "decode/xla.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "tensor_maps.hpp"

namespace nanscope::decode {

namespace {

std::string_view refusal_reason(xla::Refusal r) {
  switch (r) {
    case xla::Refusal::no_thunk: return "xla: no kernel thunk of its dump modules takes these parameter words, grid and block";
    case xla::Refusal::unknown_shape: return "xla: an argument's HLO shape is not known";
    case xla::Refusal::thunks_disagree: return "xla: the kernel thunks sharing this kernel write or read different arguments";
    case xla::Refusal::none: break;
  }
  return "xla: refused";
}

Write slice_write(const xla::LaunchWrite& w) {
  Write out;
  out.ptr = w.ptr;
  out.dtype = w.shape.dtype;
  out.elem_size = static_cast<uint32_t>(dtype_size(w.shape.dtype));
  out.elements = w.shape.elements();
  out.span_bytes = out.elements * out.elem_size;
  out.arg = w.arg;
  out.intended_inf = w.intended_inf;
  return out;
}


// A tensor map parameter's memory, as its encoding was given (tensor_maps.hpp); 0 bytes: unknown.
struct MapReach {
  uint32_t param = 0;
  uint64_t bytes = 0;
};

// Every tensor map reaches no further than its argument's slice: otherwise the map is not the
// argument the dump describes (a stale entry, another kernel's map), and nothing is scanned.
std::string_view maps_fit(std::span<const MapReach> maps, const xla::LaunchWrites& found) {
  for (const MapReach& m : maps) {
    uint64_t slice = 0;
    for (const auto* list : {&found.writes, &found.reads, &found.no_nan_writes})
      for (const xla::LaunchWrite& w : *list)
        if (w.arg == m.param) slice = w.bytes;
    if (!slice || m.bytes > slice) return "xla: a tensor map parameter reaches past its argument's slice";
  }
  return {};
}

// The launch's thunks and what they write (xla::launch_writes), or a static reason the launch
// cannot be looked up at all. Every parameter is an 8-byte pointer (kernel_arguments.cc), or a
// 128-byte TMA descriptor nanscope saw encoded, which stands for its global address (a Triton
// GEMM with TMA): a layout of any other size is not the kernel the dump describes.
std::string_view lookup(std::span<const std::shared_ptr<const xla::DumpModule>> modules, std::string_view function,
                        const Layout& layout, const LaunchView& launch, xla::LaunchWrites& found) {
  if (modules.empty() || modules.size() > xla::kMaxModulesPerFunction)
    return "xla: no dump module, or more than a launch looks through";
  if (launch.count != layout.size()) return "xla: the launch's parameter count is not the layout's";
  std::vector<uint64_t> words(layout.size(), 0);
  std::vector<MapReach> maps;
  for (uint32_t i = 0; i < layout.size(); ++i) {
    if (layout[i].second != 8 && layout[i].second != kTensorMapBytes) return "xla: a parameter is not an 8-byte pointer";
    if (!launch.params[i]) return "xla: a parameter's bytes could not be read";
    if (layout[i].second == 8) {
      std::memcpy(&words[i], launch.params[i], 8);
      continue;
    }
    const auto map = launch.tensor_maps ? launch.tensor_maps->find(reinterpret_cast<const uint8_t*>(launch.params[i]))
                                        : std::nullopt;
    if (!map) return "xla: a 128-byte parameter (a TMA descriptor) nanscope did not see encoded";
    if (!map->footprint_bytes()) return "xla: a TMA descriptor of an element type or shape nanscope does not know";
    words[i] = map->global_address;
    maps.push_back({i, map->footprint_bytes()});
  }
  std::array<const xla::DumpModule*, xla::kMaxModulesPerFunction> among{};
  for (size_t i = 0; i < modules.size(); ++i) among[i] = modules[i].get();
  xla::LaunchShape shape;
  std::copy(launch.grid, launch.grid + 3, shape.grid.begin());
  std::copy(launch.block, launch.block + 3, shape.block.begin());
  found = xla::launch_writes(std::span<const xla::DumpModule* const>(among.data(), modules.size()), function, words, &shape);
  if (found.refusal != xla::Refusal::none) return {};
  return maps_fit(maps, found);
}

}  // namespace

std::string xla_refusal(std::span<const std::shared_ptr<const xla::DumpModule>> modules, std::string_view function,
                        const Layout& layout, const LaunchView& launch) {
  xla::LaunchWrites found;
  const std::string_view early = lookup(modules, function, layout, launch, found);
  if (early.empty()) return found.refused;
  std::string detail(early);
  // Which parameter, and the whole layout: a Triton GEMM with TMA takes 128-byte tensor maps.
  for (uint32_t i = 0; i < layout.size(); ++i)
    if (layout[i].second != 8) {
      std::string sizes;
      for (uint32_t j = 0; j < layout.size() && j < 16; ++j) sizes += (j ? ", " : "") + std::to_string(layout[j].second);
      if (layout.size() > 16) sizes += ", ...";
      detail += fmt::format(" (parameter {} is {} bytes; the {} parameters' sizes: {})", i, layout[i].second, layout.size(), sizes);
      break;
    }
  return detail;
}

Decoded decode_xla(std::span<const std::shared_ptr<const xla::DumpModule>> modules, std::string_view function,
                   const Layout& layout, const LaunchView& launch) {
  xla::LaunchWrites found;
  if (const std::string_view early = lookup(modules, function, layout, launch, found); !early.empty())
    return Decoded::mismatch(early);
  if (found.refusal != xla::Refusal::none) return Decoded::mismatch(refusal_reason(found.refusal));
  // More than a launch record holds: an output or an input would go unseen, and a finding would
  // claim an origin its missing inputs could contradict.
  if (found.writes.size() + found.no_nan_writes.size() > kMaxWrites)
    return Decoded::mismatch("xla: more floating-point outputs than a launch record holds");
  const auto no_nan_reads = static_cast<uint64_t>(std::count_if(
      found.reads.begin(), found.reads.end(), [](const xla::LaunchWrite& r) { return r.shape.dtype == DType::none; }));
  if (found.reads.size() - no_nan_reads > kMaxReads || no_nan_reads > kMaxReads)
    return Decoded::mismatch("xla: more floating-point operands than a launch record holds");
  Decoded d;
  d.source = found.source;
  d.source_op_agreed = found.source_op_agreed;
  for (const xla::LaunchWrite& w : found.writes)
    if (w.shape.elements()) d.add_write(slice_write(w));
  for (const xla::LaunchWrite& w : found.no_nan_writes) {
    Write exact;
    exact.ptr = w.ptr;
    exact.span_bytes = w.bytes;
    exact.arg = w.arg;
    exact.no_nan = true;
    d.add_write(exact);
  }
  for (const xla::LaunchWrite& r : found.reads)
    if (r.shape.dtype == DType::none) d.add_no_nan_read(r.ptr);
    else d.add_read(r.ptr, r.shape.dtype, r.shape.elements());
  return d;
}

}  // namespace nanscope::decode

// A launch's kernel-family decode (launch_record.hpp): what src/decode says it writes and reads.
#include <algorithm>

#include "contexts.hpp"
#include "coverage.hpp"
#include "decode/xla.hpp"
#include "kernel_table.hpp"
#include "launch_record.hpp"

namespace nanscope {

namespace {

constexpr uint32_t kMaxDecodedParams = 128;

bool is_live(const void* allocs, uint64_t ptr) { return static_cast<const Allocations*>(allocs)->is_device(ptr); }

// The launch as the decoders see it; `params` (kMaxDecodedParams long) holds its parameters' bytes.
decode::LaunchView launch_view(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs, const char** params) {
  for (uint32_t i = 0; i < k.params.size(); ++i) params[i] = param_bytes(a, k.params, i);
  decode::LaunchView view;
  view.params = params;
  view.count = static_cast<uint32_t>(k.params.size());
  std::copy(a.grid, a.grid + 3, view.grid);
  std::copy(a.block, a.block + 3, view.block);
  view.tensor_maps = &allocs.tensor_maps();
  return view;
}

}  // namespace

std::optional<decode::Decoded> decode_launch(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs) {
  if (k.decoder == Decoder::none || k.params.size() > kMaxDecodedParams) return std::nullopt;
  const char* params[kMaxDecodedParams];
  const decode::LaunchView view = launch_view(k, a, allocs, params);
  switch (k.decoder) {
    case Decoder::triton: return decode::decode_triton(*k.triton, k.params, view);
    case Decoder::xla: return decode::decode_xla(k.xla, k.mangled, k.params, view);
    default: return decode::decode_aten(k.aten, view, decode::AddressQuery{is_live, &allocs});
  }
}

std::string refusal_detail(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs, std::string_view reason) {
  if (k.decoder != Decoder::xla || k.params.size() > kMaxDecodedParams) return std::string(reason);
  const char* params[kMaxDecodedParams];
  const std::string detail = decode::xla_refusal(k.xla, k.mangled, k.params, launch_view(k, a, allocs, params));
  return detail.empty() ? std::string(reason) : std::string(reason) + " (" + detail + ")";
}

std::string list_refusal(Coverage& coverage, const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs,
                         std::string_view reason) {
  if (coverage.refusal_listed(k.id)) return {};
  std::string why = refusal_detail(k, a, allocs, reason);
  coverage.on_refused_launch(k.id, k.demangled, why);
  return why;
}

bool decoded_io(const std::optional<decode::Decoded>& decoded, std::vector<overlap::KnownWrite>& exact,
                std::vector<uint64_t>& inputs) {
  if (!decoded || decoded->status != decode::Status::decoded) return false;
  overlap::add_decoded_io(*decoded, exact, inputs);
  return true;
}

bool decoded_io(const KernelInfo& k, const LaunchArgs& a, const Allocations& allocs,
                std::vector<overlap::KnownWrite>& exact, std::vector<uint64_t>& inputs) {
  return decoded_io(decode_launch(k, a, allocs), exact, inputs);
}

const std::optional<decode::Decoded>& LaunchRecord::decoded(const Allocations& allocs) {
  if (!decoded_once_ && kernel) {
    decoded_ = decode_launch(*kernel, args, allocs);
    decoded_once_ = true;
  }
  return decoded_;
}

}  // namespace nanscope

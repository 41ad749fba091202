// XLA's GPU kernels (issue 38, docs/jax.md): what one launch writes and reads, from the dump
// module its CUmodule matched (xla_kernels.hpp). XLA passes each argument as a plain pointer to
// its slice, so the dtype and extent come from the HLO shape of the kernel thunk the launch fits;
// a launch that fits none, or fits thunks that disagree, is a layout mismatch with its reason.
#pragma once
#include <string_view>

#include "decode/written.hpp"
#include "xla_kernels.hpp"

namespace nanscope::decode {

Decoded decode_xla(const xla::DumpModule& module, std::string_view function, const Layout& layout,
                   const LaunchView& launch);

}  // namespace nanscope::decode

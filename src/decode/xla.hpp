// XLA's GPU kernels (issue 38, docs/jax.md): what one launch writes and reads, from the dump
// modules its CUmodule may be (xla_kernels.hpp). XLA passes each argument as a plain pointer to
// its slice, so the dtype and extent come from the HLO shape of the kernel thunk the launch fits;
// a launch that fits none, or fits thunks that disagree, is a layout mismatch with its reason.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "decode/written.hpp"
#include "xla_kernels.hpp"

namespace nanscope::decode {

// `modules`: every dump module the launch's CUfunction may be (at most
// xla::kMaxModulesPerFunction); the launch's grid and block pick among their thunks.
Decoded decode_xla(std::span<const std::shared_ptr<const xla::DumpModule>> modules, std::string_view function,
                   const Layout& layout, const LaunchView& launch);
// Why decode_xla refuses this launch, in full (the thunks, the words' count, the grid): its
// not_inspected reason says only the kind, this is said once per kernel.
std::string xla_refusal(std::span<const std::shared_ptr<const xla::DumpModule>> modules, std::string_view function,
                        const Layout& layout, const LaunchView& launch);

}  // namespace nanscope::decode

// XLA_FLAGS and the dumps nanscope reads (issue 38, docs/jax.md): XLA parses XLA_FLAGS once per
// process, so the dump flags must be there before the program starts (the launcher sets them);
// an injected library only learns from them where the dumps are. Pure string functions.
#pragma once
#include <string>
#include <string_view>

namespace nanscope::xla {

// The directory `--xla_dump_to=DIR` names in XLA_FLAGS (the last one given), or empty.
std::string dump_dir_in_flags(std::string_view flags);

struct FlagsWithDumps {
  std::string flags;     // XLA_FLAGS for the program
  std::string dump_dir;  // where XLA will write its dumps
  bool users_dir = false;  // the user's own --xla_dump_to was kept
  // Set when the user's flags turn text HLO off (--xla_dump_hlo_as_text=false): kept as given,
  // so XLA kernels stay not inspected, and the launcher says why.
  std::string conflict;
};
// The user's flags kept as they are; `--xla_dump_to=dir` added when they name no dump directory
// (theirs is read instead), and `--xla_dump_hlo_as_text` when they do not set it.
FlagsWithDumps flags_with_dumps(std::string_view flags, const std::string& dir);

// NANSCOPE_XLA_DUMP's value for "read no XLA dumps" (the launcher's --no-xla-dumps), even where
// XLA_FLAGS names a dump directory.
inline constexpr std::string_view kDumpsOff = "off";

// Whether a loaded object is a runtime that launches XLA's kernels on the GPU, by its path:
// jaxlib's CUDA plugin (jax_plugins/xla_cuda*/xla_cuda_plugin.so), the xla_extension.so of older
// jaxlib wheels, TensorFlow's framework library (XLA under jit_compile).
bool is_xla_runtime(std::string_view object_path);
// The path of the first loaded object is_xla_runtime accepts (dl_iterate_phdr), or empty.
// `loads_seen`: the loader's count of loads at the previous call, updated; when nothing was
// loaded since, the objects are not listed again and the answer is empty.
std::string loaded_xla_runtime(unsigned long long& loads_seen);

// Said of an untyped kernel (which may be XLA's, or not) in a process where `runtime` (an object
// is_xla_runtime accepted) runs and nanscope reads no dumps: in its not_inspected reason, and
// once as a warning. `off`: the user turned the dumps off (kDumpsOff); otherwise it names the one
// variable to set, which XLA reads once, at its start.
std::string no_dumps_reason(std::string_view runtime, bool off);

}  // namespace nanscope::xla

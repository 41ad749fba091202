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

}  // namespace nanscope::xla

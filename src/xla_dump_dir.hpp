// The modules of an XLA dump directory (--xla_dump_to, issue 38, docs/jax.md): which files make
// one module, and reading the complete ones. XLA writes a module's files while it compiles it,
// one file at a time, so a module is read only once all four are there, and a module read once is
// not read again (the caller passes the names it has).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "xla_kernels.hpp"

namespace nanscope::xla {

// One module's files, by name inside the directory. `thunk_sequence` is
// thunk_sequence_after_thunk_passes.txt when XLA wrote it (the plan that runs: kernels nested in
// command buffers), else thunk_sequence.txt.
struct DumpFiles {
  std::string module;  // "module_5968.jit_step"
  std::string thunk_sequence, thunk_metadata, hlo, buffer_assignment;
  bool complete() const { return !thunk_sequence.empty() && !thunk_metadata.empty() && !hlo.empty() && !buffer_assignment.empty(); }
};
// Groups file names into modules (pure: names only; other files are ignored). The optimized HLO
// is `MODULE.sm_<arch>_gpu_after_optimizations.txt`, its buffer assignment the same with
// `-buffer-assignment`; earlier passes' HLO (before_optimizations) is not read.
std::vector<DumpFiles> group_dump_files(const std::vector<std::string>& names);

// The module XLA is optimizing as the files tell, or empty: XLA writes
// `MODULE.before_optimizations.txt` when a compile starts and `MODULE.<platform>_after_optimizations.txt`
// when its pass pipeline ends; its autotuners run in between (measured on the H200, session 24:
// the transformer step's 127 candidate modules were launched between those two files). A module
// counts only when its number (module_NNNN, XLA's unique id, given in creation order) is above
// every module that finished: a compile that failed, which never writes the second file, is
// closed by the next one to finish. Of several, the newest.
std::string module_being_optimized(const std::vector<std::string>& names);

struct DumpDirRead {
  std::vector<DumpModule> modules;  // the complete modules not in `known`, read
  std::vector<std::string> errors;  // the directory or a file that could not be read, named
  // Some module's file is there: XLA began compiling. Not the directory alone, which the launcher
  // makes for any program (a PyTorch one's untyped kernels must not wait for XLA's dumps).
  bool compiling_began = false;
  std::string optimizing;           // module_being_optimized of its files
};
// Reads the complete modules of `dir` whose names are not in `known`; a directory that does not
// exist yet holds none (XLA makes it at its first dump). A file larger than
// `max_file_bytes` is an error naming it, and its module is not read (bounded memory).
DumpDirRead read_dump_dir(const std::string& dir, const std::set<std::string>& known, uint64_t max_file_bytes);

}  // namespace nanscope::xla

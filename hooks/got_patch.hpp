// Redirects calls that other loaded libraries make to a named function (cublasLtMatmul, ...)
// to a wrapper of ours, by rewriting their GOT slots (R_X86_64_JUMP_SLOT and
// R_X86_64_GLOB_DAT relocations). One mechanism for every attach mode: under
// CUDA_INJECTION64_PATH libnanscope arrives after libtorch has bound its imports, so symbol
// interposition would not take, and the version script hides our wrappers anyway.
// x86-64 ELF (glibc) only; elsewhere patch_all() patches nothing. Never throws.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nanscope::got {

// One function to intercept. `original` receives the function the importers called before
// (their bound slot, or the symbol looked up in the library their version needs); the
// wrapper calls through it. One original per hook: a slot bound elsewhere is left alone.
struct Hook {
  const char* name;               // the imported symbol, e.g. "cublasGemmEx"
  void* wrapper;                  // what the patched slots call
  std::atomic<void*>* original;   // written before the first slot is patched
};

struct Options {
  // Objects whose file name contains one of these are never patched: the providers calling
  // each other (libcublas calls cublasLtMatmul) would otherwise report one GEMM twice.
  std::vector<std::string> skip_names = {"libcublas.so", "libcublasLt.so", "libnanscope"};
  bool force = false;  // walk even when no object was loaded since the last walk
};

struct Report {
  uint32_t objects = 0;      // objects walked (0 when nothing new was loaded)
  uint32_t patched = 0;      // slots rewritten by this call
  uint32_t already = 0;      // slots that already held our wrapper
  uint32_t other_target = 0; // slots bound to a different function than the hook's original
  uint32_t unresolved = 0;   // slots whose original could not be found (left alone)
  uint32_t failed = 0;       // slots whose page could not be made writable
  bool walked = false;
};

// Patches every importing slot of every loaded object (except ourselves and skip_names).
// Idempotent and cheap when nothing changed: it compares glibc's count of loads (dlpi_adds)
// with the last walk's and returns at once (~0.1 us, one dl_iterate_phdr step). Call it at
// init and again whenever a new library may have arrived (a module load, the first launch
// from a new library). Serialised internally; safe from any thread.
Report patch_all(const Hook* hooks, std::size_t count, const Options& options = {});

// The hook of that name in a table, or nullptr (tests set originals and call wrappers by name).
const Hook* find_hook(const Hook* hooks, std::size_t count, const char* name);
// Through find_hook: set the original of the hook of that name (false for an unknown name), or
// get its wrapper (nullptr), as each interceptor's set_original / wrapper do for its table.
bool set_original(const Hook* hooks, std::size_t count, const char* name, void* fn);
void* wrapper_of(const Hook* hooks, std::size_t count, const char* name);

// `symbol` from the loaded library that defines `known` (a hook's original), never loading a
// library: a helper the wrappers need from the same copy of the library (cublasGetStream_v2,
// cudnnGetStream). nullptr when either is not found.
void* sibling_symbol(void* known, const char* symbol);

// Puts back what every slot patched for these hooks held before, in the objects still
// loaded. For tests and teardown; a wrapper already entered keeps running.
uint32_t unpatch_all(const Hook* hooks, std::size_t count);

}  // namespace nanscope::got

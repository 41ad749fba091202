// jaxlib's own XLA plugin against the dlsym hook (hooks/dlsym_intercept.hpp), on the CPU: the
// plugin (xla_cuda_plugin.so from a jax-cuda13-pjrt wheel) reaches cuBLAS, cuBLASLt and cuDNN
// through TSL's trampolines: `_<lib>_tramp_resolve(i)` looks name i up with dlsym through the
// library's handle and stores it in `_<lib>_tramp_table[i]`, which every later call jumps through.
// The test resolves every name of each table, with the dlsym slots patched, and checks the stored
// pointer: the interceptor's wrapper for each function nanscope hooks, the library's own
// function for every other name. Both are local symbols: their addresses come from the plugin's
// ELF symbol table. Needs the wheel (about 130 MB): NANSCOPE_TEST_XLA_PLUGIN=path/to/
// xla_cuda_plugin.so; skipped without it (CI). Device sessions run it on the installed jaxlib
// (tests/gpu/run_suite.sh).
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cudnn_intercept.hpp"
#include "dlsym_intercept.hpp"
#include "gemm_intercept.hpp"

namespace nanscope {
namespace {

struct Symbol {
  std::string name;
  uint64_t value = 0;
  uint64_t size = 0;
};

// The .symtab entries (local ones included, several of one name too) whose names are in `wanted`.
std::vector<Symbol> elf_symbols(const char* path, const std::set<std::string>& wanted) {
  std::vector<Symbol> found;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return found;
  struct stat st {};
  void* map = fstat(fd, &st) == 0 ? mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return found;
  const auto* base = static_cast<const unsigned char*>(map);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (unsigned s = 0; s < eh->e_shnum; ++s) {
    if (sections[s].sh_type != SHT_SYMTAB) continue;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sections[s].sh_offset);
    const char* names = reinterpret_cast<const char*>(base + sections[sections[s].sh_link].sh_offset);
    for (size_t i = 0; i < sections[s].sh_size / sizeof(Elf64_Sym); ++i)
      if (wanted.count(names + syms[i].st_name)) found.push_back({names + syms[i].st_name, syms[i].st_value, syms[i].st_size});
  }
  munmap(map, st.st_size);
  return found;
}

// The rip-relative addresses the first instructions of `code` load (`lea disp32(%rip), reg`).
std::set<uintptr_t> rip_relative_leas(const unsigned char* code, size_t bytes) {
  std::set<uintptr_t> targets;
  for (size_t o = 0; o + 7 <= bytes; ++o) {
    if ((code[o] != 0x48 && code[o] != 0x4c) || code[o + 1] != 0x8d || (code[o + 2] & 0xc7) != 0x05) continue;
    int32_t disp = 0;
    std::memcpy(&disp, code + o + 3, sizeof disp);
    targets.insert(reinterpret_cast<uintptr_t>(code + o + 7) + disp);
  }
  return targets;
}

// One trampoline table of the loaded plugin. Its resolver first loads the table of names: offsets
// from that table itself (clang's relative tables: `reltable._<lib>_tramp_resolve` in jaxlib
// 0.10 and 0.11, an anonymous namespace's `kSymbols.rel` in 0.12) or pointers (`kSymbols`).
struct Trampolines {
  void (*resolve)(int) = nullptr;
  void** table = nullptr;
  const int32_t* offsets = nullptr;
  const char* const* pointers = nullptr;
  int count = 0;
  const char* name(int i) const {
    return offsets ? reinterpret_cast<const char*>(offsets) + offsets[i] : pointers[i];
  }
};

Trampolines trampolines(const char* path, uintptr_t load_base, const std::string& lib) {
  const std::string resolve = "_" + lib + "_tramp_resolve", table = "_" + lib + "_tramp_table",
                    reltable = "reltable." + resolve, symbols = "_ZN12_GLOBAL__N_18kSymbolsE";
  Trampolines t;
  std::vector<Symbol> names;
  for (const Symbol& s : elf_symbols(path, {resolve, table, reltable, symbols, symbols + ".rel"})) {
    if (s.name == resolve) t.resolve = reinterpret_cast<void (*)(int)>(load_base + s.value);
    else if (s.name == table) t.table = reinterpret_cast<void**>(load_base + s.value);
    else names.push_back(s);
  }
  if (!t.resolve || !t.table) return {};
  const std::set<uintptr_t> loaded = rip_relative_leas(reinterpret_cast<const unsigned char*>(t.resolve), 96);
  for (const Symbol& s : names) {
    if (!loaded.count(load_base + s.value)) continue;
    const bool relative = s.name == reltable || s.name.ends_with(".rel");
    if (relative) t.offsets = reinterpret_cast<const int32_t*>(load_base + s.value);
    else t.pointers = reinterpret_cast<const char* const*>(load_base + s.value);
    t.count = s.size / (relative ? sizeof(int32_t) : sizeof(char*));
  }
  return t.offsets || t.pointers ? t : Trampolines{};
}

using WrapperOf = void* (*)(const char*);

// Resolves every name of `lib`'s table; returns how many were hooked names (checked: the wrapper).
int check_table(const char* plugin, uintptr_t load_base, const std::string& lib, void* library, WrapperOf wrapper_of) {
  const Trampolines t = trampolines(plugin, load_base, lib);
  EXPECT_GT(t.count, 0) << "no trampolines of " << lib << " in " << plugin;
  int hooked = 0, resolved = 0;
  for (int i = 0; i < t.count; ++i) {
    const char* name = t.name(i);
    void* real = dlsym(library, name);
    if (!real) continue;  // not in this build of the library: the plugin stores its own error stub
    t.resolve(i);
    void* wrapper = wrapper_of(name);
    EXPECT_EQ(t.table[i], wrapper ? wrapper : real) << lib << ": " << name;
    hooked += wrapper != nullptr;
    ++resolved;
  }
  std::printf("%s: %d names, %d resolved, %d of them hooked (the wrapper)\n", lib.c_str(), t.count, resolved, hooked);
  return hooked;
}

// Another test of this process may have set an original (a fake, another copy): the plugin's
// lookups are each function's first, as in a fresh process.
void forget_originals(const got::Hook* (*table)(std::size_t*)) {
  std::size_t n = 0;
  const got::Hook* hooks = table(&n);
  for (std::size_t i = 0; i < n; ++i) hooks[i].original->store(nullptr);
}

void* open_library(const char* path) { return path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr; }

TEST(XlaPluginLookups, EveryHookedLibraryFunctionTheTrampolinesResolveIsTheWrapper) {
  const char* plugin = std::getenv("NANSCOPE_TEST_XLA_PLUGIN");
  if (!plugin || !*plugin) GTEST_SKIP() << "NANSCOPE_TEST_XLA_PLUGIN (a jaxlib xla_cuda_plugin.so) is not set";
  // The plugin's loader opens each library by soname: an already-loaded one is that library.
  void* lt = open_library(NANSCOPE_CUBLASLT);
  void* cublas = open_library(NANSCOPE_CUBLAS);
  if (!lt || !cublas) GTEST_SKIP() << "libcublasLt / libcublas not loadable";
  void* handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);

  forget_originals(&gemm::hooks);
  forget_originals(&cudnn::hooks);
  gemm::set_helpers(nullptr, nullptr);
  const got::Report r = dlsym_hook::patch_all(true);
  EXPECT_GE(r.patched, 1u);  // the plugin's dlsym slots
  EXPECT_EQ(r.failed, 0u);
  EXPECT_GE(check_table(plugin, map->l_addr, "cublasLt", lt, &gemm::wrapper), 1);  // cublasLtMatmul
  EXPECT_GE(check_table(plugin, map->l_addr, "cublas", cublas, &gemm::wrapper), 1);
#ifdef NANSCOPE_CUDNN_LIBRARY_PATH
  if (void* cudnn = open_library(NANSCOPE_CUDNN_LIBRARY_PATH))
    EXPECT_GE(check_table(plugin, map->l_addr, "cudnn", cudnn, &cudnn::wrapper), 1);  // cudnnBackendExecute
#endif
  std::size_t n = 0;
  const got::Hook* hooks = dlsym_hook::hooks(&n);
  got::unpatch_all(hooks, n);
}

}  // namespace
}  // namespace nanscope

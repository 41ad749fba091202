#include "got_patch.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>
#define NANSCOPE_GOT_PATCH 1
#endif

namespace nanscope::got {

#if NANSCOPE_GOT_PATCH
namespace {

// A loaded object as dl_iterate_phdr shows it. Copied out so the dynamic sections are read
// (and dlopen/dlsym called) after the loader's lock is released.
struct Object {
  std::string name;
  uintptr_t base = 0;
  const ElfW(Phdr)* phdr = nullptr;
  uint16_t phnum = 0;
};

struct Walk {
  std::vector<Object> objects;
  unsigned long long adds = 0;  // glibc's count of objects loaded so far
};

int collect(dl_phdr_info* info, size_t size, void* data) {
  auto* walk = static_cast<Walk*>(data);
  if (walk->objects.empty() && size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
    walk->adds = info->dlpi_adds;
  walk->objects.push_back({info->dlpi_name ? info->dlpi_name : "", info->dlpi_addr, info->dlpi_phdr,
                           info->dlpi_phnum});
  return 0;
}

int first_adds(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
    *static_cast<unsigned long long*>(data) = info->dlpi_adds;
  return 1;  // one object is enough: the counter is global
}

// What an object's dynamic section says about its imports.
struct Dynamic {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* jmprel = nullptr;
  size_t jmprel_size = 0;
  const ElfW(Rela)* rela = nullptr;
  size_t rela_size = 0;
  const ElfW(Half)* versym = nullptr;
  const ElfW(Verneed)* verneed = nullptr;
  uintptr_t relro_begin = 0, relro_end = 0;  // read-only after relocation
  uintptr_t load_begin = UINTPTR_MAX, load_end = 0;  // the object's own mappings
};

// glibc rewrites most d_ptr values to absolute addresses when it loads an object (not the
// vDSO's, nor DT_VERNEED): an offset below the load base is still relative.
uintptr_t absolute(uintptr_t base, uintptr_t ptr) { return ptr < base ? base + ptr : ptr; }

void read_segments(const Object& obj, Dynamic& d, const ElfW(Dyn)** dyn) {
  for (uint16_t i = 0; i < obj.phnum; ++i) {
    const ElfW(Phdr)& ph = obj.phdr[i];
    const uintptr_t begin = obj.base + ph.p_vaddr;
    if (ph.p_type == PT_DYNAMIC) *dyn = reinterpret_cast<const ElfW(Dyn)*>(begin);
    if (ph.p_type == PT_GNU_RELRO) d.relro_begin = begin, d.relro_end = begin + ph.p_memsz;
    if (ph.p_type == PT_LOAD) {
      d.load_begin = std::min<uintptr_t>(d.load_begin, begin);
      d.load_end = std::max<uintptr_t>(d.load_end, begin + ph.p_memsz);
    }
  }
}

bool parse(const Object& obj, Dynamic& d) {
  const ElfW(Dyn)* dyn = nullptr;
  read_segments(obj, d, &dyn);
  if (!dyn) return false;
  const uintptr_t b = obj.base;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    const uintptr_t p = dyn->d_un.d_ptr;
    switch (dyn->d_tag) {
      case DT_SYMTAB: d.symtab = reinterpret_cast<const ElfW(Sym)*>(absolute(b, p)); break;
      case DT_STRTAB: d.strtab = reinterpret_cast<const char*>(absolute(b, p)); break;
      case DT_JMPREL: d.jmprel = reinterpret_cast<const ElfW(Rela)*>(absolute(b, p)); break;
      case DT_PLTRELSZ: d.jmprel_size = dyn->d_un.d_val; break;
      case DT_RELA: d.rela = reinterpret_cast<const ElfW(Rela)*>(absolute(b, p)); break;
      case DT_RELASZ: d.rela_size = dyn->d_un.d_val; break;
      case DT_VERSYM: d.versym = reinterpret_cast<const ElfW(Half)*>(absolute(b, p)); break;
      case DT_VERNEED: d.verneed = reinterpret_cast<const ElfW(Verneed)*>(absolute(b, p)); break;
      default: break;
    }
  }
  return d.symtab && d.strtab;
}

// The file named by the version an import needs ("libcublasLt.so.13" for
// cublasLtMatmul@libcublasLt.so.13), or nullptr when the import is unversioned.
const char* needed_file(const Dynamic& d, uint32_t sym) {
  if (!d.versym || !d.verneed) return nullptr;
  const ElfW(Half) index = d.versym[sym] & 0x7fff;
  if (index < 2) return nullptr;  // local or global: no version
  const auto* need = d.verneed;
  for (;;) {
    const auto* aux = reinterpret_cast<const ElfW(Vernaux)*>(reinterpret_cast<const char*>(need) + need->vn_aux);
    for (ElfW(Half) i = 0; i < need->vn_cnt; ++i) {
      if (aux->vna_other == index) return d.strtab + need->vn_file;
      aux = reinterpret_cast<const ElfW(Vernaux)*>(reinterpret_cast<const char*>(aux) + aux->vna_next);
    }
    if (need->vn_next == 0) return nullptr;
    need = reinterpret_cast<const ElfW(Verneed)*>(reinterpret_cast<const char*>(need) + need->vn_next);
  }
}

// Looks `name` up in the already loaded `file` (never loads it), then in the global scope.
void* lookup(const char* file, const char* name) {
  if (file) {
    if (void* lib = dlopen(file, RTLD_LAZY | RTLD_NOLOAD)) {
      void* fn = dlsym(lib, name);
      dlclose(lib);  // drops the reference RTLD_NOLOAD took
      if (fn) return fn;
    }
  }
  return dlsym(RTLD_DEFAULT, name);
}

// A slot still pointing into its own object is unbound (a lazy PLT stub): look the symbol
// up. Otherwise it holds what the object calls, interposers included: keep exactly that.
void* target_of(const Dynamic& d, void* current, const char* file, const char* name) {
  const auto cur = reinterpret_cast<uintptr_t>(current);
  if (cur != 0 && (cur < d.load_begin || cur >= d.load_end)) return current;
  return lookup(file, name);
}

// mprotect's protection for the page holding `slot` after the write: RELRO pages go back
// to read-only, pages of a writable segment need no change. The read-only pages are the ones
// glibc's _dl_protect_relro made so: both ends rounded down to a page, so a last partial page
// stays writable and must not be made read-only by us.
bool needs_unprotect(const Object& obj, const Dynamic& d, uintptr_t slot, int* restore) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t ro_begin = d.relro_begin & ~(page - 1), ro_end = d.relro_end & ~(page - 1);
  if (slot >= ro_begin && slot < ro_end) return *restore = PROT_READ, true;
  for (uint16_t i = 0; i < obj.phnum; ++i) {
    const ElfW(Phdr)& ph = obj.phdr[i];
    const uintptr_t begin = obj.base + ph.p_vaddr;
    if (ph.p_type != PT_LOAD || slot < begin || slot >= begin + ph.p_memsz) continue;
    if (ph.p_flags & PF_W) return false;
    *restore = ((ph.p_flags & PF_R) ? PROT_READ : 0) | ((ph.p_flags & PF_X) ? PROT_EXEC : 0);
    return true;
  }
  return false;
}

bool write_slot(const Object& obj, const Dynamic& d, void** slot, void* value) {
  const auto addr = reinterpret_cast<uintptr_t>(slot);
  int restore = 0;
  const bool unprotect = needs_unprotect(obj, d, addr, &restore);
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(addr & ~(page_size - 1));
  if (unprotect && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);  // an aligned 8-byte store: callers see old or new
  if (unprotect) mprotect(page, page_size, restore);
  return true;
}

struct Import {
  void** slot;
  const char* name;
  uint32_t sym;
};

// Calls fn for every JUMP_SLOT / GLOB_DAT relocation against an undefined (imported) symbol.
template <class Fn>
void for_each_import(const Object& obj, const Dynamic& d, Fn&& fn) {
  const std::pair<const ElfW(Rela)*, size_t> tables[] = {{d.jmprel, d.jmprel_size}, {d.rela, d.rela_size}};
  for (const auto& [table, bytes] : tables) {
    if (!table) continue;
    for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela)& r = table[i];
      const uint32_t type = ELF64_R_TYPE(r.r_info), sym = ELF64_R_SYM(r.r_info);
      if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || sym == 0) continue;
      if (d.symtab[sym].st_shndx != SHN_UNDEF) continue;
      fn(Import{reinterpret_cast<void**>(obj.base + r.r_offset), d.strtab + d.symtab[sym].st_name, sym});
    }
  }
}

struct State {
  std::mutex mu;
  std::vector<std::pair<const Hook*, unsigned long long>> last_adds;  // per hook table
  std::unordered_map<void**, void*> saved;  // patched slot -> what it held before
};
State& state() {
  static State* s = new State;  // never destroyed: wrappers may run during exit
  return *s;
}

bool is_own(const Dynamic& d) {
  const auto self = reinterpret_cast<uintptr_t>(&is_own);
  return self >= d.load_begin && self < d.load_end;
}

bool skipped(const Object& obj, const Options& options) {
  if (obj.name.find("linux-vdso") != std::string::npos) return true;
  for (const std::string& s : options.skip_names)
    if (!s.empty() && obj.name.find(s) != std::string::npos) return true;
  return false;
}

using Index = std::unordered_map<std::string_view, const Hook*>;

void patch_one(const Object& obj, const Dynamic& d, const Import& imp, const Hook& hook, Report& r) {
  void* current = __atomic_load_n(imp.slot, __ATOMIC_ACQUIRE);
  if (current == hook.wrapper) return void(++r.already);
  void* target = target_of(d, current, needed_file(d, imp.sym), imp.name);
  if (!target || target == hook.wrapper) return void(++r.unresolved);
  void* expected = nullptr;  // the first target found becomes the hook's one original
  if (!hook.original->compare_exchange_strong(expected, target) && expected != target)
    return void(++r.other_target);
  if (!write_slot(obj, d, imp.slot, hook.wrapper)) return void(++r.failed);
  state().saved.emplace(imp.slot, current);
  ++r.patched;
}

void patch_object(const Object& obj, const Index& index, Report& r) {
  Dynamic d;
  if (!parse(obj, d) || is_own(d)) return;
  ++r.objects;
  for_each_import(obj, d, [&](const Import& imp) {
    const auto it = index.find(imp.name);
    if (it != index.end()) patch_one(obj, d, imp, *it->second, r);
  });
}

// Whether anything was loaded since the last walk for this hook table; records the count.
bool nothing_new(const Hook* hooks, unsigned long long adds, bool force) {
  auto& seen = state().last_adds;
  auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == hooks; });
  const bool same = it != seen.end() && it->second == adds && adds != 0;
  if (it == seen.end()) seen.emplace_back(hooks, adds);
  else it->second = adds;
  return same && !force;
}

Index make_index(const Hook* hooks, std::size_t count) {
  Index index;
  for (std::size_t i = 0; i < count; ++i)
    if (hooks[i].name && hooks[i].wrapper && hooks[i].original) index.emplace(hooks[i].name, &hooks[i]);
  return index;
}

}  // namespace

Report patch_all(const Hook* hooks, std::size_t count, const Options& options) {
  Report r;
  std::lock_guard<std::mutex> lock(state().mu);
  unsigned long long adds = 0;
  dl_iterate_phdr(first_adds, &adds);
  if (nothing_new(hooks, adds, options.force)) return r;
  Walk walk;
  dl_iterate_phdr(collect, &walk);
  const Index index = make_index(hooks, count);
  for (const Object& obj : walk.objects)
    if (!skipped(obj, options)) patch_object(obj, index, r);
  r.walked = true;
  return r;
}

uint32_t unpatch_all(const Hook* hooks, std::size_t count) {
  std::lock_guard<std::mutex> lock(state().mu);
  Walk walk;
  dl_iterate_phdr(collect, &walk);
  const Index index = make_index(hooks, count);
  uint32_t restored = 0;
  for (const Object& obj : walk.objects) {
    Dynamic d;
    if (!parse(obj, d)) continue;
    for_each_import(obj, d, [&](const Import& imp) {
      const auto it = index.find(imp.name);
      if (it == index.end() || __atomic_load_n(imp.slot, __ATOMIC_ACQUIRE) != it->second->wrapper) return;
      auto saved = state().saved.find(imp.slot);
      void* back = saved != state().saved.end() ? saved->second : it->second->original->load();
      if (write_slot(obj, d, imp.slot, back)) ++restored;
      if (saved != state().saved.end()) state().saved.erase(saved);
    });
  }
  auto& seen = state().last_adds;  // the next patch_all walks again
  seen.erase(std::remove_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == hooks; }), seen.end());
  return restored;
}

void* sibling_symbol(void* known, const char* symbol) {
  Dl_info info{};
  if (!known || dladdr(known, &info) == 0 || !info.dli_fname) return nullptr;
  void* lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return nullptr;
  void* fn = dlsym(lib, symbol);
  dlclose(lib);
  return fn;
}

#else  // not x86-64 Linux: nothing is patched, the wrappers are never entered

Report patch_all(const Hook*, std::size_t, const Options&) { return {}; }
void* sibling_symbol(void*, const char*) { return nullptr; }
uint32_t unpatch_all(const Hook*, std::size_t) { return 0; }

#endif

const Hook* find_hook(const Hook* hooks, std::size_t count, const char* name) {
  for (std::size_t i = 0; i < count; ++i)
    if (hooks[i].name && name && std::strcmp(hooks[i].name, name) == 0) return &hooks[i];
  return nullptr;
}

bool set_original(const Hook* hooks, std::size_t count, const char* name, void* fn) {
  const Hook* h = find_hook(hooks, count, name);
  if (h) h->original->store(fn);
  return h != nullptr;
}

void* wrapper_of(const Hook* hooks, std::size_t count, const char* name) {
  const Hook* h = find_hook(hooks, count, name);
  return h ? h->wrapper : nullptr;
}

}  // namespace nanscope::got

// See dlsym_intercept.hpp.
#include "dlsym_intercept.hpp"

#include <atomic>
#include <string_view>

#include "cudnn_intercept.hpp"
#include "gemm_intercept.hpp"
#include "nccl_intercept.hpp"

// What the patched slots held (glibc's dlsym) and the C++ half of the wrapper. C names, hidden:
// the entry stub below refers to them by name, and libnanscope exports neither.
extern "C" {
__attribute__((visibility("hidden"))) std::atomic<void*> ns_dlsym_original{nullptr};
__attribute__((visibility("hidden"))) void* ns_dlsym_explicit(void* handle, const char* name);
__attribute__((visibility("hidden"))) void* ns_dlsym_entry(void* handle, const char* name);
}
static_assert(sizeof(std::atomic<void*>) == sizeof(void*) && std::atomic<void*>::is_always_lock_free,
              "the entry stub reads ns_dlsym_original as a plain pointer");

#if defined(__x86_64__) && defined(__linux__)
// The patched slots' target. RTLD_DEFAULT (0) and RTLD_NEXT (-1) lookups jump on to glibc's dlsym
// with the program's return address untouched (a call from C++ would make libnanscope the caller
// glibc resolves them for); a lookup through a handle goes to ns_dlsym_explicit, whose result does
// not depend on the caller. endbr64 is a no-op where indirect-branch tracking is off.
__attribute__((naked)) void* ns_dlsym_entry(void*, const char*) {
  __asm__(
      "endbr64\n\t"
      "test %rdi, %rdi\n\t"
      "je 1f\n\t"
      "cmp $-1, %rdi\n\t"
      "je 1f\n\t"
      "jmp ns_dlsym_explicit\n"
      "1:\n\t"
      "jmp *ns_dlsym_original(%rip)\n\t");
}
#else
void* ns_dlsym_entry(void* handle, const char* name) { return ns_dlsym_explicit(handle, name); }
#endif

namespace nanscope::dlsym_hook {

namespace {

using DlsymFn = void* (*)(void*, const char*);

// Every library interceptor, asked in this order.
constexpr Adopt kAdopters[] = {&gemm::adopt, &cudnn::adopt, &nccl::adopt};

const got::Hook kHooks[] = {{"dlsym", reinterpret_cast<void*>(&ns_dlsym_entry), &ns_dlsym_original}};

bool may_be_hooked(std::string_view name) {
  return name.starts_with("cublas") || name.starts_with("cudnn") || name.starts_with("nccl");
}

}  // namespace

void* adopted(std::span<const Adopt> adopters, const char* name, void* fn) {
  if (!fn || !name || !may_be_hooked(name)) return fn;
  for (Adopt adopt : adopters)
    if (void* wrapper = adopt(name, fn)) return wrapper;
  return fn;
}

const got::Hook* hooks(std::size_t* count) {
  if (count) *count = std::size(kHooks);
  return kHooks;
}

// The intercepted libraries (libcudnn.so.9's shim looks its sub-libraries' functions up: one call,
// one report) and NVIDIA's runtime libraries, which look up no library function by name that
// nanscope hooks: their pages are left as they are.
got::Report patch_all(bool force) {
  return got::patch_all(kHooks, std::size(kHooks),
                        got::Options{{"libnanscope", "libcublas", "libcudnn", "libnccl", "libcuda.so", "libcudart",
                                      "libcupti", "libnvidia-", "libnvrtc", "libnvJitLink"},
                                     force});
}

}  // namespace nanscope::dlsym_hook

// No allocation and no lock of ours, but once per hooked function: its first adoption looks the
// helpers beside it up (got::Library::adopt). Any thread may look anything up at any time.
void* ns_dlsym_explicit(void* handle, const char* name) {
  const auto real = reinterpret_cast<nanscope::dlsym_hook::DlsymFn>(ns_dlsym_original.load(std::memory_order_acquire));
  if (!real) return nullptr;  // never: the slots are patched after the original is known
  return nanscope::dlsym_hook::adopted(nanscope::dlsym_hook::kAdopters, name, real(handle, name));
}

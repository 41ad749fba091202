// A library that looks functions up at run time, as jaxlib's XLA plugin reaches cuBLASLt: its
// `dlsym` import is what nanscope patches (hooks/dlsym_intercept.hpp). It defines ns_probe too,
// as does the library it links (dlsym_probe.cpp): dlsym(RTLD_NEXT, "ns_probe") from here finds
// that one only when glibc takes this library for the caller.
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) int ns_probe() { return 1; }
extern "C" int ns_probe_next();  // dlsym_probe.cpp: links the two

// Not a tail call: glibc would then take this library's caller for the caller.
extern "C" __attribute__((visibility("default"), optimize("no-optimize-sibling-calls"))) void* dlsym_caller_lookup(
    void* handle, const char* name) {
  return dlsym(handle, name);
}
extern "C" __attribute__((visibility("default"))) int dlsym_caller_linked() { return ns_probe_next(); }

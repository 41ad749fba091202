// Entry points: CUDA_INJECTION64_PATH (InitializeInjection), LD_PRELOAD (a constructor that
// defers to the driver's injection hook), and the linked C API. All funnel into Engine::init.
#include <dlfcn.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "abi_struct.hpp"
#include "engine.hpp"
#include "nanscope/nanscope.h"

using nanscope::Engine;

namespace {

bool g_preloaded = false;

// Signal handlers flush the log, then hand the signal to whatever handler the app had.
constexpr int kFatalSignals[] = {SIGABRT, SIGSEGV, SIGTERM};
struct sigaction g_previous[sizeof(kFatalSignals) / sizeof(int)];

void on_fatal_signal(int sig, siginfo_t* info, void* uctx) {
  size_t i = 0;
  while (kFatalSignals[i] != sig) ++i;
  if (Engine* e = Engine::instance()) e->emergency_flush();
  const struct sigaction& prev = g_previous[i];
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
    prev.sa_sigaction(sig, info, uctx);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler != SIG_DFL) {
    prev.sa_handler(sig);
    return;
  }
  // Default action: restore it and re-raise (a SIGSEGV re-faults on return).
  sigaction(sig, &prev, nullptr);
  if (sig != SIGSEGV) raise(sig);
}

void install_exit_hooks() {
  std::atexit([] {
    if (Engine* e = Engine::instance()) e->shutdown();
  });
  for (size_t i = 0; i < sizeof(kFatalSignals) / sizeof(int); ++i) {
    struct sigaction sa{};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(kFatalSignals[i], &sa, &g_previous[i]);
  }
}

nanscope_status_t init(nanscope_attach_t attach) {
  const bool first = Engine::instance() == nullptr;
  nanscope_status_t s = Engine::init(attach);
  if (first && Engine::instance() && Engine::instance()->subscribed()) install_exit_hooks();
  return s;
}

std::string own_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_path), &info) && info.dli_fname) return info.dli_fname;
  return {};
}

// LD_PRELOAD puts us in every process, CUDA or not. Do nothing here but ask the driver to
// call InitializeInjection when (if) the process initialises CUDA.
__attribute__((constructor)) void on_load() {
  const char* preload = std::getenv("LD_PRELOAD");
  if (!preload || !std::strstr(preload, "nanscope")) return;
  g_preloaded = true;
  const std::string self = own_path();
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  if (!injection || !*injection) {
    if (!self.empty()) setenv("CUDA_INJECTION64_PATH", self.c_str(), 0);
  } else if (self.empty() || std::strcmp(injection, self.c_str()) != 0) {
    // Another injection library is set: we cannot wait for cuInit, so subscribe now.
    init(NANSCOPE_ATTACH_PRELOAD);
  }
}

}  // namespace

extern "C" {

NANSCOPE_API int InitializeInjection(void) {
  init(g_preloaded ? NANSCOPE_ATTACH_PRELOAD : NANSCOPE_ATTACH_INJECTION);
  return 1;  // never fail the app's cuInit because of us
}

NANSCOPE_API nanscope_status_t nanscope_init(void) { return init(NANSCOPE_ATTACH_LINKED); }

NANSCOPE_API nanscope_status_t nanscope_flush(void) {
  Engine* e = Engine::instance();
  if (!e) return NANSCOPE_ERROR_NOT_INITIALIZED;
  e->flush();
  return NANSCOPE_SUCCESS;
}

NANSCOPE_API nanscope_status_t nanscope_get_stats(nanscope_stats_t* stats) {
  if (!stats || nanscope::abi_struct_bytes(stats->struct_size, NANSCOPE_STATS_V1_SIZE, sizeof(nanscope_stats_t)) == 0)
    return NANSCOPE_ERROR_INVALID_ARGUMENT;
  Engine* e = Engine::instance();
  if (!e) return NANSCOPE_ERROR_NOT_INITIALIZED;
  nanscope_stats_t s{};
  s.struct_size = sizeof s;
  e->fill_stats(s);
  nanscope::abi_write(s, NANSCOPE_STATS_V1_SIZE, *stats);  // only the fields the caller's version carries
  return NANSCOPE_SUCCESS;
}

NANSCOPE_API const char* nanscope_version(void) { return NANSCOPE_VERSION_STRING; }

NANSCOPE_API const char* nanscope_status_string(nanscope_status_t status) {
  switch (status) {
    case NANSCOPE_SUCCESS: return "success";
    case NANSCOPE_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case NANSCOPE_ERROR_NOT_INITIALIZED: return "nanscope is not initialised";
    case NANSCOPE_ERROR_UNAVAILABLE: return "nanscope is unavailable (disabled, or CUPTI could not be used)";
    case NANSCOPE_ERROR_INTERNAL: return "internal error";
    default: return "unknown status";
  }
}

}  // extern "C"

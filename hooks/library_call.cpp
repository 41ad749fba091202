#include "library_call.hpp"

#include <atomic>

namespace nanscope::libcall {
namespace {

std::atomic<uint64_t> g_next_call{1};
// Plain zero-initialised thread-locals: no TLS constructor runs on any thread.
thread_local LibraryCall t_call;
thread_local bool t_inside = false;

}  // namespace

const LibraryCall* current() { return t_inside ? &t_call : nullptr; }

uint64_t note_kernel_launch() {
  if (!t_inside) return 0;
  ++t_call.kernels;
  return t_call.call_id;
}

bool enter(const char* api, uint64_t stream) {
  if (t_inside) return false;
  t_call = {g_next_call.fetch_add(1, std::memory_order_relaxed), api, stream, 0};
  t_inside = true;
  return true;
}

LibraryCall leave() {
  t_inside = false;
  return t_call;
}

}  // namespace nanscope::libcall

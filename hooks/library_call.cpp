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
  t_call = {g_next_call.fetch_add(1, std::memory_order_relaxed), api, stream, 0, {}, 0, false, {}, 0};
  t_inside = true;
  return true;
}

void set_reads(const uint64_t* reads, uint32_t count) {
  if (!t_inside) return;
  t_call.read_count = 0;
  for (uint32_t i = 0; i < count && i < LibraryCall::kMaxReads; ++i)
    if (reads[i]) t_call.reads[t_call.read_count++] = reads[i];
  t_call.writes_bounded = true;
}

void set_writes(const LibraryCall::Span* writes, uint32_t count) {
  if (!t_inside) return;
  t_call.write_count = 0;
  for (uint32_t i = 0; i < count && t_call.write_count < LibraryCall::kMaxWrites; ++i)
    if (writes[i].ptr && writes[i].bytes) t_call.writes[t_call.write_count++] = writes[i];
}

LibraryCall leave() {
  t_inside = false;
  return t_call;
}

}  // namespace nanscope::libcall

// Stands in for libnccl.so.2 in the NCCL GOT test: the entry points the wrappers need, and an
// internal caller of its own ncclAllReduce (libnccl is never patched: that call stays direct).
#include <cstddef>

extern "C" {
__attribute__((visibility("default"))) int fake_nccl_calls = 0;
__attribute__((visibility("default"))) int ncclAllReduce(const void*, void*, size_t, int, int, void*, void*) {
  ++fake_nccl_calls;
  return 0;
}
__attribute__((visibility("default"))) int ncclCommUserRank(void*, int* rank) { return *rank = 0, 0; }
__attribute__((visibility("default"))) int ncclCommCount(void*, int* n) { return *n = 1, 0; }
__attribute__((visibility("default"))) int fake_nccl_internal(void* buf, size_t n, void* comm) {
  return ncclAllReduce(buf, buf, n, 7, 0, comm, nullptr);  // through libnccl's own PLT slot
}
}

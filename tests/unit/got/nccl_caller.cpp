// An importer of ncclAllReduce (stands in for libtorch_cuda.so), linked against the fake libnccl.
#include <cstddef>

extern "C" int ncclAllReduce(const void*, void*, size_t, int, int, void*, void*);
extern "C" int fake_nccl_internal(void* buf, size_t n, void* comm);

extern "C" __attribute__((visibility("default"))) int nccl_caller_all_reduce(void* buf, size_t n, void* comm) {
  return ncclAllReduce(buf, buf, n, /*ncclFloat32*/ 7, /*ncclSum*/ 0, comm, nullptr);
}
extern "C" __attribute__((visibility("default"))) int nccl_caller_internal(void* buf, size_t n, void* comm) {
  return fake_nccl_internal(buf, n, comm);
}

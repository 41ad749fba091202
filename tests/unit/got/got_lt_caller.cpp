// A library linked against the real libcublasLt.so.13 (as libtorch_cuda.so is): its import of
// cublasLtMatmul is what gemm::patch_all() must find and patch. Loaded with dlopen by the test.
#include <cublasLt.h>

extern "C" __attribute__((visibility("default"))) cublasStatus_t got_lt_call(void* d, cublasLtMatrixLayout_t ddesc,
                                                                            cudaStream_t stream) {
  return cublasLtMatmul(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, d,
                        ddesc, nullptr, nullptr, 0, stream);
}

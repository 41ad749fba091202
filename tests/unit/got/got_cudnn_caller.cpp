// A library linked against the real libcudnn.so.9 (as libtorch_cuda.so is): its imports of the
// cudnnBackend* functions are what cudnn::patch_all() must find and patch. It builds what
// cudnn-frontend builds first for SDPA (tensor descriptors and the SDPA_FWD operation naming
// them), which cuDNN validates on the host: no GPU, no handle. Loaded with dlopen by the test.
#include <cudnn_graph.h>

namespace {
int set_i64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, int64_t n, const int64_t* v) {
  return cudnnBackendSetAttribute(d, a, CUDNN_TYPE_INT64, n, v);
}
}  // namespace

// A finalized [2, 4, 128, 64] half tensor with `uid`; `dims` 0 sets no dimensions (finalize
// then fails: nothing of it may be taken as set).
extern "C" __attribute__((visibility("default"))) int got_cudnn_tensor(int64_t uid, int dims, void** out) {
  cudnnBackendDescriptor_t t = nullptr;
  int s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t);
  const int64_t shape[4] = {2, 4, 128, 64}, strides[4] = {4 * 128 * 64, 128 * 64, 64, 1}, align = 16;
  const cudnnDataType_t half = CUDNN_DATA_HALF;
  const bool is_virtual = false;
  s = s ? s : set_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 1, &uid);
  s = s ? s : cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &half);
  if (dims) s = s ? s : set_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, dims, shape);
  s = s ? s : set_i64(t, CUDNN_ATTR_TENSOR_STRIDES, 4, strides);
  s = s ? s : set_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 1, &align);
  s = s ? s : cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  s = s ? s : cudnnBackendFinalize(t);
  *out = t;
  return s;
}

extern "C" __attribute__((visibility("default"))) int got_cudnn_sdpa_op(void* q, void* o, void** out) {
  cudnnBackendDescriptor_t op = nullptr;
  int s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &op);
  s = s ? s : cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q);
  s = s ? s : cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  *out = op;
  return s;
}

extern "C" __attribute__((visibility("default"))) int got_cudnn_destroy(void* d) {
  return cudnnBackendDestroyDescriptor(d);
}

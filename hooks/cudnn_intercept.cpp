#include "cudnn_intercept.hpp"

#include <algorithm>
#include <atomic>

#include "got_library.hpp"

// cuDNN's headers, where the toolkit has them, only to check the prototypes and the enum values
// src/cudnn_graph.hpp spells out: nothing here links against cuDNN.
#if __has_include(<cudnn_graph.h>)
#include <cudnn_graph.h>
#define NANSCOPE_HAVE_CUDNN_HEADERS 1
#endif

namespace nanscope::cudnn {
namespace {

// The backend entry points libtorch_cuda.so (2.11) imports from libcudnn.so.9, all through
// R_X86_64_JUMP_SLOT relocations. cudnnBackendInitialize (deprecated) and the CUDA-graph
// population calls are not imported by it and not hooked.
#define NS_CUDNN_HOOKS(X)                                                                         \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)   \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)

enum Id : int { NS_CUDNN_HOOKS(NS_GOT_ID) kHookCount };
constexpr const char* kNames[] = {NS_CUDNN_HOOKS(NS_GOT_NAME)};

// The ABI the wrappers use: cudnnStatus_t and the enums are ints, handles and descriptors
// pointers (checked against the headers below).
using Status = int;
using Descriptor = void*;
constexpr Status kSuccess = 0;

using GetStreamFn = Status (*)(void* handle, void** stream);
std::atomic<GetStreamFn> g_get_stream{nullptr};

struct Sink {
  CudnnSink fn;
  void* ctx;
};

struct Traits {
  static constexpr std::size_t kCount = kHookCount;
  using Sink = cudnn::Sink;
  static const got::Hook* table();
  // cuDNN's own libraries reach each other through pointers, not these imports: the shim
  // libcudnn.so.9 forwards to libcudnn_graph.so.9. Skipping them keeps one call one report.
  static got::Options options(bool force) { return got::options_skipping(force, {"libcudnn", "libnanscope"}); }
  static void after_walk();
};
using Lib = got::Library<Traits>;

uint64_t key(const void* descriptor) { return reinterpret_cast<uint64_t>(descriptor); }

// Records only what cuDNN accepted; never lets an exception (allocation) into the app.
template <class Record>
void record(Status status, Record&& r) {
  if (status != kSuccess) return;
  try {
    r();
  } catch (...) {
  }
}

Status w_cudnnBackendCreateDescriptor(int type, Descriptor* out) {
  const Status s = Lib::original<decltype(&w_cudnnBackendCreateDescriptor)>(k_cudnnBackendCreateDescriptor)(type, out);
  record(s, [&] {
    if (out) graphs().on_create(key(*out), type);
  });
  return s;
}

// Forgotten before cuDNN frees it (another thread may get the same handle from its next create),
// whatever the status: a stale handle is never mapped.
Status w_cudnnBackendDestroyDescriptor(Descriptor d) {
  record(kSuccess, [&] { graphs().on_destroy(key(d)); });
  return Lib::original<decltype(&w_cudnnBackendDestroyDescriptor)>(k_cudnnBackendDestroyDescriptor)(d);
}

Status w_cudnnBackendSetAttribute(Descriptor d, int name, int type, int64_t count, const void* elements) {
  const Status s =
      Lib::original<decltype(&w_cudnnBackendSetAttribute)>(k_cudnnBackendSetAttribute)(d, name, type, count, elements);
  record(s, [&] { graphs().on_set(key(d), name, type, count, elements); });
  return s;
}

Status w_cudnnBackendGetAttribute(Descriptor const d, int name, int type, int64_t requested, int64_t* count,
                                  void* elements) {
  const Status s = Lib::original<decltype(&w_cudnnBackendGetAttribute)>(k_cudnnBackendGetAttribute)(
      d, name, type, requested, count, elements);
  record(s, [&] {
    const int64_t got = count ? std::min(*count, requested) : requested;
    if (elements) graphs().on_get(key(d), name, type, got, elements);
  });
  return s;
}

Status w_cudnnBackendFinalize(Descriptor d) {
  const Status s = Lib::original<decltype(&w_cudnnBackendFinalize)>(k_cudnnBackendFinalize)(d);
  record(s, [&] { graphs().on_finalize(key(d)); });
  return s;
}

uint64_t stream_of(void* handle) {
  void* stream = nullptr;
  GetStreamFn get = g_get_stream.load(std::memory_order_relaxed);
  if (!get || get(handle, &stream) != kSuccess) return 0;
  return reinterpret_cast<uint64_t>(stream);
}

// Maps the graph first: a mapped call marks the thread (its kernels are the call's, its outputs
// scanned after it); an unmapped one does not, so its kernels stay opaque kernels, blamed as
// candidates. Calls through, and reports on success.
Status w_cudnnBackendExecute(void* handle, Descriptor plan, Descriptor variant_pack) {
  auto call = [&] {
    return Lib::original<decltype(&w_cudnnBackendExecute)>(k_cudnnBackendExecute)(handle, plan, variant_pack);
  };
  const Sink* sink = Lib::observer();
  if (!sink || libcall::current()) return call();  // no observer, or nested: the outer call owns it
  CudnnCall c;
  bool mapped = false;
  try {
    c.stream = stream_of(handle);
    c.execution = graphs().execution(key(plan), key(variant_pack));
    mapped = !c.execution.why && libcall::enter(kNames[k_cudnnBackendExecute], c.stream);
  } catch (...) {  // no memory for the map: the call goes through unobserved
    return call();
  }
  const Status status = call();
  const libcall::LibraryCall done = mapped ? libcall::leave() : libcall::LibraryCall{};
  if (status != kSuccess) return status;
  try {
    c.call_id = done.call_id, c.kernels_launched = done.kernels;
    sink->fn(sink->ctx, c);
  } catch (...) {  // never into the host application
  }
  return status;
}

#if NANSCOPE_HAVE_CUDNN_HEADERS
// Same ABI as the header's prototypes (int-sized enums, pointer handles) ...
static_assert(sizeof(cudnnStatus_t) == sizeof(Status) && sizeof(cudnnBackendDescriptorType_t) == sizeof(int) &&
              sizeof(cudnnBackendAttributeName_t) == sizeof(int) && sizeof(cudnnBackendAttributeType_t) == sizeof(int));
// ... and the values src/cudnn_graph.hpp uses (the operations' attributes: tests/unit/test_cudnn_graph.cpp).
#define NS_SAME(HEADER, OURS) static_assert(int{HEADER} == (OURS), #HEADER);
NS_SAME(CUDNN_STATUS_SUCCESS, kSuccess)
NS_SAME(CUDNN_BACKEND_ENGINE_DESCRIPTOR, desc::kEngine)
NS_SAME(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, desc::kEngineCfg)
NS_SAME(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, desc::kEngineHeur)
NS_SAME(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, desc::kExecutionPlan)
NS_SAME(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, desc::kOperationGraph)
NS_SAME(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, desc::kVariantPack)
NS_SAME(CUDNN_BACKEND_TENSOR_DESCRIPTOR, desc::kTensor)
NS_SAME(CUDNN_TYPE_DATA_TYPE, type::kDataType)
NS_SAME(CUDNN_TYPE_BOOLEAN, type::kBoolean)
NS_SAME(CUDNN_TYPE_INT64, type::kInt64)
NS_SAME(CUDNN_TYPE_VOID_PTR, type::kVoidPtr)
NS_SAME(CUDNN_TYPE_BACKEND_DESCRIPTOR, type::kBackendDescriptor)
NS_SAME(CUDNN_TYPE_TENSOR_REORDERING_MODE, type::kReorderingMode)
NS_SAME(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, attr::kEngineHeurOperationGraph)
NS_SAME(CUDNN_ATTR_ENGINEHEUR_RESULTS, attr::kEngineHeurResults)
NS_SAME(CUDNN_ATTR_ENGINECFG_ENGINE, attr::kEngineCfgEngine)
NS_SAME(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, attr::kPlanEngineConfig)
NS_SAME(CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, attr::kPlanJson)
NS_SAME(CUDNN_ATTR_OPERATIONGRAPH_OPS, attr::kOperationGraphOps)
NS_SAME(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, attr::kTensorByteAlignment)
NS_SAME(CUDNN_ATTR_TENSOR_DATA_TYPE, attr::kTensorDataType)
NS_SAME(CUDNN_ATTR_TENSOR_DIMENSIONS, attr::kTensorDimensions)
NS_SAME(CUDNN_ATTR_TENSOR_STRIDES, attr::kTensorStrides)
NS_SAME(CUDNN_ATTR_TENSOR_VECTOR_COUNT, attr::kTensorVectorCount)
NS_SAME(CUDNN_ATTR_TENSOR_UNIQUE_ID, attr::kTensorUniqueId)
NS_SAME(CUDNN_ATTR_TENSOR_IS_VIRTUAL, attr::kTensorIsVirtual)
NS_SAME(CUDNN_ATTR_TENSOR_IS_BY_VALUE, attr::kTensorIsByValue)
NS_SAME(CUDNN_ATTR_TENSOR_REORDERING_MODE, attr::kTensorReorderingMode)
NS_SAME(CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, attr::kTensorRaggedOffset)
NS_SAME(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, attr::kVariantPackUniqueIds)
NS_SAME(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, attr::kVariantPackDataPointers)
NS_SAME(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, attr::kVariantPackWorkspace)
NS_SAME(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS, attr::kVariantPackOverrideUniqueIds)
NS_SAME(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, attr::kEngineOperationGraph)
NS_SAME(CUDNN_DATA_FLOAT, data::kFloat)
NS_SAME(CUDNN_DATA_DOUBLE, data::kDouble)
NS_SAME(CUDNN_DATA_HALF, data::kHalf)
NS_SAME(CUDNN_DATA_BFLOAT16, data::kBfloat16)
NS_SAME(CUDNN_DATA_FP8_E4M3, data::kFp8E4m3)
NS_SAME(CUDNN_DATA_FP8_E5M2, data::kFp8E5m2)
#undef NS_SAME
#endif

const got::Hook kHooks[] = {NS_CUDNN_HOOKS(NS_GOT_HOOK)};
const got::Hook* Traits::table() { return kHooks; }

// cudnnGetStream from the library cudnnBackendExecute's original lives in (never loading one).
void Traits::after_walk() {
  if (g_get_stream.load()) return;
  if (void* fn = got::sibling_symbol(Lib::originals[k_cudnnBackendExecute].load(), "cudnnGetStream"))
    g_get_stream.store(reinterpret_cast<GetStreamFn>(fn));
}

}  // namespace

CudnnGraphs& graphs() {
  static CudnnGraphs* store = new CudnnGraphs;  // never destroyed: wrappers may run during exit
  return *store;
}

void set_cudnn_sink(CudnnSink fn, void* ctx) { Lib::observe(fn ? new Sink{fn, ctx} : nullptr); }

const got::Hook* hooks(std::size_t* count) { return Lib::hooks(count); }

got::Report patch_all(bool force) { return Lib::patch_all(force); }

bool set_original(const char* name, void* fn) { return Lib::set_original(name, fn); }

void set_get_stream(void* fn) { g_get_stream.store(reinterpret_cast<GetStreamFn>(fn)); }

void* wrapper(const char* name) { return Lib::wrapper(name); }

void* adopt(const char* name, void* fn) { return Lib::adopt(name, fn); }

}  // namespace nanscope::cudnn

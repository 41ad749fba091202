// What a cuDNN backend graph writes, from the descriptor calls that built it (no CUDA, no cuDNN).
// hooks/cudnn_intercept.cpp reports every successful cudnnBackendCreateDescriptor,
// SetAttribute, GetAttribute, Finalize and DestroyDescriptor to one CudnnGraphs store; at
// cudnnBackendExecute the store maps the plan to its operation graph and the variant pack's UIDs
// to device pointers: the graph's non-virtual outputs (what the call writes) and inputs (what it
// only reads). A graph it cannot map is refused with a reason, never guessed. docs/library-calls.md.
#pragma once
#include "lock_rank.hpp"
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "signature.hpp"

namespace nanscope::cudnn {

// cuDNN 9 backend enum values (cudnn_graph.h, 9.19), as ints: nothing here needs cuDNN's
// headers. hooks/cudnn_intercept.cpp checks them against the headers when they are present.
namespace desc {  // cudnnBackendDescriptorType_t
enum : int {
  kEngine = 2, kEngineCfg = 3, kEngineHeur = 4, kExecutionPlan = 5, kOpConvForward = 10, kOpConvBackwardFilter = 11,
  kOpConvBackwardData = 12, kOpPointwise = 13, kOpGenStats = 14, kOperationGraph = 15, kVariantPack = 16,
  kTensor = 17, kOpMatmul = 19, kOpBnFinalize = 20, kOpReduction = 22, kOpBnBwdWeights = 23, kOpResampleFwd = 25,
  kOpResampleBwd = 26, kOpConcat = 27, kOpNormForward = 29, kOpNormBackward = 30, kOpReshape = 31, kOpRng = 33,
  kOpPagedCacheLoad = 35, kOpBlockScaleQuantize = 36, kOpBlockScaleDequantize = 37, kOpExpandBandMatrix = 39,
  kOpContractBandMatrix = 40, kOpSdpaForward = 41, kOpMoeGroupedMatmul = 42, kOpSdpaBackward = 43,
};
}  // namespace desc
namespace type {  // cudnnBackendAttributeType_t
enum : int { kDataType = 1, kBoolean = 2, kInt64 = 3, kVoidPtr = 6, kBackendDescriptor = 15, kReorderingMode = 20 };
}
namespace attr {  // cudnnBackendAttributeName_t: the ones the store reads (operations' are in the table)
enum : int {
  kEngineHeurOperationGraph = 201, kEngineHeurResults = 202, kEngineCfgEngine = 300, kPlanEngineConfig = 401,
  kPlanJson = 405, kOperationGraphOps = 801, kTensorByteAlignment = 900, kTensorDataType = 901,
  kTensorDimensions = 902, kTensorStrides = 903, kTensorVectorCount = 904, kTensorUniqueId = 906,
  kTensorIsVirtual = 907, kTensorIsByValue = 908, kTensorReorderingMode = 909, kTensorRaggedOffset = 913,
  kVariantPackUniqueIds = 1000, kVariantPackDataPointers = 1001, kVariantPackWorkspace = 1003,
  kVariantPackOverrideUniqueIds = 1010, kEngineOperationGraph = 1300,
};
}
namespace data {  // cudnnDataType_t
enum : int {
  kFloat = 0, kDouble = 1, kHalf = 2, kBfloat16 = 9, kFp8E4m3 = 12, kFp8E5m2 = 13,
};
}

// DType of a cudnnDataType_t; none for types without NaN (integers, bool) or without a scan
// kernel (fp4, e8m0, complex).
DType scalar_dtype(int cudnn_data_type);

// One operation's tensor-valued attribute: what the operation does with that tensor.
enum class Role : uint8_t { input, output };
struct OpTensorAttr {
  int attr;
  Role role;
};
// The operation types the store maps, each with every tensor attribute cuDNN 9.19 gives it.
// An operation of another type, or a tensor set through an attribute not listed, makes its
// graph unmappable.
struct OpForm {
  int type;
  const char* name;
  const OpTensorAttr* attrs;
  uint32_t attr_count;
};
const OpForm* op_form(int descriptor_type);

// A tensor descriptor, as its attributes set it.
struct TensorInfo {
  bool has_uid = false;
  int64_t uid = 0;
  int data_type = -1;  // cudnnDataType_t; -1 never set
  std::vector<int64_t> dims, strides;
  bool is_virtual = false, by_value = false, ragged = false;
  int64_t vector_count = 1;
  int reordering = 0;  // CUDNN_TENSOR_REORDERING_NONE
};

// The elements a tensor occupies: a dense box (every permutation of a packed layout: BHSD,
// BSHD seen as BHSD, ...) of `elements` scalars from its pointer on. Refused (ok false, `why`
// a static reason) when it is not: broadcast or padded strides, vectorised, reordered or ragged
// layouts, no float type, unknown dims, overflow.
struct TensorExtent {
  bool ok = false;
  const char* why = "";
  DType dtype = DType::none;
  uint64_t elements = 0;
};
TensorExtent tensor_extent(const TensorInfo& t);

// One buffer of an executed graph. extent.ok false: not judged (`extent.why` says why).
struct GraphBuffer {
  int64_t uid = 0;
  uint64_t ptr = 0;
  TensorExtent extent;
};

// What one cudnnBackendExecute writes and reads. `why` non-null: the call cannot be mapped
// (a static reason) and outputs is empty. Outputs are in the graph's order (operations as the
// graph lists them, each operation's tensors in its table's order: O before Stats). Tensors
// that hold no float (integer indices, sequence lengths, RNG seeds) are left out of both.
struct Execution {
  const char* why = nullptr;
  std::string ops;  // the graph's operation kinds, e.g. "SDPA_FWD" (for the log)
  std::vector<GraphBuffer> outputs, inputs;
};

// The store of live descriptors (bounded, thread-safe). Calls are reported after cuDNN
// returned success; a handle the store did not see created is not mapped.
class CudnnGraphs {
 public:
  static constexpr size_t kMaxDescriptors = 1u << 15;
  CudnnGraphs();
  ~CudnnGraphs();
  CudnnGraphs(const CudnnGraphs&) = delete;
  CudnnGraphs& operator=(const CudnnGraphs&) = delete;

  void on_create(uint64_t handle, int descriptor_type);
  void on_destroy(uint64_t handle);
  void on_set(uint64_t handle, int attr, int attr_type, int64_t count, const void* elements);
  // GetAttribute's results that are descriptors (the heuristics' engine configs, a config's
  // engine) belong to the queried descriptor's graph.
  void on_get(uint64_t handle, int attr, int attr_type, int64_t count, const void* elements);
  void on_finalize(uint64_t handle);

  Execution execution(uint64_t plan, uint64_t variant_pack) const;

  // For tests: a recorded tensor descriptor as its attributes set it (false when not recorded).
  bool tensor(uint64_t handle, TensorInfo* out) const;
  size_t size() const;
  // Descriptors not recorded because the store was full (their graphs are not mapped).
  uint64_t dropped() const;

  struct Graph;  // a finalized operation graph: its tensors and roles, or why it cannot be mapped
  struct Record;

 private:
  Record* find(uint64_t handle);
  const Record* find(uint64_t handle) const;
  void set_tensor(Record& r, int attr, int attr_type, int64_t count, const void* elements);
  void set_operation(Record& r, int attr, int64_t count, const void* elements);
  void set_graph_ops(Record& r, int64_t count, const void* elements);
  void set_variant_pack(Record& r, int attr, int64_t count, const void* elements);
  void link_graph(Record& r, int64_t count, const void* elements);

  mutable Ranked<std::mutex, LockLevel::container> mu_{"CudnnGraphs::mu_"};
  std::unordered_map<uint64_t, std::unique_ptr<Record>> records_;
  uint64_t dropped_ = 0;
};

}  // namespace nanscope::cudnn

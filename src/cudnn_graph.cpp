#include "cudnn_graph.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

namespace nanscope::cudnn {
namespace {

constexpr Role kIn = Role::input, kOut = Role::output;

// Every tensor attribute of each operation (cudnn_graph.h, cuDNN 9.19), in the order an
// operation's outputs are listed: the SDPA forward's O before its Stats.
constexpr OpTensorAttr kConvForward[] = {{705, kOut}, {703, kIn}, {704, kIn}};             // Y; W, X
constexpr OpTensorAttr kConvBackwardData[] = {{710, kOut}, {709, kIn}, {711, kIn}};        // DX; W, DY
constexpr OpTensorAttr kConvBackwardFilter[] = {{715, kOut}, {716, kIn}, {717, kIn}};      // DW; X, DY
constexpr OpTensorAttr kPointwise[] = {{753, kOut}, {756, kOut}, {751, kIn}, {752, kIn}, {757, kIn}, {758, kIn}};
// Y, DX; X, B, DY, T
constexpr OpTensorAttr kGenStats[] = {{773, kOut}, {774, kOut}, {772, kIn}};               // SUM, SQSUM; X
constexpr OpTensorAttr kBnFinalize[] = {                                                  // 782..796
    {788, kOut}, {789, kOut}, {790, kOut}, {791, kOut}, {792, kOut}, {793, kOut}, {782, kIn}, {783, kIn},
    {784, kIn},  {785, kIn},  {786, kIn},  {787, kIn},  {794, kIn},  {795, kIn},  {796, kIn}};
constexpr OpTensorAttr kMatmul[] = {{1522, kOut}, {1520, kIn}, {1521, kIn}, {1525, kIn}, {1526, kIn}, {1527, kIn}};
// C; A, B, M/N/K overrides
constexpr OpTensorAttr kReduction[] = {{1611, kOut}, {1610, kIn}};                         // Y; X
constexpr OpTensorAttr kBnBwdWeights[] = {                                                // 1621..1629
    {1626, kOut}, {1627, kOut}, {1628, kOut}, {1629, kOut}, {1630, kOut},
    {1621, kIn},  {1622, kIn},  {1623, kIn},  {1624, kIn},  {1625, kIn}};
constexpr OpTensorAttr kResampleFwd[] = {{1711, kOut}, {1712, kOut}, {1710, kIn}};         // Y, IDX; X
constexpr OpTensorAttr kResampleBwd[] = {{1720, kOut}, {1721, kIn}, {1722, kIn}, {1726, kIn}, {1727, kIn}};
// DX; DY, IDX, X, Y
constexpr OpTensorAttr kConcat[] = {{1803, kOut}, {1801, kIn}};                            // output; inputs
constexpr OpTensorAttr kNormForward[] = {                                                 // 2002..2013
    {2013, kOut}, {2003, kOut}, {2004, kOut}, {2011, kOut}, {2012, kOut}, {2002, kIn},
    {2005, kIn},  {2006, kIn},  {2007, kIn},  {2008, kIn},  {2009, kIn},  {2010, kIn}};
constexpr OpTensorAttr kNormBackward[] = {                                                // 2101..2109
    {2109, kOut}, {2107, kOut}, {2108, kOut}, {2101, kIn}, {2102, kIn}, {2103, kIn}, {2104, kIn},
    {2105, kIn},  {2106, kIn}};
constexpr OpTensorAttr kReshape[] = {{2201, kOut}, {2200, kIn}};                           // Y; X
constexpr OpTensorAttr kRng[] = {{2310, kOut}, {2311, kIn}, {2313, kIn}};                  // Y; seed, offset
constexpr OpTensorAttr kPagedCacheLoad[] = {{1951, kOut}, {1950, kIn}, {1952, kIn}, {1953, kIn}};
constexpr OpTensorAttr kBlockScaleQuantize[] = {{2501, kOut}, {2502, kOut}, {2500, kIn}};  // Y, scale; X
constexpr OpTensorAttr kBlockScaleDequantize[] = {{2602, kOut}, {2600, kIn}, {2601, kIn}}; // Y; X, scale
constexpr OpTensorAttr kExpandBand[] = {{2251, kOut}, {2250, kIn}, {2256, kIn}, {2257, kIn}};
constexpr OpTensorAttr kContractBand[] = {{2271, kOut}, {2270, kIn}};
constexpr OpTensorAttr kSdpaForward[] = {                                                 // 2800..2810
    {2803, kOut}, {2804, kOut}, {2800, kIn}, {2801, kIn}, {2802, kIn}, {2805, kIn},
    {2806, kIn},  {2807, kIn},  {2808, kIn}, {2809, kIn}, {2810, kIn}};  // O, Stats; Q, K, V, scale, ...
constexpr OpTensorAttr kSdpaBackward[] = {                                                // 2851..2862
    {2859, kOut}, {2860, kOut}, {2861, kOut}, {2851, kIn}, {2852, kIn}, {2853, kIn}, {2854, kIn},
    {2855, kIn},  {2856, kIn},  {2857, kIn},  {2858, kIn}, {2862, kIn}};  // dQ, dK, dV; Q, K, V, O, ...
constexpr OpTensorAttr kMoeGroupedMatmul[] = {{2905, kOut}, {2902, kIn}, {2903, kIn}, {2904, kIn}, {2906, kIn},
                                              {2907, kIn}};

#define NS_FORM(TYPE, NAME, TABLE) {TYPE, NAME, TABLE, sizeof(TABLE) / sizeof(TABLE[0])}
constexpr OpForm kForms[] = {
    NS_FORM(desc::kOpConvForward, "CONV_FWD", kConvForward),
    NS_FORM(desc::kOpConvBackwardData, "CONV_BWD_DATA", kConvBackwardData),
    NS_FORM(desc::kOpConvBackwardFilter, "CONV_BWD_FILTER", kConvBackwardFilter),
    NS_FORM(desc::kOpPointwise, "POINTWISE", kPointwise),
    NS_FORM(desc::kOpGenStats, "GEN_STATS", kGenStats),
    NS_FORM(desc::kOpBnFinalize, "BN_FINALIZE", kBnFinalize),
    NS_FORM(desc::kOpMatmul, "MATMUL", kMatmul),
    NS_FORM(desc::kOpReduction, "REDUCTION", kReduction),
    NS_FORM(desc::kOpBnBwdWeights, "BN_BWD_WEIGHTS", kBnBwdWeights),
    NS_FORM(desc::kOpResampleFwd, "RESAMPLE_FWD", kResampleFwd),
    NS_FORM(desc::kOpResampleBwd, "RESAMPLE_BWD", kResampleBwd),
    NS_FORM(desc::kOpConcat, "CONCAT", kConcat),
    NS_FORM(desc::kOpNormForward, "NORM_FWD", kNormForward),
    NS_FORM(desc::kOpNormBackward, "NORM_BWD", kNormBackward),
    NS_FORM(desc::kOpReshape, "RESHAPE", kReshape),
    NS_FORM(desc::kOpRng, "RNG", kRng),
    NS_FORM(desc::kOpPagedCacheLoad, "PAGED_CACHE_LOAD", kPagedCacheLoad),
    NS_FORM(desc::kOpBlockScaleQuantize, "BLOCK_SCALE_QUANTIZE", kBlockScaleQuantize),
    NS_FORM(desc::kOpBlockScaleDequantize, "BLOCK_SCALE_DEQUANTIZE", kBlockScaleDequantize),
    NS_FORM(desc::kOpExpandBandMatrix, "EXPAND_BAND_MATRIX", kExpandBand),
    NS_FORM(desc::kOpContractBandMatrix, "CONTRACT_BAND_MATRIX", kContractBand),
    NS_FORM(desc::kOpSdpaForward, "SDPA_FWD", kSdpaForward),
    NS_FORM(desc::kOpSdpaBackward, "SDPA_BWD", kSdpaBackward),
    NS_FORM(desc::kOpMoeGroupedMatmul, "MOE_GROUPED_MATMUL", kMoeGroupedMatmul),
};
#undef NS_FORM

int form_index(const OpForm& f, int attr) {
  for (uint32_t i = 0; i < f.attr_count; ++i)
    if (f.attrs[i].attr == attr) return static_cast<int>(i);
  return -1;
}

std::vector<uint64_t> handles(int64_t count, const void* elements) {
  std::vector<uint64_t> out(count > 0 && elements ? static_cast<size_t>(count) : 0);
  if (!out.empty()) std::memcpy(out.data(), elements, out.size() * sizeof(uint64_t));
  return out;
}

std::vector<int64_t> int64s(int64_t count, const void* elements) {
  const auto* p = static_cast<const int64_t*>(elements);
  return count > 0 && p ? std::vector<int64_t>(p, p + count) : std::vector<int64_t>{};
}

template <class T>
bool first(int64_t count, const void* elements, T* out) {
  if (count < 1 || !elements) return false;
  std::memcpy(out, elements, sizeof(T));
  return true;
}

bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

}  // namespace

DType scalar_dtype(int t) {
  switch (t) {
    case data::kFloat: return DType::f32;
    case data::kDouble: return DType::f64;
    case data::kHalf: return DType::f16;
    case data::kBfloat16: return DType::bf16;
    case data::kFp8E4m3: return DType::f8e4m3;
    case data::kFp8E5m2: return DType::f8e5m2;
    default: return DType::none;
  }
}

const OpForm* op_form(int type) {
  for (const OpForm& f : kForms)
    if (f.type == type) return &f;
  return nullptr;
}

namespace {

TensorExtent refuse(const char* why) {
  TensorExtent e;
  e.why = why;
  return e;
}

const char* layout_refusal(const TensorInfo& t) {
  if (t.data_type < 0) return "tensor data type not set";
  if (scalar_dtype(t.data_type) == DType::none) return "not a float type";
  if (t.dims.empty() || t.dims.size() != t.strides.size()) return "tensor dims or strides unknown";
  if (t.vector_count != 1) return "vectorized tensor layout";
  if (t.reordering != 0) return "reordered tensor layout";
  if (t.ragged) return "ragged tensor (offsets)";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (t.dims[i] <= 0) return "empty tensor";
    if (t.strides[i] < 0) return "negative stride";
  }
  return nullptr;
}

}  // namespace

TensorExtent tensor_extent(const TensorInfo& t) {
  if (const char* why = layout_refusal(t)) return refuse(why);
  // A dense box: the dimensions longer than one, ordered by stride, each stride the product
  // of the sizes below it. Size-1 dimensions take any stride (they are never stepped along).
  std::vector<size_t> order;
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (t.dims[i] > 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides[a] < t.strides[b]; });
  uint64_t expected = 1;
  for (size_t i : order) {
    if (static_cast<uint64_t>(t.strides[i]) != expected) return refuse("strides not a dense box (broadcast or padded)");
    if (!mul(expected, static_cast<uint64_t>(t.dims[i]), &expected)) return refuse("tensor size overflows");
  }
  TensorExtent e;
  e.ok = true;
  e.dtype = scalar_dtype(t.data_type);
  e.elements = expected;
  return e;
}

struct CudnnGraphs::Graph {
  struct Tensor {
    TensorInfo info;
    Role role;
  };
  const char* why = nullptr;
  std::string ops;
  std::vector<Tensor> tensors;  // non-virtual, by UID: outputs (written by some op) and inputs
};

struct CudnnGraphs::Record {
  int type = -1;
  bool finalized = false;
  TensorInfo tensor;                              // a tensor
  std::vector<std::vector<TensorInfo>> slots;     // an operation: its form's attributes, in order
  const char* why = nullptr;                      // an operation, a graph or a plan: not mappable
  std::shared_ptr<Graph> pending;                 // an operation graph before it is finalized
  std::shared_ptr<const Graph> graph;             // a finalized graph, and what was built from it
  std::vector<int64_t> uids;                      // a variant pack
  std::vector<uint64_t> pointers;
  bool overrides = false;
};

CudnnGraphs::CudnnGraphs() = default;
CudnnGraphs::~CudnnGraphs() = default;

CudnnGraphs::Record* CudnnGraphs::find(uint64_t h) {
  const auto it = records_.find(h);
  return it == records_.end() ? nullptr : it->second.get();
}
const CudnnGraphs::Record* CudnnGraphs::find(uint64_t h) const {
  const auto it = records_.find(h);
  return it == records_.end() ? nullptr : it->second.get();
}

namespace {

// Descriptors no operation, graph or plan names as what it computes (intermediate, knob and
// layout infos, kernel caches, device properties): not recorded, so they take no room.
bool never_mapped(int type) { return (type >= 6 && type <= 9) || type == 34 || type == 38; }

}  // namespace

void CudnnGraphs::on_create(uint64_t handle, int type) {
  std::lock_guard lock(mu_);
  records_.erase(handle);  // a handle reused after a destroy nanscope did not see
  if (never_mapped(type)) return;
  if (records_.size() >= kMaxDescriptors) return void(++dropped_);
  auto r = std::make_unique<Record>();
  r->type = type;
  if (const OpForm* f = op_form(type)) r->slots.resize(f->attr_count);
  records_.emplace(handle, std::move(r));
}

void CudnnGraphs::on_destroy(uint64_t handle) {
  std::lock_guard lock(mu_);
  records_.erase(handle);
}

void CudnnGraphs::on_finalize(uint64_t handle) {
  std::lock_guard lock(mu_);
  Record* r = find(handle);
  if (!r) return;
  r->finalized = true;
  if (r->type == desc::kOperationGraph) {
    if (!r->pending) r->pending = std::make_shared<Graph>(), r->pending->why = "an operation graph without operations";
    r->graph = std::move(r->pending);
  }
}

void CudnnGraphs::on_set(uint64_t handle, int attr, int attr_type, int64_t count, const void* elements) {
  std::lock_guard lock(mu_);
  Record* r = find(handle);
  if (!r) return;
  switch (r->type) {
    case desc::kTensor: return set_tensor(*r, attr, attr_type, count, elements);
    case desc::kOperationGraph:
      if (attr == attr::kOperationGraphOps) set_graph_ops(*r, count, elements);
      return;
    case desc::kVariantPack: return set_variant_pack(*r, attr, count, elements);
    case desc::kEngine:
      if (attr == attr::kEngineOperationGraph) link_graph(*r, count, elements);
      return;
    case desc::kEngineHeur:
      if (attr == attr::kEngineHeurOperationGraph) link_graph(*r, count, elements);
      return;
    case desc::kEngineCfg:
      if (attr == attr::kEngineCfgEngine) link_graph(*r, count, elements);
      return;
    case desc::kExecutionPlan:
      if (attr == attr::kPlanEngineConfig) link_graph(*r, count, elements);
      if (attr == attr::kPlanJson) r->graph.reset(), r->why = "an execution plan loaded from its JSON form";
      return;
    default:
      if (attr_type == type::kBackendDescriptor && !r->slots.empty()) set_operation(*r, attr, count, elements);
      return;
  }
}

void CudnnGraphs::set_tensor(Record& r, int attr, int attr_type, int64_t count, const void* elements) {
  TensorInfo& t = r.tensor;
  switch (attr) {
    case attr::kTensorUniqueId: t.has_uid = first(count, elements, &t.uid); break;
    case attr::kTensorDataType: first(count, elements, &t.data_type); break;
    case attr::kTensorDimensions: t.dims = int64s(count, elements); break;
    case attr::kTensorStrides: t.strides = int64s(count, elements); break;
    case attr::kTensorIsVirtual: first(count, elements, &t.is_virtual); break;
    case attr::kTensorIsByValue: first(count, elements, &t.by_value); break;
    case attr::kTensorVectorCount: first(count, elements, &t.vector_count); break;
    case attr::kTensorReorderingMode: first(count, elements, &t.reordering); break;
    case attr::kTensorRaggedOffset: t.ragged = count > 0 && attr_type == type::kBackendDescriptor; break;
    default: break;  // byte alignment, vectorized dimension: no effect on what is written
  }
}

// A tensor attribute of an operation: the tensors it names, copied (a finalized tensor no longer
// changes, and the operation outlives its destruction).
void CudnnGraphs::set_operation(Record& r, int attr, int64_t count, const void* elements) {
  const OpForm* f = op_form(r.type);
  const int slot = f ? form_index(*f, attr) : -1;
  std::vector<TensorInfo> tensors;
  for (uint64_t h : handles(count, elements)) {
    const Record* t = find(h);
    if (!t) return void(r.why = "an operation names a descriptor nanscope did not record");
    if (t->type != desc::kTensor) return;  // a sub-descriptor (pointwise mode, matmul, reduction)
    tensors.push_back(t->tensor);
  }
  if (slot < 0) return void(r.why = "a tensor attribute nanscope does not map");
  r.slots[static_cast<size_t>(slot)] = std::move(tensors);
}

namespace {

// Adds one operation's non-virtual tensors: a tensor some operation writes is an output (its
// earlier reads in the graph included); one only read is an input. By-value tensors are host
// scalars, never device memory.
void add_operation(CudnnGraphs::Graph& g, const OpForm& f, const std::vector<std::vector<TensorInfo>>& slots) {
  for (uint32_t i = 0; i < f.attr_count && i < slots.size(); ++i) {
    for (const TensorInfo& t : slots[i]) {
      if (t.is_virtual || t.by_value) continue;
      if (!t.has_uid) {
        g.why = "a non-virtual tensor without a UID";
        continue;
      }
      auto same = std::find_if(g.tensors.begin(), g.tensors.end(), [&](const auto& x) { return x.info.uid == t.uid; });
      if (same == g.tensors.end()) g.tensors.push_back({t, f.attrs[i].role});
      else if (f.attrs[i].role == Role::output) same->role = Role::output;
    }
  }
}

}  // namespace

void CudnnGraphs::set_graph_ops(Record& r, int64_t count, const void* elements) {
  auto g = std::make_shared<Graph>();
  for (uint64_t h : handles(count, elements)) {
    const Record* op = find(h);
    const OpForm* f = op ? op_form(op->type) : nullptr;
    if (!op) g->why = "an operation graph names an operation nanscope did not record";
    else if (op->why) g->why = op->why;
    else if (!f) g->why = "an operation type nanscope does not map";
    if (!f || !op) continue;
    if (g->ops.find(f->name) == std::string::npos) g->ops += (g->ops.empty() ? "" : "+") + std::string(f->name);
    add_operation(*g, *f, op->slots);
  }
  if (g->tensors.empty() && !g->why) g->why = "an operation graph without device tensors";
  r.pending = std::move(g);
}

void CudnnGraphs::set_variant_pack(Record& r, int attr, int64_t count, const void* elements) {
  if (attr == attr::kVariantPackUniqueIds) r.uids = int64s(count, elements);
  else if (attr == attr::kVariantPackDataPointers) r.pointers = handles(count, elements);
  else if (attr == attr::kVariantPackOverrideUniqueIds) r.overrides = count > 0;
}

void CudnnGraphs::link_graph(Record& r, int64_t count, const void* elements) {
  uint64_t h = 0;
  const Record* from = first(count, elements, &h) ? find(h) : nullptr;
  r.graph = from ? from->graph : nullptr;
}

void CudnnGraphs::on_get(uint64_t handle, int attr, int attr_type, int64_t count, const void* elements) {
  if (attr_type != type::kBackendDescriptor) return;
  std::lock_guard lock(mu_);
  const Record* r = find(handle);
  const bool gives_graph = r && ((r->type == desc::kEngineHeur && attr == attr::kEngineHeurResults) ||
                                 (r->type == desc::kEngineCfg && attr == attr::kEngineCfgEngine) ||
                                 (r->type == desc::kExecutionPlan && attr == attr::kPlanEngineConfig));
  if (!gives_graph) return;
  const std::shared_ptr<const Graph> graph = r->graph;
  for (uint64_t h : handles(count, elements))
    if (Record* out = find(h)) out->graph = graph;
}

bool CudnnGraphs::tensor(uint64_t handle, TensorInfo* out) const {
  std::lock_guard lock(mu_);
  const Record* r = find(handle);
  if (!r || r->type != desc::kTensor || !r->finalized) return false;
  *out = r->tensor;
  return true;
}

size_t CudnnGraphs::size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

uint64_t CudnnGraphs::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

namespace {

Execution refused(const char* why) {
  Execution e;
  e.why = why;
  return e;
}

// The pointer the variant pack gives `uid`, 0 when it gives none.
uint64_t pointer_of(const std::vector<int64_t>& uids, const std::vector<uint64_t>& pointers, int64_t uid) {
  for (size_t i = 0; i < uids.size(); ++i)
    if (uids[i] == uid) return pointers[i];
  return 0;
}

}  // namespace

Execution CudnnGraphs::execution(uint64_t plan, uint64_t variant_pack) const {
  std::lock_guard lock(mu_);
  const Record* p = find(plan);
  if (!p || p->type != desc::kExecutionPlan) return refused("execution plan not recorded");
  if (p->why) return refused(p->why);
  if (!p->graph) return refused("the plan's operation graph is not known");
  const Graph& g = *p->graph;
  if (g.why) return refused(g.why);
  const Record* v = find(variant_pack);
  if (!v || v->type != desc::kVariantPack) return refused("variant pack not recorded");
  if (v->overrides) return refused("the variant pack overrides shapes");
  if (v->uids.size() != v->pointers.size()) return refused("variant pack UIDs and pointers differ in number");
  Execution e;
  e.ops = g.ops;
  for (const Graph::Tensor& t : g.tensors) {
    // Integers (indices, sequence lengths, RNG seeds) hold no NaN: neither scanned nor judged.
    if (scalar_dtype(t.info.data_type) == DType::none && t.info.data_type >= 0) continue;
    GraphBuffer b{t.info.uid, pointer_of(v->uids, v->pointers, t.info.uid), tensor_extent(t.info)};
    if (t.role == Role::input) {
      if (!b.ptr) b.extent = refuse("UID missing from the variant pack");
      e.inputs.push_back(b);
      continue;
    }
    if (!b.ptr) return refused("an output UID missing from the variant pack");
    if (!b.extent.ok) return refused(b.extent.why);
    e.outputs.push_back(b);
  }
  if (e.outputs.empty()) return refused("no float output");
  return e;
}

}  // namespace nanscope::cudnn

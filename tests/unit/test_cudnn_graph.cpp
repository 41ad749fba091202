// The cuDNN descriptor store on synthetic call sequences shaped like what cudnn-frontend 1.x
// (inside PyTorch 2.11) sends for SDPA: the unified SDPA_FWD operation (fp16 inference,
// cuDNN >= 9.13) and the composite matmul / pointwise / reduction graph; the heuristics and the
// engine paths to a plan; the variant pack; and every refusal.
#include "cudnn_graph.hpp"
#include "cudnn_fixture.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#if __has_include(<cudnn_graph.h>)
#include <cudnn_graph.h>
#define HAVE_CUDNN_HEADERS 1
#endif

using namespace nanscope;
using namespace nanscope::cudnn;
using namespace cudnn_fixture;

namespace {

// Builds descriptors the way cudnn-frontend does, straight into a store.
struct Builder {
  CudnnGraphs& g;
  uint64_t next = 0x1000;

  uint64_t create(int type) {
    const uint64_t h = next += 0x40;
    g.on_create(h, type);
    return h;
  }
  void set_i64(uint64_t h, int a, std::vector<int64_t> v) { g.on_set(h, a, type::kInt64, v.size(), v.data()); }
  void set_bool(uint64_t h, int a, bool v) { g.on_set(h, a, type::kBoolean, 1, &v); }
  void set_desc(uint64_t h, int a, std::vector<uint64_t> v) {
    g.on_set(h, a, type::kBackendDescriptor, v.size(), v.data());
  }
  uint64_t tensor(int64_t uid, int dtype, std::vector<int64_t> dims, std::vector<int64_t> strides,
                  bool is_virtual = false, bool by_value = false) {
    const uint64_t t = create(desc::kTensor);
    set_i64(t, attr::kTensorUniqueId, {uid});
    g.on_set(t, attr::kTensorDataType, type::kDataType, 1, &dtype);
    set_i64(t, attr::kTensorDimensions, dims);
    set_i64(t, attr::kTensorStrides, strides);
    set_i64(t, attr::kTensorByteAlignment, {16});
    set_bool(t, attr::kTensorIsVirtual, is_virtual);
    if (by_value) set_bool(t, attr::kTensorIsByValue, true);
    g.on_finalize(t);
    return t;
  }
  uint64_t op(int type, std::vector<std::pair<int, uint64_t>> tensors) {
    const uint64_t o = create(type);
    for (auto [a, t] : tensors) set_desc(o, a, {t});
    g.on_finalize(o);
    return o;
  }
  uint64_t graph(std::vector<uint64_t> ops) {
    const uint64_t gr = create(desc::kOperationGraph);
    set_desc(gr, attr::kOperationGraphOps, ops);
    g.on_finalize(gr);
    return gr;
  }
  // The frontend's path: heuristics over the graph, engine configs it creates and cuDNN fills
  // (GetAttribute), one config into a plan.
  uint64_t plan_by_heuristics(uint64_t graph) {
    const uint64_t heur = create(desc::kEngineHeur);
    set_desc(heur, attr::kEngineHeurOperationGraph, {graph});
    g.on_finalize(heur);
    const std::vector<uint64_t> cfgs = {create(desc::kEngineCfg), create(desc::kEngineCfg)};
    g.on_get(heur, attr::kEngineHeurResults, type::kBackendDescriptor, 2, cfgs.data());
    const uint64_t plan = create(desc::kExecutionPlan);
    set_desc(plan, attr::kPlanEngineConfig, {cfgs[1]});
    g.on_finalize(plan);
    g.on_destroy(heur);  // the frontend drops them once the plan is built
    g.on_destroy(cfgs[0]);
    return plan;
  }
  uint64_t pack(std::vector<int64_t> uids, std::vector<uint64_t> ptrs) {
    const uint64_t vp = create(desc::kVariantPack);
    set_i64(vp, attr::kVariantPackUniqueIds, uids);
    g.on_set(vp, attr::kVariantPackDataPointers, type::kVoidPtr, ptrs.size(), ptrs.data());
    void* ws = reinterpret_cast<void*>(0x77000);
    g.on_set(vp, attr::kVariantPackWorkspace, type::kVoidPtr, 1, &ws);
    g.on_finalize(vp);
    return vp;
  }
};

// The unified SDPA_FWD graph PyTorch 2.11 builds for fp16 inference (no mask, no stats).
uint64_t unified_sdpa(Builder& b, bool stats = false) {
  const uint64_t q = b.tensor(kQ, data::kHalf, kBhsd, kDense), k = b.tensor(kK, data::kHalf, kBhsd, kDense),
                 v = b.tensor(kV, data::kHalf, kBhsd, kDense), o = b.tensor(kO, data::kHalf, kBhsd, kDense),
                 scale = b.tensor(kScale, data::kFloat, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  std::vector<std::pair<int, uint64_t>> attrs = {{2800, q}, {2801, k}, {2802, v}, {2803, o}, {2805, scale}};
  if (stats) attrs.push_back({2804, b.tensor(kLse, data::kFloat, {B, H, S, 1}, {H * S, S, 1, 1})});
  return b.graph({b.op(desc::kOpSdpaForward, attrs)});
}

TEST(CudnnGraph, UnifiedSdpaForwardMapsOutputAndInputs) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t plan = b.plan_by_heuristics(unified_sdpa(b));
  const uint64_t vp = b.pack({kQ, kK, kV, kO, kScale}, {kPtrQ, kPtrK, kPtrV, kPtrO, kHostScale});
  const Execution e = g.execution(plan, vp);
  ASSERT_EQ(e.why, nullptr);
  EXPECT_EQ(e.ops, "SDPA_FWD");
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(e.outputs[0].uid, kO);
  EXPECT_EQ(e.outputs[0].ptr, kPtrO);
  EXPECT_EQ(e.outputs[0].extent.dtype, DType::f16);
  EXPECT_EQ(e.outputs[0].extent.elements, static_cast<uint64_t>(B * H * S * D));
  // Q, K, V; the by-value scale is a host scalar, never device memory.
  std::vector<uint64_t> in;
  for (const GraphBuffer& x : e.inputs) in.push_back(x.ptr);
  EXPECT_EQ(in, (std::vector<uint64_t>{kPtrQ, kPtrK, kPtrV}));
  for (const GraphBuffer& x : e.inputs) EXPECT_TRUE(x.extent.ok) << x.extent.why;
}

TEST(CudnnGraph, StatsComeAfterTheAttentionOutput) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t plan = b.plan_by_heuristics(unified_sdpa(b, true));
  const Execution e = g.execution(plan, b.pack({kQ, kK, kV, kO, kScale, kLse},
                                               {kPtrQ, kPtrK, kPtrV, kPtrO, kHostScale, kPtrLse}));
  ASSERT_EQ(e.why, nullptr);
  ASSERT_EQ(e.outputs.size(), 2u);
  EXPECT_EQ(e.outputs[0].uid, kO);
  EXPECT_EQ(e.outputs[1].uid, kLse);  // logsumexp, float, [b, h, s, 1]
  EXPECT_EQ(e.outputs[1].extent.dtype, DType::f32);
  EXPECT_EQ(e.outputs[1].extent.elements, static_cast<uint64_t>(B * H * S));
}

// The composite lowering (bf16, or a bias): S = Q K^T, scaled, masked by the bias, softmax by
// reductions and pointwise ops, O = P V, with the training Stats as a non-virtual output.
TEST(CudnnGraph, CompositeSdpaKeepsOnlyNonVirtualTensors) {
  CudnnGraphs g;
  Builder b{g};
  const int bf = data::kBfloat16, f = data::kFloat;
  const std::vector<int64_t> scores = {B, H, S, S}, scores_dense = {H * S * S, S * S, S, 1};
  const std::vector<int64_t> row = {B, H, S, 1}, row_dense = {H * S, S, 1, 1};
  int64_t vuid = 100;
  auto virt = [&](std::vector<int64_t> d, std::vector<int64_t> s) { return b.tensor(vuid++, f, d, s, true); };
  const uint64_t q = b.tensor(kQ, bf, kBhsd, kDense), k = b.tensor(kK, bf, {B, H, D, S}, {H * S * D, S * D, 1, D}),
                 v = b.tensor(kV, bf, kBhsd, kDense), o = b.tensor(kO, bf, kBhsd, kDense),
                 scale = b.tensor(kScale, f, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true),
                 bias = b.tensor(kBias, bf, {B, H, S, S}, scores_dense),
                 stats = b.tensor(kLse, f, row, row_dense);
  const uint64_t s1 = virt(scores, scores_dense), s2 = virt(scores, scores_dense), s3 = virt(scores, scores_dense),
                 mx = virt(row, row_dense), s4 = virt(scores, scores_dense), ex = virt(scores, scores_dense),
                 sum = virt(row, row_dense), p = virt(scores, scores_dense);
  const std::vector<uint64_t> ops = {
      b.op(desc::kOpMatmul, {{1520, q}, {1521, k}, {1522, s1}}),
      b.op(desc::kOpPointwise, {{751, s1}, {752, scale}, {753, s2}}),
      b.op(desc::kOpPointwise, {{751, s2}, {752, bias}, {753, s3}}),
      b.op(desc::kOpReduction, {{1610, s3}, {1611, mx}}),
      b.op(desc::kOpPointwise, {{751, s3}, {752, mx}, {753, s4}}),
      b.op(desc::kOpPointwise, {{751, s4}, {753, ex}}),
      b.op(desc::kOpReduction, {{1610, ex}, {1611, sum}}),
      b.op(desc::kOpPointwise, {{751, mx}, {752, sum}, {753, stats}}),  // log-sum-exp, written out
      b.op(desc::kOpPointwise, {{751, ex}, {752, sum}, {753, p}}),
      b.op(desc::kOpMatmul, {{1520, p}, {1521, v}, {1522, o}}),
  };
  const uint64_t plan = b.plan_by_heuristics(b.graph(ops));
  const Execution e = g.execution(plan, b.pack({kQ, kK, kV, kO, kScale, kBias, kLse},
                                               {kPtrQ, kPtrK, kPtrV, kPtrO, kHostScale, 0xf0000, kPtrLse}));
  ASSERT_EQ(e.why, nullptr);
  EXPECT_EQ(e.ops, "MATMUL+POINTWISE+REDUCTION");
  std::vector<int64_t> outs, ins;
  for (const GraphBuffer& x : e.outputs) outs.push_back(x.uid);
  for (const GraphBuffer& x : e.inputs) ins.push_back(x.uid);
  EXPECT_EQ(outs, (std::vector<int64_t>{kLse, kO}));
  EXPECT_EQ(ins, (std::vector<int64_t>{kQ, kK, kBias, kV}));  // K^T is K in another order: dense
  for (const GraphBuffer& x : e.inputs) EXPECT_TRUE(x.extent.ok) << x.uid << ": " << x.extent.why;
}

TEST(CudnnGraph, EnginePathAndEngineConfigFromGetAttribute) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t graph = unified_sdpa(b);
  const uint64_t engine = b.create(desc::kEngine);
  b.set_desc(engine, attr::kEngineOperationGraph, {graph});
  g.on_finalize(engine);
  const uint64_t cfg = b.create(desc::kEngineCfg);
  b.set_desc(cfg, attr::kEngineCfgEngine, {engine});
  g.on_finalize(cfg);
  // A config's engine read back (knob filtering) is the same graph's.
  const uint64_t engine2 = b.create(desc::kEngine);
  g.on_get(cfg, attr::kEngineCfgEngine, type::kBackendDescriptor, 1, &engine2);
  const uint64_t cfg2 = b.create(desc::kEngineCfg);
  b.set_desc(cfg2, attr::kEngineCfgEngine, {engine2});
  g.on_finalize(cfg2);
  const uint64_t plan = b.create(desc::kExecutionPlan);
  b.set_desc(plan, attr::kPlanEngineConfig, {cfg2});
  g.on_finalize(plan);
  g.on_destroy(graph);  // the graph's tensors and operations may go: the plan keeps what it needs
  const Execution e = g.execution(plan, b.pack({kQ, kK, kV, kO, kScale}, {kPtrQ, kPtrK, kPtrV, kPtrO, kHostScale}));
  ASSERT_EQ(e.why, nullptr);
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(e.outputs[0].ptr, kPtrO);
}

const char* refusal(std::vector<int64_t> uids, std::vector<uint64_t> ptrs, bool overrides = false) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t plan = b.plan_by_heuristics(unified_sdpa(b));
  const uint64_t vp = b.pack(uids, ptrs);
  if (overrides) b.set_i64(vp, attr::kVariantPackOverrideUniqueIds, {kQ});
  return g.execution(plan, vp).why;
}

TEST(CudnnGraph, VariantPackRefusals) {
  EXPECT_STREQ(refusal({kQ, kK, kV, kScale}, {kPtrQ, kPtrK, kPtrV, kHostScale}),
               "an output UID missing from the variant pack");
  EXPECT_STREQ(refusal({kQ, kK, kV, kO}, {kPtrQ, kPtrK, kPtrV}), "variant pack UIDs and pointers differ in number");
  EXPECT_STREQ(refusal({kQ, kK, kV, kO}, {kPtrQ, kPtrK, kPtrV, kPtrO}, true), "the variant pack overrides shapes");
  EXPECT_EQ(refusal({kQ, kK, kV, kO}, {kPtrQ, kPtrK, kPtrV, kPtrO}), nullptr);  // the scale's absence is cuDNN's
}

TEST(CudnnGraph, AnInputMissingFromThePackIsNotJudged) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t plan = b.plan_by_heuristics(unified_sdpa(b));
  const Execution e = g.execution(plan, b.pack({kQ, kV, kO}, {kPtrQ, kPtrV, kPtrO}));
  ASSERT_EQ(e.why, nullptr);
  ASSERT_EQ(e.inputs.size(), 3u);
  EXPECT_FALSE(e.inputs[1].extent.ok);
  EXPECT_STREQ(e.inputs[1].extent.why, "UID missing from the variant pack");
}

TEST(CudnnGraph, GraphRefusals) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t x = b.tensor(10, data::kFloat, {4, 4}, {4, 1}), y = b.tensor(11, data::kFloat, {4, 4}, {4, 1});
  auto why = [&](uint64_t graph) { return g.execution(b.plan_by_heuristics(graph), b.pack({10, 11}, {1, 2})).why; };
  // A signal (writes a flag) has no table row: its graph is refused.
  EXPECT_STREQ(why(b.graph({b.op(28, {{1903, x}, {1904, y}})})), "an operation type nanscope does not map");
  // A tensor set through an attribute the table does not list (matmul's 1599).
  EXPECT_STREQ(why(b.graph({b.op(desc::kOpMatmul, {{1520, x}, {1599, y}})})), "a tensor attribute nanscope does not map");
  // A padded output: not a dense box, never a superset.
  const uint64_t padded = b.tensor(12, data::kFloat, {4, 4}, {8, 1});
  EXPECT_STREQ(g.execution(b.plan_by_heuristics(b.graph({b.op(desc::kOpReduction, {{1610, x}, {1611, padded}})})),
                           b.pack({10, 12}, {1, 2}))
                   .why,
               "strides not a dense box (broadcast or padded)");
  // Integer outputs only (an index): nothing to scan.
  const uint64_t idx = b.tensor(13, 4 /* INT32 */, {4, 4}, {4, 1});
  EXPECT_STREQ(g.execution(b.plan_by_heuristics(b.graph({b.op(desc::kOpReduction, {{1610, x}, {1611, idx}})})),
                           b.pack({10, 13}, {1, 2}))
                   .why,
               "no float output");
  // A descriptor created before nanscope attached.
  const uint64_t op = b.create(desc::kOpReduction);
  b.set_desc(op, 1610, {x});
  b.set_desc(op, 1611, {0xdead00});
  g.on_finalize(op);
  EXPECT_STREQ(why(b.graph({op})), "an operation names a descriptor nanscope did not record");
}

TEST(CudnnGraph, PlanRefusals) {
  CudnnGraphs g;
  Builder b{g};
  const uint64_t vp = b.pack({kQ, kK, kV, kO}, {kPtrQ, kPtrK, kPtrV, kPtrO});
  EXPECT_STREQ(g.execution(0x42, vp).why, "execution plan not recorded");
  const uint64_t plan = b.plan_by_heuristics(unified_sdpa(b));
  EXPECT_STREQ(g.execution(plan, 0x43).why, "variant pack not recorded");
  const uint64_t loaded = b.create(desc::kExecutionPlan);
  const char json[] = "{}";
  g.on_set(loaded, attr::kPlanJson, 24 /* CHAR */, sizeof(json), json);
  g.on_finalize(loaded);
  EXPECT_STREQ(g.execution(loaded, vp).why, "an execution plan loaded from its JSON form");
  const uint64_t bare = b.create(desc::kExecutionPlan);
  g.on_finalize(bare);
  EXPECT_STREQ(g.execution(bare, vp).why, "the plan's operation graph is not known");
  g.on_destroy(plan);
  EXPECT_STREQ(g.execution(plan, vp).why, "execution plan not recorded");
}

TEST(CudnnGraph, TensorExtent) {
  auto extent = [](int dtype, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    TensorInfo t;
    t.data_type = dtype, t.dims = std::move(dims), t.strides = std::move(strides);
    return tensor_extent(t);
  };
  EXPECT_EQ(extent(data::kHalf, kBhsd, kDense).elements, static_cast<uint64_t>(B * H * S * D));
  // BSHD memory seen as BHSD (a transposed view): still dense.
  const TensorExtent bshd = extent(data::kBfloat16, kBhsd, {S * H * D, D, H * D, 1});
  EXPECT_TRUE(bshd.ok);
  EXPECT_EQ(bshd.dtype, DType::bf16);
  EXPECT_EQ(bshd.elements, static_cast<uint64_t>(B * H * S * D));
  // Size-1 dims take any stride (PyTorch's fixSizeOneDimStrideSDPA leaves them so).
  EXPECT_EQ(extent(data::kFloat, {1, H, S, 1}, {0, S, 1, 7}).elements, static_cast<uint64_t>(H * S));
  EXPECT_STREQ(extent(data::kHalf, {B, H, S, S}, {0, 0, S, 1}).why, "strides not a dense box (broadcast or padded)");
  EXPECT_STREQ(extent(data::kHalf, {B, 3}, {4, 1}).why, "strides not a dense box (broadcast or padded)");
  EXPECT_STREQ(extent(data::kHalf, {4, 4}, {4, 4}).why, "strides not a dense box (broadcast or padded)");  // overlap
  EXPECT_STREQ(extent(10 /* INT64 */, {4}, {1}).why, "not a float type");
  EXPECT_STREQ(extent(-1, {4}, {1}).why, "tensor data type not set");
  EXPECT_STREQ(extent(data::kFloat, {4, 4}, {1}).why, "tensor dims or strides unknown");
  EXPECT_STREQ(extent(data::kFloat, {4, 0}, {1, 1}).why, "empty tensor");
  EXPECT_STREQ(extent(data::kFloat, {1ll << 40, 1ll << 40}, {1ll << 40, 1}).why, "tensor size overflows");
  EXPECT_EQ(extent(data::kFp8E4m3, {8}, {1}).dtype, DType::f8e4m3);
  TensorInfo t;
  t.data_type = data::kHalf, t.dims = {4}, t.strides = {1};
  t.vector_count = 8;
  EXPECT_STREQ(tensor_extent(t).why, "vectorized tensor layout");
  t.vector_count = 1, t.reordering = 1;  // F16x16
  EXPECT_STREQ(tensor_extent(t).why, "reordered tensor layout");
  t.reordering = 0, t.ragged = true;
  EXPECT_STREQ(tensor_extent(t).why, "ragged tensor (offsets)");
}

TEST(CudnnGraph, StoreIsBoundedAndForgets) {
  CudnnGraphs g;
  for (uint64_t h = 1; h <= CudnnGraphs::kMaxDescriptors + 5; ++h) g.on_create(h, desc::kTensor);
  EXPECT_EQ(g.size(), CudnnGraphs::kMaxDescriptors);
  EXPECT_EQ(g.dropped(), 5u);
  for (uint64_t h = 1; h <= CudnnGraphs::kMaxDescriptors; ++h) g.on_destroy(h);
  EXPECT_EQ(g.size(), 0u);
  g.on_create(1, 7);   // a knob choice: never part of a graph, takes no room
  g.on_create(2, 34);  // a kernel cache
  EXPECT_EQ(g.size(), 0u);
}

TEST(CudnnGraph, ConcurrentBuildersDoNotInterfere) {
  CudnnGraphs g;
  std::vector<std::thread> threads;
  std::atomic<int> mapped{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      Builder b{g, 0x100000000ull * (i + 1)};
      for (int n = 0; n < 50; ++n) {
        const uint64_t plan = b.plan_by_heuristics(unified_sdpa(b));
        const uint64_t vp = b.pack({kQ, kK, kV, kO}, {kPtrQ, kPtrK, kPtrV, kPtrO});
        if (!g.execution(plan, vp).why) ++mapped;
        g.on_destroy(vp);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mapped.load(), 200);
}

#if HAVE_CUDNN_HEADERS
// Every row of the operation table against cuDNN's own names: the role each attribute has, and
// no tensor attribute of a mapped operation left out.
TEST(CudnnGraph, OperationTableMatchesTheHeader) {
  const Role I = Role::input, O = Role::output;
  const std::vector<std::pair<int, std::set<std::pair<int, Role>>>> want = {
      {CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, O}, {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, O},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, I}, {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, I}, {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_BLOCK_MASK_DESC, I}, {CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_VDESC, I}, {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, I}}},
      {CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC, O}, {CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, O},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC, O}, {CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, I}, {CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC, I}, {CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC, I}, {CUDNN_ATTR_OPERATION_SDPA_BWD_SEQ_LEN_QDESC, I},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_SEQ_LEN_KVDESC, I}, {CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, I}}},
      {CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_MATMUL_CDESC, O}, {CUDNN_ATTR_OPERATION_MATMUL_ADESC, I},
        {CUDNN_ATTR_OPERATION_MATMUL_BDESC, I}, {CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, I},
        {CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, I}, {CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, I}}},
      {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_POINTWISE_YDESC, O}, {CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, O},
        {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, I}, {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, I},
        {CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, I}, {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, I}}},
      {CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_REDUCTION_YDESC, O}, {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, I}}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, O}, {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, I},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, I}}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, O}, {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, I},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, I}}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, O}, {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, I},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, I}}},
      {CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, O}, {CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, O},
        {CUDNN_ATTR_OPERATION_GENSTATS_XDESC, I}}},
      {CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_RESHAPE_YDESC, O}, {CUDNN_ATTR_OPERATION_RESHAPE_XDESC, I}}},
      {CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_RNG_YDESC, O}, {CUDNN_ATTR_OPERATION_RNG_SEED, I},
        {CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, I}}},
      {CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, O}, {CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, O},
        {CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, O},
        {CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC, O},
        {CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC, O}, {CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, I},
        {CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, I}, {CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, I},
        {CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, I}, {CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, I},
        {CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC, I},
        {CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC, I}}},
      {CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, O}, {CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, O},
        {CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, O}, {CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, I},
        {CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, I}, {CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, I},
        {CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, I}, {CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, I},
        {CUDNN_ATTR_OPERATION_NORM_BWD_EPSILON_DESC, I}}},
      {CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_CONCAT_OUTPUT_DESC, O}, {CUDNN_ATTR_OPERATION_CONCAT_INPUT_DESCS, I}}},
  };
  for (const auto& [type, attrs] : want) {
    const OpForm* f = op_form(type);
    ASSERT_NE(f, nullptr) << type;
    std::set<std::pair<int, Role>> got;
    for (uint32_t i = 0; i < f->attr_count; ++i) got.insert({f->attrs[i].attr, f->attrs[i].role});
    EXPECT_EQ(got, attrs) << f->name;
  }
  EXPECT_EQ(op_form(CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR), nullptr);  // refused, never guessed
}
#endif

}  // namespace

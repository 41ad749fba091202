// Triton decoder: the TTIR parser on real Triton 3.6 cache output (fixtures/triton/README.md),
// the launch decode with its layout gate, and the cache lookups by path and by image.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "decode/triton.hpp"
#include "decode/triton_cache.hpp"

using namespace nanscope;
using namespace nanscope::decode;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(NANSCOPE_TRITON_FIXTURES) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TritonSignature parsed(const std::string& name) {
  ParsedTtir p = parse_ttir(fixture(name));
  EXPECT_TRUE(p.signature.has_value()) << name << ": " << p.error;
  return p.signature ? *p.signature : TritonSignature{};
}

// One launch's parameter bytes, laid out as the driver reports them.
struct Launch {
  std::vector<std::vector<char>> bytes;
  std::vector<const char*> ptrs;
  Layout layout;
  LaunchView view;
  template <typename T>
  Launch& add(T v) {
    std::vector<char> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    layout.emplace_back(layout.empty() ? 0 : layout.back().first + layout.back().second, uint32_t{sizeof(T)});
    bytes.push_back(std::move(b));
    return *this;
  }
  Launch& scratch() { return add<uint64_t>(0).add<uint64_t>(0); }
  const LaunchView& at(uint32_t grid_x) {
    ptrs.clear();
    for (const auto& b : bytes) ptrs.push_back(b.data());
    view.params = ptrs.data();
    view.count = static_cast<uint32_t>(ptrs.size());
    view.grid[0] = grid_x;
    return view;
  }
};

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/nanscope_triton_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& rel, const std::string& data) const {
    const std::string full = path + "/" + rel;
    const std::size_t slash = full.rfind('/');
    ::mkdir(full.substr(0, slash).c_str(), 0755);
    std::ofstream(full, std::ios::binary) << data;
    return full;
  }
};

}  // namespace

TEST(TritonTtir, InductorPointwiseStaticShape) {
  const TritonSignature s = parsed("poi_static.ttir");
  EXPECT_EQ(s.name, "triton_poi_fused_add_mul_0");
  ASSERT_EQ(s.args.size(), 4u);  // XBLOCK is constexpr: not in the prototype
  EXPECT_EQ(s.driver_params(), 6u);
  EXPECT_TRUE(s.named());
  EXPECT_TRUE(s.inductor());
  EXPECT_TRUE(s.unresolved.empty()) << s.unresolved;
  const char* names[] = {"in_ptr0", "in_ptr1", "out_ptr0", "xnumel"};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s.args[i].name, names[i]);
  EXPECT_EQ(s.args[0].kind, TritonArgKind::pointer);
  EXPECT_EQ(s.args[0].dtype, DType::bf16);
  EXPECT_EQ(s.args[0].size, 8u);
  EXPECT_EQ(s.args[3].kind, TritonArgKind::scalar);
  EXPECT_EQ(s.args[3].type, "i32");
  EXPECT_EQ(s.args[3].size, 4u);
  EXPECT_TRUE(s.args[0].read && !s.args[0].written);
  EXPECT_TRUE(s.args[1].read && !s.args[1].written);
  EXPECT_TRUE(s.args[2].written && !s.args[2].read && !s.args[2].atomic);
  EXPECT_EQ(s.args[2].role, InductorRole::out_ptr);
  // tl.store(out_ptr0 + x0, tmp, None): every program writes its whole block.
  EXPECT_EQ(s.args[2].extent.block, 1024u);
  EXPECT_EQ(s.args[2].extent.bound, StoreExtent::Bound::none);
}

TEST(TritonTtir, InductorPointwiseMaskedByXnumel) {
  const TritonSignature s = parsed("poi_masked.ttir");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_EQ(s.args[1].dtype, DType::f32);
  EXPECT_TRUE(s.args[2].written);
  EXPECT_EQ(s.args[2].extent.block, 512u);
  EXPECT_EQ(s.args[2].extent.bound, StoreExtent::Bound::arg);
  EXPECT_EQ(s.args[2].extent.bound_arg, 3u);
}

TEST(TritonTtir, StoredParamsAreTheWrittenPointersAndTheScratch) {
  const TritonSignature s = parsed("poi_masked.ttir");  // in_ptr0, in_ptr1 loaded; out_ptr0 stored; xnumel
  const std::vector<bool> stored = triton_stored_params(s, s.args.size() + 2);
  EXPECT_EQ(stored, (std::vector<bool>{false, false, true, false, true, true}));
  EXPECT_TRUE(triton_stored_params(s, s.args.size()).empty());  // not the driver's layout: no claim
  TritonSignature untied = s;
  untied.unresolved = "a store the TTIR does not tie";
  EXPECT_TRUE(triton_stored_params(untied, s.args.size() + 2).empty());
}

TEST(TritonTtir, Triton33ArgumentsWithoutNames) {
  const TritonSignature s = parsed("poi_masked_triton33.ttir");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_FALSE(s.named());
  EXPECT_FALSE(s.inductor());
  for (const TritonArg& a : s.args) EXPECT_EQ(a.name, "");
  // The stores alone say what is written.
  EXPECT_FALSE(s.args[0].written);
  EXPECT_FALSE(s.args[1].written);
  EXPECT_TRUE(s.args[2].written);
  EXPECT_EQ(s.args[2].extent.block, 512u);
  EXPECT_EQ(s.args[2].extent.bound_arg, 3u);
}

TEST(TritonTtir, InductorLoopedReduction) {
  const TritonSignature s = parsed("red_rmsnorm.ttir");
  EXPECT_EQ(s.name, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_2");
  ASSERT_EQ(s.args.size(), 6u);  // XBLOCK, R0_BLOCK constexpr
  EXPECT_TRUE(s.unresolved.empty()) << s.unresolved;
  const TritonArg& rstd = s.args[0];
  EXPECT_EQ(rstd.role, InductorRole::in_out_ptr);
  EXPECT_TRUE(rstd.written);
  // XBLOCK=1: stored at in_out_ptr0 + pid, masked by pid < xnumel.
  EXPECT_EQ(rstd.extent.block, 1u);
  EXPECT_EQ(rstd.extent.bound, StoreExtent::Bound::arg);
  EXPECT_EQ(rstd.extent.bound_arg, 4u);
  EXPECT_TRUE(s.args[1].read && !s.args[1].written);
  EXPECT_TRUE(s.args[2].read && !s.args[2].written);
  const TritonArg& out = s.args[3];
  EXPECT_TRUE(out.written);
  EXPECT_EQ(out.dtype, DType::bf16);
  EXPECT_EQ(out.extent.block, 0u);  // stored inside the r0 loop: the block map decides
}

TEST(TritonTtir, InductorPersistentReduction2D) {
  const TritonSignature s = parsed("per_sum.ttir");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_TRUE(s.args[1].written);
  EXPECT_EQ(s.args[1].extent.block, 8u);  // xoffset + arange(XBLOCK)[:, None]
  EXPECT_EQ(s.args[1].extent.bound_arg, 2u);
}

TEST(TritonTtir, UserKernelMaskedStoreAndAtomic) {
  for (const char* file : {"user_scale_rows.ttir", "user_scale_rows.source"}) {
    SCOPED_TRACE(file);
    const TritonSignature s = parsed(file);
    EXPECT_EQ(s.name, "scale_rows_kernel");
    ASSERT_EQ(s.args.size(), 6u);
    EXPECT_TRUE(s.unresolved.empty()) << s.unresolved;
    EXPECT_FALSE(s.inductor());
    EXPECT_TRUE(s.args[0].read && !s.args[0].written);
    EXPECT_TRUE(s.args[1].written && !s.args[1].atomic);
    EXPECT_EQ(s.args[1].dtype, DType::f16);
    EXPECT_EQ(s.args[1].extent.block, 0u);  // y_ptr + row*stride + cols: not an Inductor offset
    EXPECT_TRUE(s.args[2].written && s.args[2].atomic);
    EXPECT_EQ(s.args[2].dtype, DType::none);  // an i32 counter
    EXPECT_EQ(s.args[4].type, "i64");
    EXPECT_EQ(s.args[4].size, 8u);
    EXPECT_EQ(s.args[5].type, "f32");
    EXPECT_EQ(s.args[5].size, 4u);
  }
}

TEST(TritonTtir, UserKernelLoopCarriedPointerAndBitcastAtomic) {
  const TritonSignature s = parsed("user_accumulate.ttir");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_TRUE(s.unresolved.empty()) << s.unresolved;
  EXPECT_TRUE(s.args[0].read && !s.args[0].written);
  EXPECT_TRUE(s.args[1].written);  // through scf.for iter_args
  EXPECT_EQ(s.args[1].extent.block, 0u);
  EXPECT_TRUE(s.args[2].written && s.args[2].atomic);  // tt.bitcast f32 -> i32, atomic_rmw
  EXPECT_EQ(s.args[2].dtype, DType::f32);
}

TEST(TritonTtir, TypeTables) {
  EXPECT_EQ(ttir_dtype("f32"), DType::f32);
  EXPECT_EQ(ttir_dtype("f16"), DType::f16);
  EXPECT_EQ(ttir_dtype("bf16"), DType::bf16);
  EXPECT_EQ(ttir_dtype("f64"), DType::f64);
  EXPECT_EQ(ttir_dtype("f8E4M3FN"), DType::f8e4m3);
  EXPECT_EQ(ttir_dtype("f8E5M2"), DType::f8e5m2);
  EXPECT_EQ(ttir_dtype("f8E4M3B11FNUZ"), DType::none);
  EXPECT_EQ(ttir_dtype("i32"), DType::none);
  EXPECT_EQ(ttir_dtype("i1"), DType::none);
  EXPECT_EQ(ttir_scalar_size("i1"), 1u);
  EXPECT_EQ(ttir_scalar_size("i16"), 2u);
  EXPECT_EQ(ttir_scalar_size("i64"), 8u);
  EXPECT_EQ(ttir_scalar_size("bf16"), 2u);
  EXPECT_EQ(ttir_scalar_size("f64"), 8u);
  EXPECT_EQ(ttir_scalar_size("!tt.tensordesc<tensor<64x64xf16>>"), 0u);
  EXPECT_EQ(inductor_role("in_ptr0"), InductorRole::in_ptr);
  EXPECT_EQ(inductor_role("out_ptr12"), InductorRole::out_ptr);
  EXPECT_EQ(inductor_role("in_out_ptr1"), InductorRole::in_out_ptr);
  EXPECT_EQ(inductor_role("ws_ptr"), InductorRole::ws_ptr);
  EXPECT_EQ(inductor_role("out_ptr"), InductorRole::none);
  EXPECT_EQ(inductor_role("out_ptrx"), InductorRole::none);
  EXPECT_EQ(inductor_role("x_ptr"), InductorRole::none);
}

TEST(TritonDecode, MaskedPointwiseExtentIsXnumel) {
  const TritonSignature s = parsed("poi_masked.ttir");
  Launch l;
  l.add<uint64_t>(0x7000'0000'0000).add<uint64_t>(0x7000'0001'0000).add<uint64_t>(0x7000'0002'0000).add<int32_t>(1000).scratch();
  Decoded d = decode_triton(s, l.layout, l.at(2));
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].ptr, 0x7000'0002'0000u);
  EXPECT_EQ(d.writes[0].arg, 2u);
  EXPECT_EQ(d.writes[0].dtype, DType::f32);
  EXPECT_EQ(d.writes[0].elem_size, 4u);
  EXPECT_EQ(d.writes[0].elements, 1000u);  // min(2 * 512, xnumel)
  EXPECT_EQ(d.writes[0].span_bytes, 4000u);
  EXPECT_FALSE(d.writes[0].extent_from_block);
  ASSERT_EQ(d.read_count, 2u);
  EXPECT_EQ(d.reads[0], 0x7000'0000'0000u);
  EXPECT_EQ(d.reads[1], 0x7000'0001'0000u);
  // Loads carry the pointer's TTIR element type; the extent is left to the block map.
  EXPECT_EQ(d.read_dtypes[0], DType::bf16);
  EXPECT_EQ(d.read_dtypes[1], DType::f32);
  EXPECT_EQ(d.read_elements[0], 0u);
  EXPECT_EQ(d.read_elements[1], 0u);
  // A grid smaller than xnumel writes only what it covers.
  d = decode_triton(s, l.layout, l.at(1));
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].elements, 512u);
}

TEST(TritonDecode, IntegerPointeesAreNoReads) {
  // poi_masked.ttir with in_ptr0 retyped to i64 (an index tensor, as in an Inductor gather):
  // a load from it holds no NaN, so only in_ptr1 (f32) is a read.
  std::string text = fixture("poi_masked.ttir");
  for (const std::string from : {"!tt.ptr<bf16>", "tensor<512xbf16>"}) {
    const std::string to = from[0] == '!' ? "!tt.ptr<i64>" : "tensor<512xi64>";
    for (std::size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  }
  ParsedTtir p = parse_ttir(text);
  ASSERT_TRUE(p.signature.has_value()) << p.error;
  EXPECT_TRUE(p.signature->args[0].read);
  EXPECT_EQ(p.signature->args[0].type, "i64");
  Launch l;
  l.add<uint64_t>(0x1000).add<uint64_t>(0x2000).add<uint64_t>(0x3000).add<int32_t>(1000).scratch();
  const Decoded d = decode_triton(*p.signature, l.layout, l.at(2));
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.read_count, 1u);
  EXPECT_EQ(d.reads[0], 0x2000u);
  EXPECT_EQ(d.read_dtypes[0], DType::f32);
}

TEST(TritonDecode, StaticPointwiseExtentIsGridTimesBlock) {
  const TritonSignature s = parsed("poi_static.ttir");
  Launch l;
  l.add<uint64_t>(0x1000).add<uint64_t>(0x2000).add<uint64_t>(0x3000).add<int32_t>(32768).scratch();
  const Decoded d = decode_triton(s, l.layout, l.at(32));
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].elements, 32768u);
  EXPECT_EQ(d.writes[0].span_bytes, 65536u);
  EXPECT_EQ(d.writes[0].dtype, DType::bf16);
}

TEST(TritonDecode, StaticShapeMaskedByAConstant) {
  const TritonSignature s = parsed("poi_const_masked.ttir");  // xnumel = 1000 in the body
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[1].extent.block, 256u);
  EXPECT_EQ(s.args[1].extent.bound, StoreExtent::Bound::constant);
  EXPECT_EQ(s.args[1].extent.bound_value, 1000);
  Launch l;
  l.add<uint64_t>(0x1000).add<uint64_t>(0x2000).add<int32_t>(1000).scratch();
  const Decoded d = decode_triton(s, l.layout, l.at(4));
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].elements, 1000u);  // not 4 * 256
  EXPECT_EQ(d.writes[0].span_bytes, 2000u);
  EXPECT_EQ(d.writes[0].dtype, DType::f16);
}

TEST(TritonDecode, SixtyFourBitIndexing) {
  const TritonSignature s = parsed("poi_i64.ttir");
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[2].size, 8u);
  EXPECT_EQ(s.args[1].extent.block, 1024u);
  EXPECT_EQ(s.args[1].extent.bound_arg, 2u);
  Launch l;
  l.add<uint64_t>(0x1000).add<uint64_t>(0x2000).add<int64_t>(int64_t{3} << 31).scratch();
  const Decoded d = decode_triton(s, l.layout, l.at(1u << 23));
  ASSERT_EQ(d.write_count, 1u);
  EXPECT_EQ(d.writes[0].elements, uint64_t{3} << 31);  // min(2^33, 3 * 2^31)
}

TEST(TritonDecode, UnrecognisedExtentComesFromTheBlockMap) {
  const TritonSignature s = parsed("user_scale_rows.ttir");
  Launch l;
  l.add<uint64_t>(0x1000).add<uint64_t>(0x2000).add<uint64_t>(0x3000).add<int32_t>(1000).add<int64_t>(1024).add<float>(2.f).scratch();
  const Decoded d = decode_triton(s, l.layout, l.at(64));
  ASSERT_EQ(d.status, Status::decoded) << d.reason;
  ASSERT_EQ(d.write_count, 1u);  // the i32 counter holds no NaN
  EXPECT_EQ(d.writes[0].ptr, 0x2000u);
  EXPECT_TRUE(d.writes[0].extent_from_block);
  EXPECT_EQ(d.writes[0].elements, 0u);
  EXPECT_EQ(d.writes[0].span_bytes, 0u);
  EXPECT_EQ(d.writes[0].elem_size, 2u);
  ASSERT_EQ(d.read_count, 1u);
  EXPECT_EQ(d.reads[0], 0x1000u);
  EXPECT_EQ(d.read_dtypes[0], DType::f16);  // a user kernel's loaded x_ptr: !tt.ptr<f16>
}

TEST(TritonDecode, LayoutGate) {
  const TritonSignature s = parsed("poi_masked.ttir");
  auto status = [&](Launch& l) { return decode_triton(s, l.layout, l.at(1)).status; };
  Launch exact;
  exact.add<uint64_t>(1).add<uint64_t>(2).add<uint64_t>(3).add<int32_t>(4).scratch();
  EXPECT_EQ(status(exact), Status::decoded);
  Launch no_scratch;
  no_scratch.add<uint64_t>(1).add<uint64_t>(2).add<uint64_t>(3).add<int32_t>(4);
  EXPECT_EQ(status(no_scratch), Status::layout_mismatch);
  Launch one_scratch;
  one_scratch.add<uint64_t>(1).add<uint64_t>(2).add<uint64_t>(3).add<int32_t>(4).add<uint64_t>(0);
  EXPECT_EQ(status(one_scratch), Status::layout_mismatch);
  Launch extra;
  extra.add<uint64_t>(1).add<uint64_t>(2).add<uint64_t>(3).add<int32_t>(4).scratch().add<uint64_t>(0);
  EXPECT_EQ(status(extra), Status::layout_mismatch);
  Launch narrow_pointer;
  narrow_pointer.add<uint64_t>(1).add<uint32_t>(2).add<uint64_t>(3).add<int32_t>(4).scratch();
  EXPECT_EQ(status(narrow_pointer), Status::layout_mismatch);
  Launch wide_scalar;
  wide_scalar.add<uint64_t>(1).add<uint64_t>(2).add<uint64_t>(3).add<int64_t>(4).scratch();
  const Decoded d = decode_triton(s, wide_scalar.layout, wide_scalar.at(1));
  EXPECT_EQ(d.status, Status::layout_mismatch);
  EXPECT_NE(d.reason.find("size"), std::string_view::npos);
  Launch negative;
  negative.add<uint64_t>(1).add<uint64_t>(2).add<uint64_t>(3).add<int32_t>(-5).scratch();
  EXPECT_EQ(status(negative), Status::layout_mismatch);
}

namespace {

// A minimal TTIR around one body, in Triton 3.6's printed form.
std::string kernel(const std::string& body) {
  return "module {\n  tt.func public @k(%a: !tt.ptr<f32> loc(\"a\"(#loc)), %b: !tt.ptr<f32> loc(\"b\"(#loc)), "
         "%n: i64 loc(\"n\"(#loc))) attributes {noinline = false} {\n" +
         body + "    tt.return loc(#loc)\n  } loc(#loc)\n} loc(#loc)\n";
}

}  // namespace

TEST(TritonTtir, StoresNotTiedToAnArgumentAreUnresolved) {
  const std::string int_to_ptr = kernel(
      "    %0 = tt.ptr_to_int %a : !tt.ptr<f32> -> i64 loc(#loc)\n"
      "    %1 = tt.int_to_ptr %0 : i64 -> !tt.ptr<f32> loc(#loc)\n"
      "    tt.store %1, %cst : !tt.ptr<f32> loc(#loc)\n");
  const std::string call = kernel("    tt.call @helper(%a) : (!tt.ptr<f32>) -> () loc(#loc)\n");
  const std::string descriptor = kernel("    tt.descriptor_store %d[%c0, %c0], %v : !tt.tensordesc<tensor<64xf32>>, tensor<64xf32> loc(#loc)\n");
  const std::string swap = kernel(
      "    %r:1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%p = %a) -> (!tt.ptr<f32>)  : i32 {\n"
      "      tt.store %p, %cst : !tt.ptr<f32> loc(#loc)\n"
      "      scf.yield %b : !tt.ptr<f32> loc(#loc)\n"
      "    } loc(#loc)\n");
  for (const std::string* text : {&int_to_ptr, &call, &descriptor, &swap}) {
    const ParsedTtir p = parse_ttir(*text);
    ASSERT_TRUE(p.signature) << p.error << "\n" << *text;
    EXPECT_FALSE(p.signature->unresolved.empty()) << *text;
    Launch l;
    l.add<uint64_t>(1).add<uint64_t>(2).add<int64_t>(3).scratch();
    EXPECT_EQ(decode_triton(*p.signature, l.layout, l.at(1)).status, Status::layout_mismatch);
  }
  // Control: the same loop yielding a pointer from its own argument is resolved.
  const ParsedTtir ok = parse_ttir(kernel(
      "    %r:1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%p = %a) -> (!tt.ptr<f32>)  : i32 {\n"
      "      tt.store %p, %cst : !tt.ptr<f32> loc(#loc)\n"
      "      %q = tt.addptr %p, %n : !tt.ptr<f32>, i64 loc(#loc)\n"
      "      scf.yield %q : !tt.ptr<f32> loc(#loc)\n"
      "    } loc(#loc)\n"));
  ASSERT_TRUE(ok.signature) << ok.error;
  EXPECT_TRUE(ok.signature->unresolved.empty()) << ok.signature->unresolved;
  EXPECT_TRUE(ok.signature->args[0].written);
  EXPECT_FALSE(ok.signature->args[1].written);
}

TEST(TritonTtir, ConditionalStoreHasNoExactExtent) {
  const std::string store =
      "      %pid = tt.get_program_id x : i32 loc(#loc)\n"
      "      %p = tt.addptr %a, %pid : !tt.ptr<f32>, i32 loc(#loc)\n"
      "      tt.store %p, %cst : !tt.ptr<f32> loc(#loc)\n";
  const ParsedTtir always = parse_ttir(kernel(store));
  ASSERT_TRUE(always.signature) << always.error;
  EXPECT_EQ(always.signature->args[0].extent.block, 1u);  // one element per program
  const ParsedTtir cond = parse_ttir(kernel("    scf.if %c {\n" + store + "    } loc(#loc)\n"));
  ASSERT_TRUE(cond.signature) << cond.error;
  EXPECT_TRUE(cond.signature->args[0].written);
  EXPECT_EQ(cond.signature->args[0].extent.block, 0u);
}

TEST(TritonTtir, SelectBetweenArgumentsWritesBoth) {
  const ParsedTtir p = parse_ttir(kernel(
      "    %0 = arith.select %c, %a, %b : !tt.ptr<f32> loc(#loc)\n"
      "    tt.store %0, %cst : !tt.ptr<f32> loc(#loc)\n"));
  ASSERT_TRUE(p.signature) << p.error;
  EXPECT_TRUE(p.signature->args[0].written);
  EXPECT_TRUE(p.signature->args[1].written);
  EXPECT_EQ(p.signature->args[0].extent.block, 0u);
}

TEST(TritonTtir, GarbageIsRejectedCleanly) {
  EXPECT_FALSE(parse_ttir("").signature);
  EXPECT_FALSE(parse_ttir("hello world\n").signature);
  EXPECT_FALSE(parse_ttir("tt.func public @").signature);
  EXPECT_FALSE(parse_ttir("tt.func public @k(%a: !tt.ptr<f32>").signature);
  EXPECT_FALSE(parse_ttir("tt.func public @k(%a !tt.ptr<f32>) {\n}\n").signature);
  EXPECT_FALSE(parse_ttir(std::string("tt.func public @k() {\n\0}\n", 24)).signature);
  const std::string full = fixture("red_rmsnorm.ttir");
  ASSERT_TRUE(parse_ttir(full).signature);
  // Every truncation is refused or parsed, never a crash; those that cut the body are refused.
  const std::size_t body_end = full.find("  } loc(#loc)\n} loc(#loc)");
  ASSERT_NE(body_end, std::string::npos);
  for (std::size_t cut = 0; cut < body_end; cut += 97) {
    const ParsedTtir p = parse_ttir(std::string_view(full).substr(0, cut));
    EXPECT_FALSE(p.signature) << "cut at " << cut;
    EXPECT_FALSE(p.error.empty());
  }
  std::string huge(kMaxTtirBytes + 1, ' ');
  const ParsedTtir h = parse_ttir(huge);
  EXPECT_FALSE(h.signature);
  EXPECT_NE(h.error.find("larger"), std::string_view::npos);
  std::string noise;
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1103515245 + 12345;
    noise.push_back("%(){}<>\"#:, =\n@abc"[x % 18]);
  }
  EXPECT_FALSE(parse_ttir("tt.func public @k() {\n" + noise).signature);
}

TEST(TritonCache, Fnv1a64) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

TEST(TritonCache, ElfSizeOfARealCubin) {
  const std::string cubin = fixture("poi_masked.cubin");
  ASSERT_GT(cubin.size(), 1000u);
  EXPECT_EQ(elf_image_size(cubin.data()), cubin.size());
  EXPECT_EQ(elf_image_size(cubin.data(), cubin.size() - 1), 0u);  // headers point past the bound
  std::string not_elf = cubin;
  not_elf[1] = 'X';
  EXPECT_EQ(elf_image_size(not_elf.data()), 0u);
  std::string elf32 = cubin;
  elf32[4] = 1;
  EXPECT_EQ(elf_image_size(elf32.data()), 0u);
  EXPECT_EQ(elf_image_size(nullptr), 0u);
}

TEST(TritonCache, TtirBesideTheCubin) {
  TempDir t;
  const std::string ttir = fixture("poi_masked.ttir");
  const std::string cubin = t.write("HASH1/triton_poi_fused__to_copy_add_1.cubin", fixture("poi_masked.cubin"));
  t.write("HASH1/triton_poi_fused__to_copy_add_1.ttir", ttir);
  TtirText found = ttir_for_module_path(cubin);
  ASSERT_TRUE(found.ok()) << found.reason;
  EXPECT_EQ(found.text, ttir);
  EXPECT_EQ(found.path, t.path + "/HASH1/triton_poi_fused__to_copy_add_1.ttir");
  // TRITON_STORE_BINARY_ONLY=1 keeps the .source but drops the .ttir.
  const std::string only_source = t.write("HASH2/scale_rows_kernel.cubin", "x");
  t.write("HASH2/scale_rows_kernel.source", fixture("user_scale_rows.source"));
  found = ttir_for_module_path(only_source);
  ASSERT_TRUE(found.ok()) << found.reason;
  EXPECT_NE(found.path.find(".source"), std::string::npos);
  EXPECT_TRUE(parse_ttir(found.text).signature);
  const std::string bare = t.write("HASH3/k.cubin", "x");
  found = ttir_for_module_path(bare);
  EXPECT_FALSE(found.ok());
  EXPECT_NE(found.reason.find("no .ttir"), std::string_view::npos);
  EXPECT_FALSE(ttir_for_module_path(t.path + "/HASH1/triton_poi_fused__to_copy_add_1.ptx").ok());
  EXPECT_FALSE(ttir_for_module_path(t.path + "/missing/k.cubin").ok());
  const std::string big = t.write("HASH4/k.cubin", "x");
  t.write("HASH4/k.ttir", std::string(kMaxTtirBytes + 1, ' '));
  found = ttir_for_module_path(big);
  EXPECT_FALSE(found.ok());
  EXPECT_NE(found.reason.find("larger"), std::string_view::npos);
}

TEST(TritonCache, ImageMatchedByHashAmongSameSizeCubins) {
  TempDir t;
  const std::string real = fixture("poi_masked.cubin");
  std::string decoy = real;
  decoy[decoy.size() / 2] ^= 0x5a;  // same size, other bytes
  t.write("AAAA/decoy.cubin", decoy);
  t.write("AAAA/decoy.ttir", fixture("poi_static.ttir"));
  t.write("BBBB/triton_poi_fused__to_copy_add_1.cubin", real);
  t.write("BBBB/triton_poi_fused__to_copy_add_1.ttir", fixture("poi_masked.ttir"));
  TritonCacheIndex index({t.path});
  const TtirText found = ttir_for_image(real.data(), 0, index);  // size from the ELF headers
  ASSERT_TRUE(found.ok()) << found.reason;
  EXPECT_EQ(found.path, t.path + "/BBBB/triton_poi_fused__to_copy_add_1.ttir");
  EXPECT_EQ(index.indexed_files(), 2u);
  std::string other = real;
  other[100] ^= 1;
  EXPECT_FALSE(ttir_for_image(other.data(), 0, index).ok());
  EXPECT_FALSE(ttir_for_image("not an elf image at all, no.............................................", 0, index).ok());
}

TEST(TritonCache, MissReindexesWhenANewKernelDirectoryAppears) {
  TempDir t;
  t.write("AAAA/old.cubin", "old");
  TritonCacheIndex index({t.path});
  const std::string real = fixture("poi_masked.cubin");
  EXPECT_TRUE(index.cubin_for_image(real.data(), real.size()).empty());
  EXPECT_EQ(index.indexed_files(), 1u);
  // Directory mtimes have nanosecond resolution, but make sure the root's changes.
  usleep(20000);
  t.write("CCCC/new.cubin", real);
  EXPECT_EQ(index.cubin_for_image(real.data(), real.size()), t.path + "/CCCC/new.cubin");
  EXPECT_EQ(index.indexed_files(), 2u);
}

TEST(TritonCache, CacheDirsFromEnvironment) {
  const char* saved = std::getenv("TRITON_CACHE_DIR");
  const std::string keep = saved ? saved : "";
  setenv("TRITON_CACHE_DIR", "/x/triton/0", 1);
  EXPECT_EQ(triton_cache_dirs(), std::vector<std::string>{"/x/triton/0"});
  unsetenv("TRITON_CACHE_DIR");
  setenv("TRITON_HOME", "/home/t", 1);
  EXPECT_EQ(triton_cache_dirs(), std::vector<std::string>{"/home/t/.triton/cache"});
  unsetenv("TRITON_HOME");
  if (saved) setenv("TRITON_CACHE_DIR", keep.c_str(), 1);
}

TEST(TritonRegistry, LoadLookupUnload) {
  TritonRegistry reg(2);
  TtirText src;
  src.text = fixture("poi_masked.ttir");
  EXPECT_TRUE(reg.on_module_loaded(0xAA, src));
  TritonRegistry::Found f = reg.lookup(0xAA, "triton_poi_fused__to_copy_add_1");
  ASSERT_TRUE(f.signature) << f.reason;
  EXPECT_EQ(f.signature->args.size(), 4u);
  f = reg.lookup(0xAA, "other_kernel");
  EXPECT_FALSE(f.signature);
  EXPECT_FALSE(f.reason.empty());
  EXPECT_FALSE(reg.lookup(0xBB, "triton_poi_fused__to_copy_add_1").signature);
  // A module whose TTIR could not be found keeps the reason for not_inspected.
  TtirText missing;
  missing.reason = "triton: no .ttir or .source beside the cubin";
  EXPECT_FALSE(reg.on_module_loaded(0xBB, missing));
  EXPECT_EQ(reg.lookup(0xBB, "k").reason, missing.reason);
  // Bounded: a third module is refused until one unloads.
  TtirText garbage;
  garbage.text = "not ttir";
  EXPECT_FALSE(reg.on_module_loaded(0xCC, garbage));
  EXPECT_EQ(reg.size(), 2u);
  const std::shared_ptr<const TritonSignature> held = reg.lookup(0xAA, "triton_poi_fused__to_copy_add_1").signature;
  reg.on_module_unloaded(0xAA);
  EXPECT_FALSE(reg.lookup(0xAA, "triton_poi_fused__to_copy_add_1").signature);
  EXPECT_EQ(held->name, "triton_poi_fused__to_copy_add_1");  // still valid for a launch in flight
  reg.on_module_loaded(0xCC, garbage);
  EXPECT_FALSE(reg.lookup(0xCC, "k").reason.empty());
}

TEST(TritonRegistry, ConcurrentLoadsAndLookups) {
  TritonRegistry reg;
  TtirText src;
  src.text = fixture("poi_static.ttir");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t m = 0; m < 50; ++m) {
        const uint64_t module = uint64_t(t) << 32 | m;
        reg.on_module_loaded(module, src);
        EXPECT_TRUE(reg.lookup(module, "triton_poi_fused_add_mul_0").signature);
        if (m % 2) reg.on_module_unloaded(module);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(reg.size(), 100u);
}

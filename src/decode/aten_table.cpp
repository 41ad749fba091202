// The family table: qualified kernel name -> static facts from the name + layout gate.
// Each matcher returns `matched` only when the driver's layout is exactly the one the family's
// struct gives; anything else is layout_mismatch with a reason, never a guess.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

#include "decode/aten_internal.hpp"
#include "signature.hpp"

namespace nanscope::decode {

using namespace aten;

namespace {

using Param = std::pair<uint32_t, uint32_t>;

bool layout_is(const Layout& l, std::initializer_list<Param> want) {
  return l.size() == want.size() && std::equal(want.begin(), want.end(), l.begin());
}

// The output type of an elementwise functor into m; false: the name does not say it.
bool set_out(FamilyMatch& m, std::string_view functor) {
  return functor_result(functor, m.out_type, m.out);
}

// A family with one input tensor type (reductions, softmax, index_select's source).
void set_one_input(FamilyMatch& m, std::string_view type) {
  bool skip = false;
  input_type(type, m.in[0], skip);
  m.in_skip = skip ? 1 : 0;
  m.in_count = 1;
  m.in_known = true;
}

// vectorized_elementwise_kernel<vec, func_t, array_t>(int N, func_t f, array_t data):
// 0:4, the functor at 4 or 8, data = 8 * (arity + 1) bytes, 8-aligned.
FamilyMatch match_vectorized(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  const int n = args.size() == 3 ? char_array_size(args[2]) : 0;
  if (n < 1 || l.size() != 3 || l[0] != Param{0, 4} || l[2].second != 8u * n || l[2].first % 8)
    return mismatch(AtenFamily::vectorized, "layout mismatch");
  FamilyMatch m = matched(AtenFamily::vectorized, l);
  m.nargs = static_cast<uint8_t>(n);
  if (!set_out(m, args[1])) return mismatch(AtenFamily::vectorized, "functor result type unknown");
  functor_inputs(args[1], m);  // no casting on this path: each input has its argument's type
  m.constant = constant_functor(args[1]);
  return m;
}

// The unrolled kernel's inputs: with LoadWithCast<K> (MemoryAccess.cuh: ScalarType dtypes[K];
// uint32_t element_sizes[K];) their types are in the loader's bytes, read per launch; with
// LoadWithoutCast (1 byte) they are the functor's argument types. A TrivialOffsetCalculator
// (1 byte) makes each input N elements long.
void set_unrolled_inputs(FamilyMatch& m, const std::vector<std::string_view>& args, const Layout& l) {
  m.in_trivial = args[3].find("TrivialOffsetCalculator<") == 0 && l[3].second == 1;
  constexpr std::string_view kCast = "at::native::memory::LoadWithCast<";
  if (args[5] == "at::native::memory::LoadWithoutCast" && l[5].second == 1) {
    functor_inputs(args[0], m);
  } else if (args[5].find(kCast) == 0) {
    const int k = std::atoi(std::string(args[5].substr(kCast.size())).c_str());
    const uint32_t size = ((static_cast<uint32_t>(k) + 3) & ~3u) + 4u * static_cast<uint32_t>(k);
    if (k >= 1 && k == m.nargs - 1 && l[5].second == size) m.load_cast = static_cast<uint8_t>(k);
  }
}

// unrolled_elementwise_kernel<func, array, ept, inp_calc, out_calc, loader, storer>
// (N, f, data, ic, oc, l, s): contiguous only (TrivialOffsetCalculator, 1 byte); the storer is
// StoreWithoutCast (1 byte, functor type) or StoreWithCast<1> (8 bytes: ScalarType, uint32 size).
FamilyMatch match_unrolled(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  const int n = args.size() == 7 ? char_array_size(args[1]) : 0;
  if (n < 1 || l.size() != 7 || l[0] != Param{0, 4} || l[2].second != 8u * n)
    return mismatch(AtenFamily::unrolled, "layout mismatch");
  if (args[4].find("TrivialOffsetCalculator<1") != 0 || l[4].second != 1)
    return mismatch(AtenFamily::unrolled, "layout mismatch");
  FamilyMatch m = matched(AtenFamily::unrolled, l);
  m.nargs = static_cast<uint8_t>(n);
  set_unrolled_inputs(m, args, l);
  m.constant = constant_functor(args[0]);
  if (args[6] == "at::native::memory::StoreWithCast<1>" && l[6].second == 8) {
    m.out_type = OutType::runtime;
    return m;
  }
  if (args[6] != "at::native::memory::StoreWithoutCast" || l[6].second != 1)
    return mismatch(AtenFamily::unrolled, "layout mismatch");
  if (!set_out(m, args[0])) return mismatch(AtenFamily::unrolled, "functor result type unknown");
  return m;
}

// unrolled_elementwise_kernel_for_multi_outputs<num_outputs, func, array, ic, oc>(N, f, data,
// ic, oc): oc is TrivialOffsetCalculator (1 byte) or OffsetCalculator<num_outputs> whose
// strides are in elements (make_output_offset_calculator passes element sizes).
FamilyMatch match_multi_output(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  const int n = args.size() == 5 ? char_array_size(args[2]) : 0;
  const int outs = args.size() == 5 ? std::atoi(std::string(args[0]).c_str()) : 0;
  if (n < 1 || outs < 1 || outs >= n || l.size() != 5 || l[0] != Param{0, 4} ||
      l[2].second != 8u * n)
    return mismatch(AtenFamily::multi_output, "layout mismatch");
  FamilyMatch m = matched(AtenFamily::multi_output, l);
  m.nargs = static_cast<uint8_t>(n);
  m.num_outputs = static_cast<uint8_t>(outs);
  m.trivial_out = args[4].find("TrivialOffsetCalculator<") == 0;
  const uint32_t oc = m.trivial_out ? 1 : offset_calc_size(outs);
  if (l[4].second != oc || (!m.trivial_out && args[4].find("OffsetCalculator<") != 0))
    return mismatch(AtenFamily::multi_output, "layout mismatch");
  if (!set_out(m, args[1])) return mismatch(AtenFamily::multi_output, "functor result type unknown");
  functor_inputs(args[1], m);
  m.in_trivial = args[3].find("TrivialOffsetCalculator<") == 0 && l[3].second == 1;
  return m;
}

// Functors the dynamic-casting closure is known to hold with no captures (an empty class, one
// byte, so the dtypes array follows it at once; a capture of up to 7 bytes would keep the
// closure's size and move the array). Every lambda direct_copy_kernel_cuda passes to gpu_kernel
// is `[] GPU_LAMBDA(scalar_t x) { return x; }` (Copy.cu, every version read; 2.11's names show
// the same QINT and AT_DISPATCH_V2 switches), defined in its dispatch lambdas: the name is the
// scope, `{lambda()#k}::operator()() const::` steps, then `{lambda(scalar_t)#n}`. The output
// type is scalar_t (the dispatch is on iter.dtype(0)).
constexpr std::array<std::string_view, 1> kCapturelessCopyScopes{
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"};

// The argument type of a known captureless copy lambda; empty for any other functor.
std::string_view captureless_copy_arg(std::string_view functor) {
  for (std::string_view scope : kCapturelessCopyScopes) {
    if (functor.substr(0, scope.size()) != scope) continue;
    std::string_view rest = functor.substr(scope.size()), params;
    uint32_t number = 0;
    while (take_lambda(rest, params, number) && params.empty() && rest.substr(0, kLambdaStep.size()) == kLambdaStep)
      rest.remove_prefix(kLambdaStep.size());
    const bool one_param = !params.empty() && params.find(',') == std::string_view::npos;
    return rest.empty() && one_param ? params : std::string_view{};
  }
  return {};
}

// Binary ops whose functor is an empty struct (BinaryOps.h: `a * b` in operator() and no
// member), so BinaryFunctor<A, B, R, op> holding one is 1 byte in the closure as a copy lambda
// is. Only what the sources show; CUDAFunctor_add keeps alpha, the scalar functors a scalar.
constexpr std::array<std::string_view, 1> kCapturelessBinaryOps{"at::native::binary_internal::MulFunctor<"};

// A known captureless functor of gpu_kernel_impl: the type it returns and how many tensors the
// closure's data holds (the output and its inputs); an empty type for any other functor.
struct CapturelessFunctor {
  std::string_view result;
  uint32_t nargs = 0;
};
CapturelessFunctor captureless_functor(std::string_view functor) {
  if (const std::string_view arg = captureless_copy_arg(functor); !arg.empty()) return {arg, 2};
  constexpr std::string_view kBinary = "at::native::BinaryFunctor<";
  if (functor.substr(0, kBinary.size()) != kBinary) return {};
  const auto args = template_args(functor);  // A, B, R, op
  if (args.size() != 4) return {};
  for (std::string_view op : kCapturelessBinaryOps)
    if (args[3].substr(0, op.size()) == op) return {args[2], 3};
  return {};
}

// elementwise_kernel<nt, vt, gpu_kernel_impl<F>(TensorIteratorBase&, F const&)::{lambda(int)#1}>
// (int N, closure): the dynamic-casting closure, decoded when F is a known captureless copy
// lambda and the closure is exactly the size that layout gives (aten_internal.hpp).
FamilyMatch match_legacy_cast(std::string_view impl_text, const Layout& l) {
  constexpr std::string_view kLambda = ")::{lambda(int)#1}";
  const auto impl = template_args(impl_text);
  const bool non_contiguous = impl_text.size() > kLambda.size() &&
                              impl_text.substr(impl_text.size() - kLambda.size()) == kLambda;
  const CapturelessFunctor f = impl.size() == 1 && non_contiguous ? captureless_functor(impl[0]) : CapturelessFunctor{};
  if (f.result.empty()) return mismatch(AtenFamily::legacy_cast, "functor not known to be captureless");
  const ScalarInfo* s = scalar_info(f.result);
  if (!s) return mismatch(AtenFamily::legacy_cast, "functor argument type unknown");
  if (l[1].second != cast_closure_size(f.nargs))
    return mismatch(AtenFamily::legacy_cast, "closure size is not the captureless cast layout");
  FamilyMatch m = matched(AtenFamily::legacy_cast, l);
  m.nargs = static_cast<uint8_t>(f.nargs);
  m.blob_size = l[1].second;
  m.out_st = s->st;
  m.out_type = s->dtype == DType::none ? OutType::not_float : OutType::static_dtype;
  m.out = s->dtype;
  return m;
}

// elementwise_kernel<nt, vt, lambda>(int N, lambda): gpu_kernel_impl_nocast's lambda
// (OffsetCalculator<NARGS>, then data, then the functor), and gpu_kernel_impl's dynamic-casting
// lambda with a known captureless functor (match_legacy_cast).
FamilyMatch match_legacy(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  if (args.size() != 3 || l.size() != 2 || l[0] != Param{0, 4} || l[1].first != 8 ||
      l[1].second < offset_calc_size(1) + 8)
    return mismatch(AtenFamily::legacy, "layout mismatch");
  if (args[2].find("at::native::gpu_kernel_impl<") == 0) return match_legacy_cast(args[2], l);
  constexpr std::string_view kNocast = "at::native::gpu_kernel_impl_nocast<";
  if (args[2].find(kNocast) != 0) return mismatch(AtenFamily::legacy, "closure not decoded (other lambda)");
  const auto impl = template_args(args[2]);
  FamilyMatch m = matched(AtenFamily::legacy, l);
  m.blob_size = l[1].second;
  if (impl.size() != 1 || !set_out(m, impl[0]))
    return mismatch(AtenFamily::legacy, "functor result type unknown");
  // NARGS = arity + 1 when the functor is a lambda (its name ends "#n}"); for named functors
  // it is inferred per launch from which data pointers are live.
  const int arity = impl[0].back() == '}' ? lambda_arity(impl[0]) : -1;
  m.nargs = arity >= 0 && arity <= 5 ? static_cast<uint8_t>(arity + 1) : 0;
  functor_inputs(impl[0], m);  // nocast: the tensors have the functor's argument types
  m.constant = constant_functor(impl[0]);
  return m;
}

// reduce_kernel<nt, output_vec_size, ReduceOp<scalar_t, ops_t, index_t, out_scalar_t, ...>>:
// one ReduceOp param; index_t must be unsigned int (32-bit calculators).
FamilyMatch match_reduce(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  if (args.size() != 3 || l.size() != 1 || l[0].first != 0 || l[0].second % 8 ||
      l[0].second < 64 + 68 + offset_calc_size(1) + offset_calc_size(2))
    return mismatch(AtenFamily::reduce, "layout mismatch");
  const auto op = template_args(args[2]);
  if (op.size() < 4 || op[2] != "unsigned int") return mismatch(AtenFamily::reduce, "layout mismatch");
  FamilyMatch m = matched(AtenFamily::reduce, l);
  m.blob_size = l[0].second;
  if (!classify_type(op[3], m.out_type, m.out))
    return mismatch(AtenFamily::reduce, "output type unknown");
  set_one_input(m, op[0]);  // src is read as scalar_t (Reduce.cuh: (const scalar_t*)src)
  // Welford's project() returns pair<T, T>: dst[1] (var or std) has the output type too. Other
  // two-output reductions (min/max with indices) write int64 indices to dst[1].
  if (op[1].find("at::native::WelfordOps<") == 0) {
    const auto w = template_args(op[1]);
    const auto pair = w.size() == 4 ? template_args(w[3]) : std::vector<std::string_view>{};
    OutType c1, c2;
    DType d1 = DType::none, d2 = DType::none;
    m.second_output = pair.size() == 2 && classify_type(pair[0], c1, d1) &&
                      classify_type(pair[1], c2, d2) && d1 == m.out && d2 == m.out;
  }
  return m;
}

bool set_norm_types(FamilyMatch& m, const std::vector<std::string_view>& args) {
  OutType acc_cls;
  return args.size() >= 2 && classify_type(args[0], m.out_type, m.out) &&
         classify_type(args[1], acc_cls, m.acc) && acc_cls == OutType::static_dtype;
}

// vectorized_layer_norm_kernel<T, T_ACC, rms>(int N, T_ACC eps, X, gamma, beta, mean, rstd, Y).
FamilyMatch match_layer_norm_vec(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::layer_norm_vec, l);
  if (!set_norm_types(m, template_args(dem))) return mismatch(m.family, "layout mismatch");
  const uint32_t acc = static_cast<uint32_t>(dtype_size(m.acc));
  const uint32_t p2 = acc == 8 ? 16 : 8;
  Layout want{{0, 4}, {acc == 8 ? 8 : 4, acc}};
  for (uint32_t i = 0; i < 6; ++i) want.push_back({p2 + 8 * i, 8});
  return l == want ? m : mismatch(m.family, "layout mismatch");
}

// Two kernels share the name: group norm's RowwiseMomentsCUDAKernel<T>(int64_t N, T eps,
// const T* X, T* mean, T* rstd), moments in the input's type, and layer norm's
// RowwiseMomentsCUDAKernel<T, T_ACC, rms>(int64_t N, T_ACC eps, const T* X, T_ACC* mean,
// T_ACC* rstd).
FamilyMatch match_rowwise_moments(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::rowwise_moments, l);
  const auto args = template_args(dem);
  const bool group = args.size() == 1, layer = args.size() == 3;
  if (!(group || layer) || !set_norm_types(m, {args[0], args[group ? 0 : 1]}))
    return mismatch(m.family, "layout mismatch");
  const uint32_t acc = static_cast<uint32_t>(dtype_size(m.acc));
  return layout_is(l, {{0, 8}, {8, acc}, {16, 8}, {24, 8}, {32, 8}}) ? m
                                                                      : mismatch(m.family, "layout mismatch");
}

// LayerNormForwardCUDAKernel<T, T_ACC, rms>(int64_t N, X, mean, rstd, gamma, beta, T* Y).
FamilyMatch match_layer_norm_fwd(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::layer_norm_fwd, l);
  if (!set_norm_types(m, template_args(dem))) return mismatch(m.family, "layout mismatch");
  return layout_is(l, {{0, 8}, {8, 8}, {16, 8}, {24, 8}, {32, 8}, {40, 8}, {48, 8}})
             ? m
             : mismatch(m.family, "layout mismatch");
}

// softmax_warp_forward<in, out, acc, log2, is_log, masked>(out* dst, const in* src, int batch,
// int stride, int element_count, const bool* mask, int head_chunk, bool is_transformer_mask).
FamilyMatch match_softmax_warp(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::softmax_warp, l);
  const auto args = template_args(dem);
  if (args.size() < 2 || !classify_type(args[1], m.out_type, m.out) ||
      !layout_is(l, {{0, 8}, {8, 8}, {16, 4}, {20, 4}, {24, 4}, {32, 8}, {40, 4}, {44, 1}}))
    return mismatch(m.family, "layout mismatch");
  set_one_input(m, args[0]);
  return m;
}

// cunn_SoftMaxForward{,Smem}<ILP, scalar_t, accscalar_t, outscalar_t, Epilogue[, index_t]> and
// cunn_SoftMaxForwardReg<scalar_t, accscalar_t, outscalar_t, Epilogue, index_t, ILP>
// (outscalar_t* out, const scalar_t* in, index_t classes).
FamilyMatch match_softmax_block(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::softmax_block, l);
  const auto args = template_args(dem);
  const std::size_t out = qualified_name(dem) == "at::native::cunn_SoftMaxForwardReg" ? 2 : 3;
  if (args.size() <= out || !classify_type(args[out], m.out_type, m.out) ||
      !(layout_is(l, {{0, 8}, {8, 8}, {16, 4}}) || layout_is(l, {{0, 8}, {8, 8}, {16, 8}})))
    return mismatch(m.family, "layout mismatch");
  m.blob_size = l[2].second;  // width of `classes`
  set_one_input(m, args[out - 2]);  // scalar_t, two before outscalar_t in both orders
  return m;
}

// indexSelect{Small,Large}Index<T, IndicesType, IndexType, DstDim, SrcDim, IdxDim...>
// (TensorInfo<T, U> dst, TensorInfo src, TensorInfo indices, int, int, U innerSize, int64_t):
// U = unsigned int, so a TensorInfo is {T* data; U sizes[25]; U strides[25]; int dims;} = 216.
FamilyMatch match_index_select(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::index_select, l);
  const auto args = template_args(dem);
  if (args.size() < 3 || args[2] != "unsigned int" ||
      !layout_is(l, {{0, 216}, {216, 216}, {432, 216}, {648, 4}, {652, 4}, {656, 4}, {664, 8}}))
    return mismatch(m.family, "layout mismatch");
  if (!classify_type(args[0], m.out_type, m.out)) return mismatch(m.family, "output type unknown");
  // src is TensorInfo<const T>; the indices (IndicesType, int or long) hold no NaN.
  set_one_input(m, args[0]);
  bool skip = false;
  input_type(args[1], m.in[1], skip);
  m.in_skip = static_cast<uint8_t>(m.in_skip | (skip ? 2 : 0));
  m.in_count = 2;
  return m;
}

// vectorized_gather_kernel<Align, index_t>(char* out, char* inp, index_t* idx, int num_ind,
// int64_t slice_size, int64_t ind_dim_size, int64_t inp_stride, int64_t out_stride, bool).
FamilyMatch match_gather(std::string_view, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::gather, l);
  m.out_type = OutType::bytes_only;
  return layout_is(l, {{0, 8}, {8, 8}, {16, 8}, {24, 4}, {32, 8}, {40, 8}, {48, 8}, {56, 8}, {64, 1}})
             ? m
             : mismatch(m.family, "layout mismatch");
}

// CatArrayBatchedCopy{,_contig,_aligned16_contig,_alignedK_contig,_vectorized}<T, IndexType,
// Dims, batch_size, stride_size[, K]>(T* out, CatArrInputTensorMetadata<T, U, batch_size,
// stride_size> inputs, TensorSizeStride<U, 4> os, int concatDim, U dimStride), with
// CatArrInputTensorMetadata {const T* input[n]; U offset[n]; U dimSize[n]; U nElements[n];
// bool isContiguous[n]; TensorSizeStride<U, 4> tensorStride[stride_size];} (Shape.cu).
FamilyMatch match_cat(std::string_view dem, const Layout& l) {
  FamilyMatch m = mismatch(AtenFamily::cat, "layout mismatch");
  const auto args = template_args(dem);
  constexpr std::string_view kOpaque = "OpaqueType<";  // at::native::(anonymous namespace)::
  const std::size_t at = args.empty() ? std::string_view::npos : args[0].find(kOpaque);
  if (args.size() < 5 || at == std::string_view::npos || args[1] != "unsigned int") return m;
  const int elem = std::atoi(std::string(args[0].substr(at + kOpaque.size())).c_str());
  const int dims = std::atoi(std::string(args[2]).c_str());
  const int batch = std::atoi(std::string(args[3]).c_str());
  const int strides = std::atoi(std::string(args[4]).c_str());
  if (elem < 1 || elem > 64 || dims < 1 || dims > 4 || batch < 1 || batch > 1024 || strides < 1)
    return m;
  const uint32_t meta = ((21u * batch + 3) & ~3u) + 32u * strides;
  if (!layout_is(l, {{0, 8}, {8, meta}, {8 + meta, 32}, {40 + meta, 4}, {44 + meta, 4}})) return m;
  m = matched(AtenFamily::cat, l);
  m.out_type = OutType::bytes_only;
  m.elem_bytes = static_cast<uint8_t>(elem);
  m.dims = static_cast<uint8_t>(dims);
  m.batch = static_cast<uint16_t>(batch);
  return m;
}

// pytorch_flash::flash_fwd_kernel<Kernel_traits, ...>(Flash_fwd_params), 472 bytes; the element
// type is Kernel_traits' elem_type (cutlass::bfloat16_t / cutlass::half_t).
FamilyMatch match_flash_fwd(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::flash_fwd, l);
  m.out_type = OutType::static_dtype;
  const bool bf16 = dem.find("cutlass::bfloat16_t") != std::string_view::npos;
  const bool f16 = dem.find("cutlass::half_t") != std::string_view::npos;
  if (bf16 == f16) return mismatch(m.family, "element type unknown");
  m.out = bf16 ? DType::bf16 : DType::f16;
  m.blob_size = 472;
  return layout_is(l, {{0, 472}}) ? m : mismatch(m.family, "layout mismatch");
}

// flash_fwd_kernel<Kernel_traits, Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN,
// Is_even_K, Is_softcap, Return_softmax>: Return_softmax also writes P (p_ptr), not decoded.
FamilyMatch match_flash_plain(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  if (args.size() != 9) return mismatch(AtenFamily::flash_fwd, "layout mismatch");
  if (args[8] != "false") return mismatch(AtenFamily::flash_fwd, "softmax matrix output not decoded");
  FamilyMatch m = match_flash_fwd(dem, l);
  // The non-split kernel is mha_fwd's: no KV cache, so K and V are plain [b, s_k, h_k, d]. The
  // split-kv kernel serves the KV cache (cache_batch_idx, block_table), whose offsets in this
  // build's Flash_fwd_params are not known: its K/V extents stay unknown.
  m.kv_dense = true;
  return m;
}

// flash_fwd_splitkv_kernel<Kernel_traits, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K,
// Is_softcap, Split, Append_KV>(Flash_fwd_params): with Split false it writes O and the LSE
// exactly as flash_fwd_kernel does (n_split_idx 0); Split writes the float accumulators (left to
// the combine kernel, not decoded) and Append_KV also writes the new keys into the KV cache.
FamilyMatch match_flash_splitkv(std::string_view dem, const Layout& l) {
  const auto args = template_args(dem);
  if (args.size() != 9) return mismatch(AtenFamily::flash_other, "layout mismatch");
  if (args[7] != "false") return mismatch(AtenFamily::flash_other, "split-kv accumulators not decoded");
  if (args[8] != "false") return mismatch(AtenFamily::flash_other, "KV-cache append not decoded");
  return match_flash_fwd(dem, l);
}

// index_elementwise_kernel<nt, vt, index_copy_kernel_impl<OpaqueType<n>>(...)::{lambda(int)#1}>
// (int64_t N, lambda): the closure aten_index.cpp decodes; other closures (index, index_put,
// index_fill) are claimed and not decoded.
FamilyMatch match_index_elementwise(std::string_view dem, const Layout& l) {
  FamilyMatch m = mismatch(AtenFamily::index_elementwise, "closure not decoded");
  const auto args = template_args(dem);
  constexpr std::string_view kCopy = "at::native::index_copy_kernel_impl<";
  if (args.size() != 3 || args[2].find(kCopy) != 0 || args[2].find("{lambda(int)#1}") == std::string_view::npos)
    return m;
  const auto impl = template_args(args[2]);
  constexpr std::string_view kOpaque = "at::native::OpaqueType<";
  if (impl.size() != 1 || impl[0].find(kOpaque) != 0 || !layout_is(l, {{0, 8}, {8, 648}}))
    return mismatch(AtenFamily::index_elementwise, "layout mismatch");
  const int elem = std::atoi(std::string(impl[0].substr(kOpaque.size())).c_str());
  if (elem < 1 || elem > 16) return mismatch(AtenFamily::index_elementwise, "layout mismatch");
  m = matched(AtenFamily::index_elementwise, l);
  m.out_type = OutType::bytes_only;
  m.elem_bytes = static_cast<uint8_t>(elem);
  return m;
}

// fmha_cutlassF_<...>(PyTorchMemEffAttention::AttentionKernel<scalar_t, arch, aligned, ...>::Params):
// one 272-byte Params (aten_mem_eff.cpp); O has scalar_t.
FamilyMatch match_mem_eff(std::string_view dem, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::mem_eff, l);
  const std::size_t at = dem.find("AttentionKernel<");
  const auto args = at == std::string_view::npos ? std::vector<std::string_view>{} : template_args(dem, at);
  m.out_type = OutType::static_dtype;
  if (args.empty()) return mismatch(m.family, "element type unknown");
  if (args[0] == "cutlass::half_t") m.out = DType::f16;
  else if (args[0] == "cutlass::bfloat16_t") m.out = DType::bf16;
  else if (args[0] == "float") m.out = DType::f32;
  else return mismatch(m.family, "element type unknown");
  return layout_is(l, {{0, 272}}) ? m : mismatch(m.family, "layout mismatch");
}

// prepare_grouped_gemm_data<A, B, Out, Scale, ProblemShape, StrideA, StrideB, StrideOut>
// (GroupMMCommon.cuh, torch.nn.functional.grouped_mm's setup): A, B, output, scale_A, scale_B,
// the five pointer arrays, problem_sizes, three stride arrays, offs, M, N, K, five
// std::array<int64_t, 3>, two scale strides, two bools. Its typed pointers are not what it
// writes: it stores per-group pointers into them (A + offset, ...) and never dereferences one,
// so scanning `output` after it reads the grouped GEMM's output before that GEMM ran.
FamilyMatch match_grouped_gemm_setup(std::string_view, const Layout& l) {
  FamilyMatch m = matched(AtenFamily::grouped_gemm_setup, l);
  return layout_is(l, {{0, 8},    {8, 8},    {16, 8},   {24, 8},   {32, 8},  {40, 8},  {48, 8},
                       {56, 8},   {64, 8},   {72, 8},   {80, 8},   {88, 8},  {96, 8},  {104, 8},
                       {112, 8},  {120, 4},  {124, 4},  {128, 4},  {136, 24}, {160, 24}, {184, 24},
                       {208, 24}, {232, 24}, {256, 8},  {264, 8},  {272, 1}, {273, 1}})
             ? m
             : mismatch(m.family, "layout mismatch");
}

// Families claimed so that their kernels are reported with a reason, not decoded.
template <AtenFamily F>
FamilyMatch claim_only(std::string_view, const Layout&) {
  switch (F) {
    case AtenFamily::flash_other: return mismatch(F, "split-kv accumulators not decoded");
    default: return mismatch(F, "extent unknown");
  }
}

using Matcher = FamilyMatch (*)(std::string_view demangled, const Layout&);
struct Entry {
  std::string_view name;  // qualified name without "(anonymous namespace)::"
  bool prefix;            // name is a prefix (variants such as cunn_SoftMaxForwardSmem)
  Matcher match;
};

constexpr std::array<Entry, 21> kTable{
    Entry{"at::native::vectorized_elementwise_kernel", false, match_vectorized},
    Entry{"at::native::unrolled_elementwise_kernel", false, match_unrolled},
    Entry{"at::native::unrolled_elementwise_kernel_for_multi_outputs", false, match_multi_output},
    Entry{"at::native::elementwise_kernel", false, match_legacy},
    Entry{"at::native::reduce_kernel", false, match_reduce},
    Entry{"at::native::vectorized_layer_norm_kernel", false, match_layer_norm_vec},
    Entry{"at::native::RowwiseMomentsCUDAKernel", false, match_rowwise_moments},
    Entry{"at::native::LayerNormForwardCUDAKernel", false, match_layer_norm_fwd},
    Entry{"softmax_warp_forward", false, match_softmax_warp},
    Entry{"at::native::cunn_SoftMaxForward", true, match_softmax_block},
    Entry{"at::native::indexSelectSmallIndex", false, match_index_select},
    Entry{"at::native::indexSelectLargeIndex", false, match_index_select},
    Entry{"at::native::vectorized_gather_kernel", false, match_gather},
    Entry{"at::native::CatArrayBatchedCopy", true, match_cat},
    Entry{"at::native::index_elementwise_kernel", false, match_index_elementwise},
    Entry{"pytorch_flash::flash_fwd_kernel", false, match_flash_plain},
    Entry{"pytorch_flash::flash_fwd_splitkv_kernel", false, match_flash_splitkv},
    Entry{"pytorch_flash::flash_fwd_splitkv_combine_kernel", false, claim_only<AtenFamily::flash_other>},
    Entry{"fmha_cutlassF_", true, match_mem_eff},
    Entry{"elementwise_kernel_with_index", false, match_with_index},
    Entry{"at::cuda::detail::prepare_grouped_gemm_data", false, match_grouped_gemm_setup},
};

}  // namespace

FamilyMatch match_aten(std::string_view mangled, std::string_view demangled, const Layout& layout) {
  std::string owned;
  if (demangled.empty()) {
    owned = demangle(mangled);
    demangled = owned;
  }
  const std::string q = qualified_name(demangled);
  for (const auto& e : kTable) {
    const bool hit = e.prefix ? q.compare(0, e.name.size(), e.name) == 0 : q == e.name;
    if (hit) return e.match(demangled, layout);
  }
  FamilyMatch none;
  none.reason = "not an ATen family";
  return none;
}

}  // namespace nanscope::decode

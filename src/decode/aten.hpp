// Decoders for the ATen kernel families of torch 2.11 (sm_90): which buffers a launch writes,
// with exact extent and element type, read from the launch's parameter bytes.
//
// Two steps, so the per-launch work is small:
//  - match_aten, ONCE per kernel: find the family from the demangled name, parse the static
//    facts it carries (output dtype, number of tensors), and gate on the parameter layout the
//    driver reports. Allocates; never call it per launch.
//  - decode_aten, per launch: read pointers and shapes from the parameter bytes. No allocation,
//    no strings.
// Structs and offsets follow the torch 2.11 headers (ATen/native/cuda/CUDALoops.cuh, Loops.cuh,
// MemoryAccess.cuh, Reduce.cuh, ATen/cuda/detail/OffsetCalculator.cuh, TensorInfo.cuh,
// PersistentSoftmax.cuh), the sources of Copy.cu and RangeFactories.cu (the casting copy's and
// the range factories' closures) and ../shared/notes/pytorch-kernels.md; docs/aten-decoders.md lists
// each family, its gate and what it returns when unsure.
#pragma once
#include <cstdint>
#include <string_view>

#include "decode/written.hpp"

namespace nanscope::decode {

enum class AtenFamily : uint8_t {
  none,
  vectorized,          // vectorized_elementwise_kernel<vec, func, array>(N, f, data)
  unrolled,            // unrolled_elementwise_kernel<func, array, ept, ic, oc, loader, storer>
  multi_output,        // unrolled_elementwise_kernel_for_multi_outputs<n, func, array, ic, oc>
  legacy,              // elementwise_kernel<nt, vt, gpu_kernel_impl_nocast lambda>(N, closure)
  reduce,              // reduce_kernel<nt, vec, ReduceOp<...>>(ReduceOp)
  layer_norm_vec,      // vectorized_layer_norm_kernel<T, T_ACC, rms>
  rowwise_moments,     // RowwiseMomentsCUDAKernel<T, T_ACC>
  layer_norm_fwd,      // LayerNormForwardCUDAKernel<T, T_ACC>
  softmax_warp,        // softmax_warp_forward<in, out, acc, log2, log, masked>
  softmax_block,       // cunn_SoftMaxForward{,Reg,Smem}<ILP, in, acc, out, Epilogue...>
  index_select,        // indexSelectSmallIndex / indexSelectLargeIndex
  gather,              // vectorized_gather_kernel<Align, index_t> (embedding)
  cat,                 // CatArrayBatchedCopy*<OpaqueType<n>, unsigned, Dims, batch, stride_size>
  index_elementwise,   // index_elementwise_kernel: index_copy_'s lambda decoded, other closures claimed (mismatch)
  flash_fwd,           // pytorch_flash::flash_fwd_kernel, flash_fwd_splitkv_kernel<..., Split=false, Append_KV=false>
  flash_other,         // other split-kv kernels and the combine kernel: claimed, not decoded
  mem_eff,             // fmha_cutlassF_*(AttentionKernel<scalar_t, ...>::Params): O and the LSE
  legacy_cast,         // elementwise_kernel<nt, vt, gpu_kernel_impl lambda>: dynamic casting, captureless functors
  with_index,          // elementwise_kernel_with_index<index_t, lambda>(N, f, data): arange, range, linspace, logspace
  grouped_gemm_setup,  // at::cuda::detail::prepare_grouped_gemm_data: grouped_mm's pointer arrays, no float written
  count_
};

const char* aten_family_name(AtenFamily);

enum class MatchKind : uint8_t {
  not_aten,         // no family claims the name: let another decoder try
  matched,          // decode_aten may be called for each launch
  layout_mismatch,  // a family claims it, but the layout or the name's facts do not fit
};

// How the output's element type is known.
enum class OutType : uint8_t {
  static_dtype,  // `out` from the name
  not_float,     // the name says the output is not floating (bool, integer, complex): no write
  runtime,       // StoreWithCast: the ScalarType byte in the storer parameter
  bytes_only,    // copies (gather): only bytes are known; dtype from the input
};

// What match_aten learned about one kernel. Plain data, cheap to copy into a per-kernel cache.
struct FamilyMatch {
  MatchKind kind = MatchKind::not_aten;
  AtenFamily family = AtenFamily::none;
  std::string_view reason;  // static text; for not_aten / layout_mismatch
  OutType out_type = OutType::not_float;
  DType out = DType::none;  // output element type (static_dtype)
  DType acc = DType::none;  // norms: T_ACC of mean/rstd
  uint8_t nargs = 0;        // tensors in the data array (elementwise); 0 = infer at launch
  uint8_t num_outputs = 1;  // multi_output: leading outputs in data
  bool second_output = false;  // reduce: dst[1] has the output dtype (Welford pair<T, T>)
  bool trivial_out = true;     // multi_output: contiguous (TrivialOffsetCalculator)
  uint32_t param_count = 0;    // the gated layout's parameter count
  uint32_t blob_size = 0;      // size of the struct parameter (reduce, legacy closure, flash)
  uint16_t batch = 0;          // cat: inputs per launch the metadata holds
  uint8_t dims = 0;            // cat: Dims of the output's TensorSizeStride
  uint8_t elem_bytes = 0;      // cat: sizeof(OpaqueType<n>)
  // The inputs' element types as the name gives them, in data order (elementwise: data[outputs..],
  // other families: their one tensor type in in[0]). Set at match time; in_count 0 with
  // in_known false: the name does not say (the reads then carry none/0).
  DType in[kMaxReads] = {};  // none: the type is not a DType (complex) or not parsed
  uint8_t in_skip = 0;       // bit i: input i is integer or bool, holds no NaN: not a read
  uint8_t in_count = 0;      // inputs the name implies (a lambda's arity, a named functor's)
  bool in_known = false;
  bool in_trivial = false;   // unrolled / multi_output: TrivialOffsetCalculator inputs (N each)
  uint8_t load_cast = 0;     // unrolled: N of LoadWithCast<N> (input types in the loader bytes)
  bool kv_dense = false;     // flash: K and V are [b, seqlen_k, h_k, d] (no KV cache indexing)
  // c10::ScalarType of the output: with_index, the dispatch case's type; legacy_cast, the value
  // dtypes[0] must hold (the copy lambda's argument type). 0xff: unset.
  uint8_t out_st = 0xff;
  uint8_t index_bytes = 0;   // with_index: width of N (index_t int or long)
  // The functor's first member is the one value it writes (FillFunctor, masked_fill's lambda),
  // of this type: a +-inf there is an intended infinity. none: not such a functor.
  DType constant = DType::none;
};

// Once per kernel. `mangled` is the device-side name, `demangled` its demangled text (pass an
// empty view to have it demangled here), `layout` the driver's parameter layout.
FamilyMatch match_aten(std::string_view mangled, std::string_view demangled, const Layout& layout);

// Per launch. A match that is not `matched` gives layout_mismatch with the match's reason.
Decoded decode_aten(const FamilyMatch& match, const LaunchView& launch, const AddressQuery& live);

}  // namespace nanscope::decode

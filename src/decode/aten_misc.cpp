// Norm, softmax, index and attention kernels: plain pointer parameters or one params struct.
#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

uint64_t ptr_param(const LaunchView& v, uint32_t i) { return load<uint64_t>(v.params[i], 0); }

// Kernels launched with one block per row (<<<M, threads>>>): M = gridDim.x. The launch
// sites are in .cu files the wheel does not ship; the gate is that the grid is 1-D.
bool rows_from_grid(const LaunchView& v, uint64_t& rows) {
  if (v.grid[1] != 1 || v.grid[2] != 1) return false;
  rows = v.grid[0];
  return true;
}

void add_if(Decoded& d, uint64_t ptr, uint64_t numel, DType dt, uint32_t arg) {
  if (ptr && numel) d.add_write(dense_write(ptr, numel, dt, arg));
}

// The one input of a family typed by the name (m.in[0]): none when the name does not say,
// a NaN-free read when it is an integer or bool tensor; `elements` only with a known type.
void add_typed_read(Decoded& d, const FamilyMatch& m, uint64_t ptr, uint64_t elements) {
  if (!m.in_known) return d.add_read(ptr);
  if (m.in_skip & 1u) return d.add_no_nan_read(ptr);
  d.add_read(ptr, m.in[0], m.in[0] == DType::none ? 0 : elements);
}

}  // namespace

// What a norm kernel reads at a param: X (M x N of T), gamma / beta (N of T, null when absent),
// or mean / rstd (M of T_ACC).
enum class NormRead : uint8_t { none, x, weight, moment };

// The norm kernels' common shape: reads[i] says what param i is, output Y (M x N of T)
// at param y when y != 0, moments (M of T_ACC) at params mean and mean + 1 when mean != 0.
struct NormParams {
  NormRead reads[8];
  uint32_t y, mean;
};
Decoded norm_rows(const FamilyMatch& m, const LaunchView& v, int64_t n, NormParams p) {
  uint64_t rows = 0;
  if (!rows_from_grid(v, rows) || n < 0) return Decoded::mismatch("grid is not one block per row");
  Decoded d;
  const DType t = m.out_type == OutType::static_dtype ? m.out : DType::none;
  for (uint32_t i = 0; i < v.count && i < 8; ++i) {
    const NormRead r = p.reads[i];
    if (r == NormRead::x) d.add_read(ptr_param(v, i), t, t == DType::none ? 0 : rows * uint64_t(n));
    if (r == NormRead::weight) d.add_read(ptr_param(v, i), t, t == DType::none ? 0 : uint64_t(n));
    if (r == NormRead::moment) d.add_read(ptr_param(v, i), m.acc, rows);
  }
  if (p.y && m.out_type == OutType::static_dtype)
    add_if(d, ptr_param(v, p.y), rows * uint64_t(n), m.out, p.y);
  for (uint32_t i = p.mean; p.mean && i < p.mean + 2; ++i) add_if(d, ptr_param(v, i), rows, m.acc, i);
  return d;
}

// vectorized_layer_norm_kernel(int N, T_ACC eps, X, gamma, beta, T_ACC* mean, T_ACC* rstd, T* Y):
// Y is M x N of T, mean/rstd M of T_ACC (mean is null for RMSNorm).
Decoded decode_layer_norm_vec(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  using R = NormRead;
  return norm_rows(m, v, load<int32_t>(v.params[0], 0), {{R::none, R::none, R::x, R::weight, R::weight}, 7, 5});
}

// RowwiseMomentsCUDAKernel(int64_t N, eps, const T* X, mean, rstd): M moments each.
Decoded decode_rowwise_moments(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  return norm_rows(m, v, load<int64_t>(v.params[0], 0), {{NormRead::none, NormRead::none, NormRead::x}, 0, 3});
}

// LayerNormForwardCUDAKernel(int64_t N, X, mean, rstd, gamma, beta, T* Y): Y is M x N; mean
// and rstd are read here.
Decoded decode_layer_norm_fwd(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  using R = NormRead;
  return norm_rows(m, v, load<int64_t>(v.params[0], 0),
                   {{R::none, R::x, R::moment, R::moment, R::weight, R::weight}, 6, 0});
}

// softmax_warp_forward(dst, src, batch_size, stride, element_count, ...): row r of a warp's
// batch is stored at first_batch * stride + r * element_count (PersistentSoftmax.cuh), so the
// extent is exact only when stride == element_count: batch_size dense rows.
Decoded decode_softmax_warp(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const int32_t batch = load<int32_t>(v.params[2], 0);
  const int32_t stride = load<int32_t>(v.params[3], 0);
  const int32_t count = load<int32_t>(v.params[4], 0);
  if (batch < 0 || count < 0 || stride != count)
    return Decoded::mismatch("softmax stride differs from element count");
  Decoded d;
  add_typed_read(d, m, ptr_param(v, 1), uint64_t(batch) * uint64_t(count));  // rows as dense as dst's
  if (m.out_type == OutType::static_dtype)
    add_if(d, ptr_param(v, 0), uint64_t(batch) * uint64_t(count), m.out, 0);
  return d;
}

// cunn_SoftMaxForward*(out, in, classes), launched with one block per row.
Decoded decode_softmax_block(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  uint64_t rows = 0;
  const int64_t classes =
      m.blob_size == 8 ? load<int64_t>(v.params[2], 0) : load<int32_t>(v.params[2], 0);
  if (!rows_from_grid(v, rows) || classes < 0) return Decoded::mismatch("grid is not one block per row");
  Decoded d;
  add_typed_read(d, m, ptr_param(v, 1), rows * uint64_t(classes));  // input += row * classes
  if (m.out_type == OutType::static_dtype)
    add_if(d, ptr_param(v, 0), rows * uint64_t(classes), m.out, 0);
  return d;
}

namespace {

// The source's elements: index_select_out_cuda_impl passes selfInfo after reduceDim(selfSelectDim)
// (sizes[dim] = 1) and the dim's real size as the last parameter, srcSelectDimSize; the kernel
// may read any index of it, so the launch may read the whole (dense) source.
uint64_t index_select_src(const FamilyMatch& m, const LaunchView& v) {
  const char* src = v.params[1];
  const int32_t dims = load<int32_t>(src, 208);
  const int32_t dim = load<int32_t>(v.params[4], 0);
  const int64_t dim_size = load<int64_t>(v.params[6], 0);
  if (m.in[0] == DType::none || dims < 1 || dims > static_cast<int32_t>(kMaxDims) || dim < 0 ||
      dim >= dims || dim_size < 0 || load<uint32_t>(src, 8 + 4 * dim) != 1)
    return 0;
  DimList list;
  for (int32_t i = 0; i < dims; ++i)
    list.add(i == dim ? uint64_t(dim_size) : load<uint32_t>(src, 8 + 4 * i), load<uint32_t>(src, 108 + 4 * i));
  return dense_elements(list, 1);
}

}  // namespace

// TensorInfo<T, unsigned int> (TensorInfo.cuh): {T* data; U sizes[25]; U strides[25]; int dims;}
// with strides in elements. index_select writes every element of dst: its select dim has as
// many entries as there are indices.
Decoded decode_index_select(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const char* dst = v.params[0];
  const char* idx = v.params[2];
  const int32_t dims = load<int32_t>(dst, 208);
  const int32_t sel = load<int32_t>(v.params[3], 0);  // dstSelectDim
  // The host passes outInfo after reduceDim(dstSelectDim) (sizes[dim] = 1); the kernel writes
  // index i of that dim for i < indices.sizes[0] (the collapsed 1-D index).
  if (dims < 1 || dims > static_cast<int32_t>(kMaxDims) || sel < 0 || sel >= dims ||
      load<uint32_t>(dst, 8 + 4 * sel) != 1 || load<int32_t>(idx, 208) != 1)
    return Decoded::mismatch("layout mismatch");
  uint64_t numel = 1, last = 0;
  for (int32_t i = 0; i < dims; ++i) {
    const uint32_t size = i == sel ? load<uint32_t>(idx, 8) : load<uint32_t>(dst, 8 + 4 * i);
    numel *= size;
    if (size) last += uint64_t(size - 1) * load<uint32_t>(dst, 108 + 4 * i);
  }
  Decoded d;
  if (!(m.in_skip & 1u)) d.add_read(load<uint64_t>(v.params[1], 0), m.in[0], index_select_src(m, v));
  else d.add_no_nan_read(load<uint64_t>(v.params[1], 0));
  if (!(m.in_skip & 2u)) d.add_read(load<uint64_t>(v.params[2], 0));
  else d.add_no_nan_read(load<uint64_t>(v.params[2], 0));
  if (m.out_type != OutType::static_dtype || numel == 0) return d;
  const uint32_t es = static_cast<uint32_t>(dtype_size(m.out));
  d.add_write(make_write(load<uint64_t>(dst, 0), numel, last * es, m.out, es, 0));
  return d;
}

// vectorized_gather_kernel(out, inp, idx, num_ind, slice_size, ind_dim_size, inp_stride,
// out_stride, allow_neg): num_ind rows of slice_size bytes. Only bytes are known (the name
// carries no element type): elem_size 0, elements 0, dtype from `inp`. Rows with a gap
// (out_stride != slice_size) are not decoded, whatever out_stride's unit is.
Decoded decode_gather(const FamilyMatch&, const LaunchView& v, const AddressQuery&) {
  const int32_t num_ind = load<int32_t>(v.params[3], 0);
  const int64_t slice = load<int64_t>(v.params[4], 0);
  const int64_t out_stride = load<int64_t>(v.params[7], 0);
  if (num_ind < 0 || slice < 0 || out_stride != slice)
    return Decoded::mismatch("gather rows are not dense");
  Decoded d;
  const uint64_t inp = ptr_param(v, 1);
  // inp's dtype is not in the name and its stride unit is unknown: none/0. idx is index_t
  // (int or long), which holds no NaN: no read.
  d.add_read(inp);
  if (num_ind == 0 || slice == 0) return d;
  Write w;
  w.ptr = ptr_param(v, 0);
  w.span_bytes = uint64_t(num_ind) * uint64_t(slice);
  w.dtype_from = inp;
  d.add_write(w);
  return d;
}

// prepare_grouped_gemm_data: the launch writes only the grouped GEMM's pointer, shape and
// stride arrays (integers, no NaN) and reads only `offs` (int32): nothing floating to scan. The
// grouped GEMM's own output is judged after the GEMM (a CUTLASS kernel: its readers' initial scans).
Decoded decode_grouped_gemm_setup(const FamilyMatch&, const LaunchView&, const AddressQuery&) { return {}; }

namespace {

// The slab input i of a cat writes: its concat-dim range, checked against nElements.
struct CatSlabs {
  uint64_t lo = 0, hi = 0, other = 1;  // concat-dim range; product of the other sizes
};
bool cat_slabs(const FamilyMatch& m, const char* meta, const char* os, uint32_t cd, uint32_t n,
               CatSlabs& s) {
  const uint32_t b = m.batch;
  for (uint32_t d = 0; d < m.dims; ++d)
    if (d != cd) s.other *= load<uint32_t>(os, 4 * d);
  s.lo = s.hi = load<uint32_t>(meta, 8 * b);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t off = load<uint32_t>(meta, 8 * b + 4 * i);
    const uint32_t size = load<uint32_t>(meta, 12 * b + 4 * i);
    if (off != s.hi || load<uint32_t>(meta, 16 * b + 4 * i) != uint64_t(size) * s.other) return false;
    s.hi += size;  // inputs of one batch are consecutive along the concat dim
  }
  return s.hi <= load<uint32_t>(os, 4 * cd);
}

}  // namespace

// CatArrayBatchedCopy*(out, inputs, os, concatDim, dimStride): block row y copies input y
// (gridDim.y inputs) to out + offset[y] * dimStride + its index through os. The launch writes
// the concat-dim range its inputs cover; only the element size is known.
Decoded decode_cat(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const char* meta = v.params[1];
  const char* os = v.params[2];
  const int32_t cd = load<int32_t>(v.params[3], 0);
  const uint32_t n = v.grid[1];
  if (n < 1 || n > m.batch || v.grid[2] != 1 || cd < 0 || cd >= m.dims ||
      load<uint32_t>(v.params[4], 0) != load<uint32_t>(os, 16 + 4 * cd))
    return Decoded::mismatch("layout mismatch");
  CatSlabs s;
  if (!cat_slabs(m, meta, os, static_cast<uint32_t>(cd), n, s))
    return Decoded::mismatch("cat inputs do not tile the output");
  Decoded d;
  // An input with isContiguous (bool[batch] at 20 * batch) is read as data[0..nElements): its
  // extent is exact; a strided one (stride_size > 1 sets it false for all) is left at 0.
  for (uint32_t i = 0; i < n; ++i) {
    const bool dense = load<uint8_t>(meta, 20 * m.batch + i) != 0;
    d.add_read(load<uint64_t>(meta, 8 * i), DType::none, dense ? load<uint32_t>(meta, 16 * m.batch + 4 * i) : 0);
  }
  if (s.hi == s.lo || s.other == 0) return d;
  uint64_t last = (s.hi - s.lo - 1) * uint64_t(load<uint32_t>(os, 16 + 4 * cd));
  for (int32_t k = 0; k < m.dims; ++k)
    if (k != cd) last += uint64_t(load<uint32_t>(os, 4 * k) - 1) * load<uint32_t>(os, 16 + 4 * k);
  const uint32_t es = m.elem_bytes;
  const uint64_t base = ptr_param(v, 0) + s.lo * load<uint32_t>(os, 16 + 4 * cd) * es;
  Write w = make_write(base, (s.hi - s.lo) * s.other, last * es, DType::none, es, 0);
  w.dtype_from = load<uint64_t>(meta, 0);
  d.add_write(w);
  return d;
}

namespace {

// Qkv_params: q_ptr, k_ptr, v_ptr at 0/8/16, then int64 element strides batch (q, k, v) at
// 24/32/40, row at 48/56/64, head at 72/80/88; h, h_k at 96/100. Q is [b, s_q, h, d], K and V
// [b, s_k, h_k, d], the head dim contiguous; each is exact only when it packs densely.
uint64_t flash_elements(const char* p, uint32_t which, int32_t seqlen, int32_t heads) {
  const int32_t b = load<int32_t>(p, 176), d = load<int32_t>(p, 192);
  if (b <= 0 || seqlen <= 0 || heads <= 0 || d <= 0) return 0;
  const int64_t sb = load<int64_t>(p, 24 + 8 * which), sr = load<int64_t>(p, 48 + 8 * which);
  const int64_t sh = load<int64_t>(p, 72 + 8 * which);
  return dense_4d(uint64_t(b), sb, uint64_t(seqlen), sr, uint64_t(heads), sh, uint64_t(d));
}

// Q's extent always; K's and V's only in the non-split kernel (kv_dense) and without
// cu_seqlens_k (+232): the split-kv kernel may index a KV cache through fields whose offsets
// differ between FA2 versions.
void add_qkv_reads(Decoded& d, const FamilyMatch& m, const char* p) {
  d.add_read(load<uint64_t>(p, 0), m.out, flash_elements(p, 0, load<int32_t>(p, 180), load<int32_t>(p, 96)));
  const bool kv = m.kv_dense && load<uint64_t>(p, 232) == 0;
  const int32_t sk = load<int32_t>(p, 184), hk = load<int32_t>(p, 100);
  for (uint32_t i = 1; i < 3; ++i)
    d.add_read(load<uint64_t>(p, 8 * i), m.out, kv ? flash_elements(p, i, sk, hk) : 0);
}

}  // namespace

// pytorch_flash Flash_fwd_params (flash.h, FA2): Qkv_params {q,k,v ptrs; 9 int64 strides; int h,
// h_k, h_h_k_ratio} then o_ptr +112, oaccum +120, o_batch/row/head_stride +128/136/144 (in
// elements), p_ptr +152, softmax_lse_ptr +160, lseaccum +168, b, seqlen_q, seqlen_k,
// seqlen_knew, d at +176/180/184/188/192, cu_seqlens_q +224. O is [b, seqlen_q, h, d] with the
// last dim contiguous; the LSE is float [b, h, seqlen_q]. Varlen (cu_seqlens_q) is not decoded.
Decoded decode_flash_fwd(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const char* p = v.params[0];
  const int32_t h = load<int32_t>(p, 96), b = load<int32_t>(p, 176);
  const int32_t sq = load<int32_t>(p, 180), hd = load<int32_t>(p, 192);
  const int64_t ob = load<int64_t>(p, 128), orow = load<int64_t>(p, 136), oh = load<int64_t>(p, 144);
  if (load<uint64_t>(p, 224)) return Decoded::mismatch("varlen attention not decoded");
  if (h <= 0 || b <= 0 || sq <= 0 || hd <= 0 || hd > 512 || ob < 0 || orow < 0 || oh < 0)
    return Decoded::mismatch("layout mismatch");
  Decoded d;
  add_qkv_reads(d, m, p);
  const uint32_t es = static_cast<uint32_t>(dtype_size(m.out));
  const uint64_t numel = uint64_t(b) * uint64_t(sq) * uint64_t(h) * uint64_t(hd);
  const uint64_t last = uint64_t(b - 1) * ob + uint64_t(sq - 1) * orow + uint64_t(h - 1) * oh + (hd - 1);
  d.add_write(make_write(load<uint64_t>(p, 112), numel, last * es, m.out, es, 0));
  // The logsumexp of a row that sees no key is +inf by design (flash: `sum == 0 ? INFINITY`).
  if (const uint64_t lse = load<uint64_t>(p, 160)) {
    Write w = dense_write(lse, uint64_t(b) * uint64_t(h) * uint64_t(sq), DType::f32, 0);
    w.intended_inf = kIntendBothInf;
    d.add_write(w);
  }
  return d;
}

}  // namespace nanscope::decode::aten

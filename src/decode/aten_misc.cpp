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

}  // namespace

// The norm kernels' common shape: reads in params [read_from, read_to), output Y (M x N of T)
// at param y when y != 0, moments (M of T_ACC) at params mean and mean + 1 when mean != 0.
struct NormParams {
  uint32_t read_from, read_to, y, mean;
};
Decoded norm_rows(const FamilyMatch& m, const LaunchView& v, int64_t n, NormParams p) {
  uint64_t rows = 0;
  if (!rows_from_grid(v, rows) || n < 0) return Decoded::mismatch("grid is not one block per row");
  Decoded d;
  for (uint32_t i = p.read_from; i < p.read_to; ++i) d.add_read(ptr_param(v, i));
  if (p.y && m.out_type == OutType::static_dtype)
    add_if(d, ptr_param(v, p.y), rows * uint64_t(n), m.out, p.y);
  for (uint32_t i = p.mean; p.mean && i < p.mean + 2; ++i) add_if(d, ptr_param(v, i), rows, m.acc, i);
  return d;
}

// vectorized_layer_norm_kernel(int N, T_ACC eps, X, gamma, beta, T_ACC* mean, T_ACC* rstd, T* Y):
// Y is M x N of T, mean/rstd M of T_ACC (mean is null for RMSNorm).
Decoded decode_layer_norm_vec(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  return norm_rows(m, v, load<int32_t>(v.params[0], 0), {2, 5, 7, 5});
}

// RowwiseMomentsCUDAKernel(int64_t N, eps, const T* X, mean, rstd): M moments each.
Decoded decode_rowwise_moments(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  return norm_rows(m, v, load<int64_t>(v.params[0], 0), {2, 3, 0, 3});
}

// LayerNormForwardCUDAKernel(int64_t N, X, mean, rstd, gamma, beta, T* Y): Y is M x N; mean
// and rstd are read here.
Decoded decode_layer_norm_fwd(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  return norm_rows(m, v, load<int64_t>(v.params[0], 0), {1, 6, 6, 0});
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
  d.add_read(ptr_param(v, 1));
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
  d.add_read(ptr_param(v, 1));
  if (m.out_type == OutType::static_dtype)
    add_if(d, ptr_param(v, 0), rows * uint64_t(classes), m.out, 0);
  return d;
}

// TensorInfo<T, unsigned int> (TensorInfo.cuh): {T* data; U sizes[25]; U strides[25]; int dims;}
// with strides in elements. index_select writes every element of dst.
Decoded decode_index_select(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const char* dst = v.params[0];
  const int32_t dims = load<int32_t>(dst, 208);
  if (dims < 1 || dims > static_cast<int32_t>(kMaxDims)) return Decoded::mismatch("layout mismatch");
  uint64_t numel = 1, last = 0;
  for (int32_t i = 0; i < dims; ++i) {
    const uint32_t size = load<uint32_t>(dst, 8 + 4 * i);
    numel *= size;
    if (size) last += uint64_t(size - 1) * load<uint32_t>(dst, 108 + 4 * i);
  }
  Decoded d;
  d.add_read(load<uint64_t>(v.params[1], 0));
  d.add_read(load<uint64_t>(v.params[2], 0));
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
  d.add_read(inp);
  d.add_read(ptr_param(v, 2));
  if (num_ind == 0 || slice == 0) return d;
  Write w;
  w.ptr = ptr_param(v, 0);
  w.span_bytes = uint64_t(num_ind) * uint64_t(slice);
  w.dtype_from = inp;
  d.add_write(w);
  return d;
}

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
  for (uint32_t i = 0; i < n; ++i) d.add_read(load<uint64_t>(meta, 8 * i));
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
  for (uint32_t off = 0; off < 24; off += 8) d.add_read(load<uint64_t>(p, off));
  const uint32_t es = static_cast<uint32_t>(dtype_size(m.out));
  const uint64_t numel = uint64_t(b) * uint64_t(sq) * uint64_t(h) * uint64_t(hd);
  const uint64_t last = uint64_t(b - 1) * ob + uint64_t(sq - 1) * orow + uint64_t(h - 1) * oh + (hd - 1);
  d.add_write(make_write(load<uint64_t>(p, 112), numel, last * es, m.out, es, 0));
  add_if(d, load<uint64_t>(p, 160), uint64_t(b) * uint64_t(h) * uint64_t(sq), DType::f32, 0);
  return d;
}

}  // namespace nanscope::decode::aten

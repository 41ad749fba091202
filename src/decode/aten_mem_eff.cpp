// PyTorch's mem-efficient attention forward, fmha_cutlassF_*(AttentionKernel<scalar_t, ...>::Params)
// (mem_eff_attention/kernel_forward.h, 272 bytes in torch 2.11):
//   0 query_ptr, 8 key_ptr, 16 value_ptr, 24 attn_bias_ptr, 32 seqstart_q_ptr, 40 seqstart_k_ptr,
//   48 seqlen_k_ptr, 64 output_ptr, 80 logsumexp_ptr, 96 head_dim, 100 head_dim_value,
//   104 num_queries, 108 num_keys, 120/124/128/132/136 q/k/v/bias/o_strideM, 140/144/148 q/k/v
//   strideH (int32), 152 bias_strideH, 160/168/176/184 q/k/v/bias strideB (int64),
//   192 num_batches, 196 num_heads; strides in elements.
// advance_to_block: output row (batch b, query q, head h) starts at (b * num_queries + q) *
// o_strideM + h * head_dim_value, so O is [B, num_queries, num_heads, head_dim_value], dense
// when o_strideM == num_heads * head_dim_value. The LSE (float) is [B, H, ceil(nq / 32) * 32].
// Variable-length batches (seqstart_q_ptr set) index rows through device arrays: refused.
#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

constexpr uint32_t kAlignLse = 32;  // AttentionKernel::kAlignLSE

struct MemEffShape {
  int32_t b, h, nq, nk, hd, hdv;
};

void add_reads(Decoded& d, const FamilyMatch& m, const char* p, const MemEffShape& s) {
  d.add_read(load<uint64_t>(p, 0), m.out,
             dense_4d(s.b, load<int64_t>(p, 160), s.nq, load<int32_t>(p, 120), s.h, load<int32_t>(p, 140), s.hd));
  d.add_read(load<uint64_t>(p, 8), m.out,
             dense_4d(s.b, load<int64_t>(p, 168), s.nk, load<int32_t>(p, 124), s.h, load<int32_t>(p, 144), s.hd));
  d.add_read(load<uint64_t>(p, 16), m.out,
             dense_4d(s.b, load<int64_t>(p, 176), s.nk, load<int32_t>(p, 128), s.h, load<int32_t>(p, 148), s.hdv));
  if (const uint64_t bias = load<uint64_t>(p, 24))  // [B, H, nq, nk] additive bias (masks)
    d.add_read(bias, m.out,
               dense_4d(s.b, load<int64_t>(p, 184), s.h, load<int64_t>(p, 152), s.nq, load<int32_t>(p, 132), s.nk));
}

}  // namespace

Decoded decode_mem_eff(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const char* p = v.params[0];
  if (load<uint64_t>(p, 32) || load<uint64_t>(p, 40)) return Decoded::mismatch("varlen attention not decoded");
  const MemEffShape s{load<int32_t>(p, 192), load<int32_t>(p, 196), load<int32_t>(p, 104),
                      load<int32_t>(p, 108), load<int32_t>(p, 96),  load<int32_t>(p, 100)};
  const int32_t o_row = load<int32_t>(p, 136);
  if (s.b <= 0 || s.h <= 0 || s.nq <= 0 || s.nk <= 0 || s.hd <= 0 || s.hd > 1024 || s.hdv <= 0 || s.hdv > 1024 ||
      int64_t(o_row) != int64_t(s.h) * s.hdv)
    return Decoded::mismatch("layout mismatch");
  Decoded d;
  add_reads(d, m, p, s);
  const uint64_t out = uint64_t(s.b) * uint64_t(s.nq) * uint64_t(s.h) * uint64_t(s.hdv);
  d.add_write(dense_write(load<uint64_t>(p, 64), out, m.out, 0));
  if (const uint64_t lse = load<uint64_t>(p, 80)) {
    const uint64_t lse_dim = (uint64_t(s.nq) + kAlignLse - 1) / kAlignLse * kAlignLse;
    // Its padded tail (rows past nq, to kAlignLse) and fully masked rows hold +-inf by design.
    Write w = dense_write(lse, uint64_t(s.b) * uint64_t(s.h) * lse_dim, DType::f32, 0);
    w.intended_inf = kIntendBothInf;
    d.add_write(w);
  }
  return d;
}

}  // namespace nanscope::decode::aten

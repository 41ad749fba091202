// reduce_kernel<nt, output_vec_size, ReduceOp<...>>(ReduceOp) (Reduce.cuh).
//
// struct ReduceOp { ops_t ops; arg_t ident; ReduceConfig config; OffsetCalculator<1> input_calc;
//   OffsetCalculator<2> output_calc; const void* src; const char* dst[2]; void* acc_buf;
//   void* cta_buf; int* semaphores; int64_t base_idx; bool accumulate; bool final_output;
//   int noutputs; };
// ops and ident vary in size, so the head is found from the fixed tail: src at size-64. The
// 4-aligned config + calculators (64 + 404 + 504 = 972 bytes) end at size-64, or at size-68
// when padding sits before the 8-aligned src. Both candidates are checked against the
// calculator's own invariants and config.num_outputs; exactly one must fit.
#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

// ReduceConfig (Reduce.cuh): 14 ints, a bool (padded to 4), an int. The struct sizes in the
// kernel table cannot tell 64 from 68 (the padding before src absorbs 4 bytes), so this is
// the header's count.
constexpr uint32_t kConfigBytes = 64;
constexpr uint32_t kHeadBytes = kConfigBytes + offset_calc_size(1) + offset_calc_size(2);  // 972
static_assert(kConfigBytes == 16 * 4, "ReduceConfig: 6 + 3 + 2 + 3 ints, a padded bool, an int");

// Tail offsets from the end of the struct.
constexpr uint32_t kSrc = 64, kDst0 = 56, kDst1 = 48, kAccBuf = 40, kFinal = 7, kNoutputs = 4;

// The output calculator's extent for config at `c`, if that placement is self-consistent.
bool config_at(const char* op, uint32_t c, CalcExtent& out) {
  const int32_t elem = load<int32_t>(op, c);
  const int32_t num_outputs = load<int32_t>(op, c + 8);
  CalcExtent in;
  if (elem <= 0 || elem > 64 || num_outputs <= 0) return false;
  if (!offset_calc_extent(op + c + kConfigBytes, 1, 0, in)) return false;
  const char* oc = op + c + kConfigBytes + offset_calc_size(1);
  return offset_calc_extent(oc, 2, 0, out) && out.numel == static_cast<uint64_t>(num_outputs);
}

// The elements src is read over: the reduced dims (input_calc, arg 0) and the kept dims
// (output_calc, arg 1), both in bytes (make_input_calculator / make_output_calculator take
// iter.strides). The input calculator must span config.num_inputs, or nothing is claimed.
uint64_t src_elements(const char* op, uint32_t c, DType dt) {
  if (dt == DType::none) return 0;
  const char* ic = op + c + kConfigBytes;
  CalcExtent in;
  if (!offset_calc_extent(ic, 1, 0, in) || in.numel != static_cast<uint64_t>(load<int32_t>(op, c + 4)))
    return 0;
  DimList dims;
  add_calc_dims(ic, 1, 0, dims);
  add_calc_dims(ic + offset_calc_size(1), 2, 1, dims);
  return dense_elements(dims, dtype_size(dt));
}

}  // namespace

Decoded decode_reduce(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const char* op = v.params[0];
  const uint32_t size = m.blob_size;
  CalcExtent e0, e1;
  const bool fit0 = config_at(op, size - kSrc - kHeadBytes, e0);
  const bool fit1 = size >= kSrc + 4 + kHeadBytes + 4 && config_at(op, size - kSrc - 4 - kHeadBytes, e1);
  if (fit0 == fit1) return Decoded::mismatch("extent unknown");
  const CalcExtent& e = fit0 ? e0 : e1;
  const int32_t noutputs = load<int32_t>(op, size - kNoutputs);
  if (noutputs != 1 && noutputs != 2) return Decoded::mismatch("layout mismatch");
  Decoded d;
  const uint32_t c = size - kSrc - (fit0 ? 0 : 4) - kHeadBytes;
  if (!(m.in_skip & 1u)) d.add_read(load<uint64_t>(op, size - kSrc), m.in[0], src_elements(op, c, m.in[0]));
  else d.add_no_nan_read(load<uint64_t>(op, size - kSrc));
  if (m.out_type != OutType::static_dtype) return d;
  // Not the final pass of a split reduction: partials of arg_t go to acc_buf (layout not
  // decoded, so not reported); without acc_buf they are stored as out_scalar_t in dst[0].
  const bool final_output = load<uint8_t>(op, size - kFinal) != 0;
  const uint64_t acc_buf = load<uint64_t>(op, size - kAccBuf);
  if (!final_output && acc_buf) {
    d.reason = "partials in acc_buf";
    return d;
  }
  const uint32_t es = static_cast<uint32_t>(dtype_size(m.out));
  d.add_write(make_write(load<uint64_t>(op, size - kDst0), e.distinct, e.max_off, m.out, es, 0));
  // set_results: dst[1] at base_offset / sizeof(T1) * sizeof(T2); T1 == T2 for Welford.
  if (noutputs == 2 && m.second_output && final_output)
    d.add_write(make_write(load<uint64_t>(op, size - kDst1), e.distinct, e.max_off, m.out, es, 0));
  return d;
}

}  // namespace nanscope::decode::aten

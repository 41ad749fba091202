// TensorIterator elementwise families (CUDALoops.cuh, Loops.cuh): data[0..outputs-1] are the
// outputs, the rest inputs; `int N` is the element count of the launch.
#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

// A StoreWithCast / LoadWithCast byte: its DType, `is_float` false for the types that hold no
// NaN or are no DType (integers, bool, complex, quantized). Unknown bytes: false.
bool scalar_type(uint8_t st, DType& dt, bool& is_float) {
  const ScalarInfo* s = scalar_info(st);
  if (!s) return false;
  dt = s->dtype;
  is_float = s->dtype != DType::none;
  return true;
}

uint32_t scalar_type_size(uint8_t st) {
  const ScalarInfo* s = scalar_info(st);
  return s ? s->size : 0;
}

// Whether the name types the inputs data[first..nargs-1]: it must imply exactly that many.
bool typed(const FamilyMatch& m, uint32_t first, uint32_t nargs) {
  return m.in_known && first <= nargs && m.in_count == nargs - first;
}

// Inputs data[first..nargs-1] with the name's types, `elements` each (0: unknown); integer and
// bool inputs are no reads. A name that implies another input count gives none/0 for all.
void add_inputs(Decoded& d, const FamilyMatch& m, const char* data, uint32_t first, uint32_t nargs,
                uint64_t elements) {
  const bool known = typed(m, first, nargs);
  for (uint32_t i = first; i < nargs; ++i) {
    const uint32_t k = i - first;
    if (!known) {
      d.add_read(load<uint64_t>(data, 8 * i));
    } else if (!(m.in_skip >> k & 1u)) {
      d.add_read(load<uint64_t>(data, 8 * i), m.in[k], elements);
    } else {
      d.add_no_nan_read(load<uint64_t>(data, 8 * i));  // integer or bool: only read, never scanned
    }
  }
}

// LoadWithCast<K> (MemoryAccess.cuh): ScalarType dtypes[K] (1 byte each), then uint32_t
// element_sizes[K] 4-aligned, set from iter.dtype(noutputs + i). A size that disagrees with its
// type byte leaves that input untyped.
void add_cast_inputs(Decoded& d, const FamilyMatch& m, const char* data, const char* loader,
                     uint64_t elements) {
  const uint32_t k_n = m.load_cast, sizes_at = (k_n + 3) & ~3u;
  for (uint32_t k = 0; k < k_n; ++k) {
    const uint64_t p = load<uint64_t>(data, 8 * (k + 1));
    const uint8_t st = load<uint8_t>(loader, k);
    DType dt = DType::none;
    bool is_float = false;
    const uint32_t size = scalar_type_size(st);
    if (!size || load<uint32_t>(loader, sizes_at + 4 * k) != size || !scalar_type(st, dt, is_float)) {
      d.add_read(p);
      continue;
    }
    if (!is_float && !(st >= 8 && st <= 10)) {  // integer, bool, quantized: no NaN, only read
      d.add_no_nan_read(p);
      continue;
    }
    d.add_read(p, is_float ? dt : DType::none, elements);  // complex: a read of unknown type
  }
}

// The common shape of the contiguous families: one dense output of N elements at data[0].
// Inputs are N elements each when their calculator is trivial (always, for vectorized).
Decoded contiguous_out(const FamilyMatch& m, const LaunchView& v, DType dt, bool trivial_in) {
  const int32_t n = load<int32_t>(v.params[0], 0);
  if (n < 0) return Decoded::mismatch("negative N");
  Decoded d;
  const char* data = v.params[2];
  if (dt != DType::none) {
    Write w = dense_write(load<uint64_t>(data, 0), static_cast<uint64_t>(n), dt, 2);
    // A fill or masked_fill writes its one value: the functor (param 1) holds it first.
    if (m.constant != DType::none && v.count > 1) w.intended_inf = infinity_of(v.params[1], m.constant);
    d.add_write(w);
  }
  const uint64_t elements = trivial_in ? static_cast<uint64_t>(n) : 0;
  if (m.load_cast)
    add_cast_inputs(d, m, data, v.params[5], elements);
  else
    add_inputs(d, m, data, 1, m.nargs, elements);
  return d;
}

// The elements input `i` of a closure's calculator reads when they pack densely (0: unknown).
uint64_t strided_elements(const char* blob, uint32_t nargs, uint32_t i, DType dt) {
  if (dt == DType::none) return 0;
  DimList dims;
  add_calc_dims(blob, nargs, i, dims);
  return dense_elements(dims, dtype_size(dt));
}

// Non-contiguous inputs: each one's extent from its byte strides in the closure's calculator.
void add_strided_inputs(Decoded& d, const FamilyMatch& m, const char* blob, uint32_t nargs) {
  const char* data = blob + legacy_data_at(nargs);
  if (!typed(m, 1, nargs)) return add_inputs(d, m, data, 1, nargs, 0);
  for (uint32_t i = 1; i < nargs; ++i) {
    if (m.in_skip >> (i - 1) & 1u) {
      d.add_no_nan_read(load<uint64_t>(data, 8 * i));
      continue;
    }
    const DType dt = m.in[i - 1];
    d.add_read(load<uint64_t>(data, 8 * i), dt, strided_elements(blob, nargs, i, dt));
  }
}

// The legacy closure for a given NARGS: OffsetCalculator<NARGS> at 0, data at align8 after it.
bool legacy_fits(const FamilyMatch& m, const char* blob, uint32_t nargs, int32_t n, CalcExtent& e) {
  const uint32_t data_at = legacy_data_at(nargs);
  return data_at + 8 * nargs <= m.blob_size && offset_calc_extent(blob, nargs, 0, e) &&
         e.numel == static_cast<uint64_t>(n);
}

bool all_live(const char* blob, uint32_t nargs, const AddressQuery& live) {
  const uint32_t data_at = legacy_data_at(nargs);
  for (uint32_t i = 0; i < nargs; ++i)
    if (!live(load<uint64_t>(blob, data_at + 8 * i))) return false;
  return true;
}

// A fill or masked_fill in the closure: the functor follows data (its value first, 8-aligned
// for every floating type); a masked_fill lambda is nvcc's host-device wrapper, the value then a
// pointer (656 bytes for NARGS 3, as the table's rows have).
uint8_t legacy_constant_inf(const FamilyMatch& m, const char* blob, uint32_t nargs) {
  const uint32_t functor_at = legacy_data_at(nargs) + 8 * nargs;
  if (m.constant == DType::none || functor_at + dtype_size(m.constant) > m.blob_size) return 0;
  return infinity_of(blob + functor_at, m.constant);
}

// NARGS of a named functor's closure: the one count (1..6) whose data pointers are all live.
uint32_t infer_nargs(const FamilyMatch& m, const char* blob, int32_t n, const AddressQuery& live) {
  uint32_t found = 0;
  for (uint32_t k = 1; k <= 6; ++k) {
    CalcExtent e;
    if (!legacy_fits(m, blob, k, n, e) || !all_live(blob, k, live)) continue;
    if (found) return 0;  // two counts fit: ambiguous
    found = k;
  }
  return found;
}

}  // namespace

Decoded decode_vectorized(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  return contiguous_out(m, v, m.out_type == OutType::static_dtype ? m.out : DType::none, true);
}

// With StoreWithCast<1> the output type is dtypes[0] (MemoryAccess.cuh): the first byte of the
// storer, followed at +4 by element_sizes[0], which must agree with it.
Decoded decode_unrolled(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  if (m.out_type != OutType::runtime)
    return contiguous_out(m, v, m.out_type == OutType::static_dtype ? m.out : DType::none, m.in_trivial);
  const char* storer = v.params[6];
  DType dt = DType::none;
  bool is_float = false;
  if (!scalar_type(load<uint8_t>(storer, 0), dt, is_float))
    return Decoded::mismatch("unknown ScalarType in StoreWithCast");
  if (is_float && load<uint32_t>(storer, 4) != dtype_size(dt))
    return Decoded::mismatch("StoreWithCast element size does not match its ScalarType");
  return contiguous_out(m, v, is_float ? dt : DType::none, m.in_trivial);
}

// Outputs data[0..n-1]; with an OffsetCalculator<n> the strides are in elements.
Decoded decode_multi_output(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const int32_t n = load<int32_t>(v.params[0], 0);
  if (n < 0) return Decoded::mismatch("negative N");
  const char* data = v.params[2];
  Decoded d;
  add_inputs(d, m, data, m.num_outputs, m.nargs, m.in_trivial ? static_cast<uint64_t>(n) : 0);
  if (m.out_type != OutType::static_dtype) return d;
  const uint32_t es = static_cast<uint32_t>(dtype_size(m.out));
  for (uint32_t k = 0; k < m.num_outputs; ++k) {
    const uint64_t ptr = load<uint64_t>(data, 8 * k);
    if (m.trivial_out) {
      d.add_write(dense_write(ptr, static_cast<uint64_t>(n), m.out, 2));
      continue;
    }
    CalcExtent e;
    if (!offset_calc_extent(v.params[4], m.num_outputs, k, e) || e.numel != static_cast<uint64_t>(n))
      return Decoded::mismatch("output offset calculator does not match N");
    d.add_write(make_write(ptr, e.distinct, e.max_off * es, m.out, es, 2));
  }
  return d;
}

// Non-contiguous gpu_kernel_impl_nocast: written extent = data[0] + sum_d (size_d - 1) *
// stride_d[0] + itemsize, with byte strides (make_offset_calculator passes no element sizes).
Decoded decode_legacy(const FamilyMatch& m, const LaunchView& v, const AddressQuery& live) {
  const int32_t n = load<int32_t>(v.params[0], 0);
  if (n < 0) return Decoded::mismatch("negative N");
  const char* blob = v.params[1];
  const uint32_t nargs = m.nargs ? m.nargs : infer_nargs(m, blob, n, live);
  CalcExtent e;
  if (!nargs || !legacy_fits(m, blob, nargs, n, e))
    return Decoded::mismatch("closure does not fit an offset calculator");
  const uint32_t data_at = legacy_data_at(nargs);
  Decoded d;
  add_strided_inputs(d, m, blob, nargs);
  if (m.out_type != OutType::static_dtype) return d;
  const uint32_t es = static_cast<uint32_t>(dtype_size(m.out));
  Write w = make_write(load<uint64_t>(blob, data_at), e.distinct, e.max_off, m.out, es, 1);
  w.intended_inf = legacy_constant_inf(m, blob, nargs);
  d.add_write(w);
  return d;
}

// gpu_kernel_impl's dynamic-casting closure (match_legacy_cast: a known captureless copy lambda
// or binary functor): the output is stored as dtypes[0] (c10::cast_and_store), each input loaded
// as its dtypes[i] (CUDALoops.cuh); byte strides as in the nocast closure. Per launch, every
// dtypes byte must be a known ScalarType, dtypes[0] the functor's result type (direct_copy_kernel_cuda
// dispatches on iter.dtype(0)), and some input another type (else needs_dynamic_casting is false
// and the nocast kernel runs): bytes at the wrong place fail these. Integer outputs are exact
// writes marked no_nan; integer inputs NaN-free reads.
Decoded decode_legacy_cast(const FamilyMatch& m, const LaunchView& v, const AddressQuery&) {
  const int32_t n = load<int32_t>(v.params[0], 0);
  if (n < 0) return Decoded::mismatch("negative N");
  const char* blob = v.params[1];
  const uint32_t nargs = m.nargs;
  CalcExtent e;
  if (!legacy_fits(m, blob, nargs, n, e)) return Decoded::mismatch("closure does not fit an offset calculator");
  const char* dtypes = blob + cast_dtypes_at(nargs);
  const ScalarInfo* out = scalar_info(load<uint8_t>(dtypes, 0));
  if (!out || out->st != m.out_st) return Decoded::mismatch("output ScalarType is not the copy's type");
  const char* data = blob + legacy_data_at(nargs);
  Decoded d;
  bool casts = false;
  for (uint32_t i = 1; i < nargs; ++i) {
    const ScalarInfo* in = scalar_info(load<uint8_t>(dtypes, i));
    if (!in) return Decoded::mismatch("unknown ScalarType in the closure's dtypes");
    casts = casts || in->st != out->st;
    const uint64_t p = load<uint64_t>(data, 8 * i);
    if (in->no_nan)
      d.add_no_nan_read(p);
    else
      d.add_read(p, in->dtype, strided_elements(blob, nargs, i, in->dtype));
  }
  if (!casts) return Decoded::mismatch("no input is cast: not the dynamic-casting closure");
  d.add_write(scalar_write(load<uint64_t>(data, 0), e.distinct, e.max_off, *out, 1));
  return d;
}

}  // namespace nanscope::decode::aten

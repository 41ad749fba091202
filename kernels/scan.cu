// Non-finite scan kernels: nine thin extern "C" __global__ entry points (at the end of the file)
// over shared per-dtype classification and row code. nanscope_scan (plain), nanscope_scan_grouped
// (merged graph scan nodes), nanscope_scan_rows and nanscope_scan_rows_zero (row-aware: watches
// and rules) scan and report; the five nanscope_zero_rows* (one per padding source, and one for
// several buffers) only zero padding rows. Separate entry points keep each variant's registers
// and occupancy its own. Built into a fatbin and embedded in libnanscope.so; the host
// (hooks/context_state.cpp) loads it with cuModuleLoadData and launches with cuLaunchKernel
// (never the runtime API), with the geometry of src/scan_launch.hpp.
#include <stdint.h>

#include <type_traits>
#include "scan_abi.h"

namespace {

constexpr int kThreads = NANSCOPE_SCAN_THREADS;  // ScanPolicy::threads launches this many
constexpr int kUnroll = NANSCOPE_SCAN_UNROLL;    // 16-byte loads in flight per thread

__device__ __forceinline__ int element_bytes(uint32_t dt) { return static_cast<int>(nanscope_scan_dtype_bytes(dt)); }

// 0 finite, 1 NaN, 2 +Inf, 3 -Inf for one element's bits.
__device__ __forceinline__ int classify(uint32_t dt, uint64_t bits) {
  switch (dt) {
    case NS_F64: {
      if ((bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull) return 0;
      if (bits & 0x000fffffffffffffull) return 1;
      return (bits >> 63) ? 3 : 2;
    }
    case NS_F32: {
      uint32_t b = (uint32_t)bits;
      if ((b & 0x7f800000u) != 0x7f800000u) return 0;
      if (b & 0x007fffffu) return 1;
      return (b >> 31) ? 3 : 2;
    }
    case NS_F16: {
      uint32_t b = (uint32_t)bits & 0xffffu;
      if ((b & 0x7c00u) != 0x7c00u) return 0;
      if (b & 0x03ffu) return 1;
      return (b >> 15) ? 3 : 2;
    }
    case NS_BF16: {
      uint32_t b = (uint32_t)bits & 0xffffu;
      if ((b & 0x7f80u) != 0x7f80u) return 0;
      if (b & 0x007fu) return 1;
      return (b >> 15) ? 3 : 2;
    }
    case NS_F8E4M3: {  // e4m3fn has no infinities; S.1111.111 is NaN
      return (((uint32_t)bits & 0x7fu) == 0x7fu) ? 1 : 0;
    }
    default: {  // NS_F8E5M2: IEEE-like, exponent 11111
      uint32_t b = (uint32_t)bits & 0xffu;
      if ((b & 0x7cu) != 0x7cu) return 0;
      if (b & 0x03u) return 1;
      return (b >> 7) ? 3 : 2;
    }
  }
}

// Non-zero if any element packed in the 32-bit word is non-finite. Per-lane SIMD compares.
__device__ __forceinline__ uint32_t word_suspect(uint32_t dt, uint32_t w) {
  switch (dt) {
    case NS_F32: return (w & 0x7f800000u) == 0x7f800000u;
    case NS_F16: return __vcmpeq2(w & 0x7c007c00u, 0x7c007c00u);
    case NS_BF16: return __vcmpeq2(w & 0x7f807f80u, 0x7f807f80u);
    case NS_F8E4M3: return __vcmpeq4(w & 0x7f7f7f7fu, 0x7f7f7f7fu);
    case NS_F8E5M2: return __vcmpeq4(w & 0x7c7c7c7cu, 0x7c7c7c7cu);
    default: return 0;  // f64 is checked on its high words by vec_suspect
  }
}

__device__ __forceinline__ uint32_t vec_suspect(uint32_t dt, const uint4& v) {
  if (dt == NS_F64)
    return ((v.y & 0x7ff00000u) == 0x7ff00000u) | ((v.w & 0x7ff00000u) == 0x7ff00000u);
  return word_suspect(dt, v.x) | word_suspect(dt, v.y) | word_suspect(dt, v.z) | word_suspect(dt, v.w);
}

// Padding status of row r, read on the device at scan time (so graph replays see new values).
__device__ __forceinline__ bool row_is_padding(const nanscope_row_spec& s, uint64_t r) {
  switch (s.source) {
    case NS_PAD_SEQ_LENS: {
      const int64_t v = s.index_i64 ? reinterpret_cast<const int64_t*>(s.source_ptr)[r]
                                    : reinterpret_cast<const int32_t*>(s.source_ptr)[r];
      return v == s.pad_value;
    }
    case NS_PAD_COUNT_DEVICE: {
      const int64_t n = s.index_i64 ? *reinterpret_cast<const int64_t*>(s.source_ptr)
                                    : *reinterpret_cast<const int32_t*>(s.source_ptr);
      return n < 0 || r >= static_cast<uint64_t>(n);
    }
    case NS_PAD_COUNT_HOST: return r >= s.host_count;
    case NS_PAD_MASK: return reinterpret_cast<const unsigned char*>(s.source_ptr)[r] != 0;
    default: return false;
  }
}

// Row of element i. Hot in fix mode: a double multiply by the reciprocal, corrected to exact.
__device__ __forceinline__ uint64_t row_of(uint64_t i, const nanscope_row_spec& s) {
  uint64_t r = static_cast<uint64_t>(static_cast<double>(i) * s.inv_row_stride);
  while (r > 0 && r * s.row_stride > i) --r;
  while ((r + 1) * s.row_stride <= i) ++r;
  return r;
}

struct ThreadCounts {
  uint32_t nan = 0, pos_inf = 0, neg_inf = 0, padding = 0;
  unsigned long long first = ~0ull, last = 0;
  unsigned long long flagged_row = ~0ull;  // last row this thread marked in the row bitmap
  bool flagged_padding = false;            // and its padding status: one lookup per row

  // `rows` is null for buffers scanned without a row spec.
  __device__ __forceinline__ void add(int kind, unsigned long long index, const nanscope_row_spec* rows) {
    if (kind == 0) return;
    if (rows) {
      const uint64_t r = row_of(index, *rows);
      if (index - r * rows->row_stride >= rows->row_elements) return;  // gap between rows
      if (r != flagged_row) {
        flagged_padding = row_is_padding(*rows, r);
        atomicOr(&rows->row_bitmap[r >> 5], 1u << (r & 31));
        flagged_row = r;
      }
      padding += flagged_padding;
    }
    nan += kind == 1;
    pos_inf += kind == 2;
    neg_inf += kind == 3;
    first = index < first ? index : first;
    last = index > last ? index : last;
  }
  __device__ __forceinline__ bool any() const { return (nan | pos_inf | neg_inf) != 0; }
};

__device__ __forceinline__ uint64_t load_bits(const unsigned char* base, uint32_t dt, uint64_t i) {
  switch (element_bytes(dt)) {
    case 8: return *reinterpret_cast<const uint64_t*>(base + i * 8);
    case 4: return *reinterpret_cast<const uint32_t*>(base + i * 4);
    case 2: return *reinterpret_cast<const uint16_t*>(base + i * 2);
    default: return base[i];
  }
}

// Slow path: a 16-byte vector that holds at least one suspect element.
template <bool kRows>
__device__ __noinline__ void count_vector(uint32_t dt, const uint4 v, unsigned long long first_elem,
                                          ThreadCounts& c, const nanscope_row_spec* rows) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
  const int eb = element_bytes(dt);
  const int per_vec = 16 / eb;
  for (int e = 0; e < per_vec; ++e) {
    const int byte = e * eb;
    uint64_t bits;
    if (eb == 8) bits = (uint64_t)words[byte / 4] | ((uint64_t)words[byte / 4 + 1] << 32);
    else bits = words[byte / 4] >> ((byte % 4) * 8);
    c.add(classify(dt, bits), first_elem + e, kRows ? rows : nullptr);
  }
}

// Fix mode: zeroes the elements of a padding row, leaving real rows and gaps untouched.
// A thread remembers the last row it looked up, so a vector costs one division.
struct PaddingCursor {
  uint64_t row = ~0ull;
  bool padding = false;
  __device__ __forceinline__ bool is_padding(const nanscope_row_spec& s, uint64_t r) {
    if (r != row) row = r, padding = row_is_padding(s, r);
    return padding;
  }
};

__device__ __forceinline__ void store_zero(unsigned char* base, uint32_t eb, uint64_t i) {
  switch (eb) {
    case 8: reinterpret_cast<uint64_t*>(base)[i] = 0; break;
    case 4: reinterpret_cast<uint32_t*>(base)[i] = 0; break;
    case 2: reinterpret_cast<uint16_t*>(base)[i] = 0; break;
    default: base[i] = 0; break;
  }
}

__device__ void zero_if_padding(unsigned char* base, uint32_t eb, uint64_t i, const nanscope_row_spec& s,
                                PaddingCursor& cur) {
  const uint64_t r = row_of(i, s);
  if (i - r * s.row_stride < s.row_elements && cur.is_padding(s, r)) store_zero(base, eb, i);
}

// A whole 16-byte vector starting at element e0: one store when it sits inside one row.
__device__ __forceinline__ void zero_vector_if_padding(unsigned char* base, uint32_t eb, uint64_t e0,
                                                       uint32_t per_vec, const nanscope_row_spec& s,
                                                       PaddingCursor& cur) {
  const uint64_t r = row_of(e0, s);
  const uint64_t col = e0 - r * s.row_stride;
  if (col + per_vec <= s.row_elements) {
    if (cur.is_padding(s, r)) *reinterpret_cast<uint4*>(base + e0 * eb) = make_uint4(0, 0, 0, 0);
    return;
  }
  for (uint32_t j = 0; j < per_vec; ++j) zero_if_padding(base, eb, e0 + j, s, cur);
}

// Counts the non-finite elements of one buffer that this thread owns (grid-stride).
// The dtype is a template parameter so the hot loop carries no dtype switch.
template <uint32_t dt, bool kRows, bool kFix>
__device__ void scan_buffer_typed(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  unsigned char* base = reinterpret_cast<unsigned char*>(b.ptr);
  PaddingCursor cursor;
  const uint64_t eb = element_bytes(dt);
  const uint64_t n = b.elements;
  const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;

  // Scalar head up to 16-byte alignment, then 16-byte vectors, then a scalar tail.
  uint64_t head = ((16 - (b.ptr & 15)) & 15) / eb;
  if (head > n) head = n;
  const uint64_t per_vec = 16 / eb;
  const uint64_t vecs = (n - head) / per_vec;
  const uint64_t tail_start = head + vecs * per_vec;

  if (!kRows) rows = nullptr;  // lets the plain instantiation drop every row-aware branch
  for (uint64_t i = tid; i < head; i += stride) {
    c.add(classify(dt, load_bits(base, dt, i)), i, rows);
    if (kFix) zero_if_padding(base, eb, i, *rows, cursor);
  }
  for (uint64_t i = tail_start + tid; i < n; i += stride) {
    c.add(classify(dt, load_bits(base, dt, i)), i, rows);
    if (kFix) zero_if_padding(base, eb, i, *rows, cursor);
  }

  const uint4* vbase = reinterpret_cast<const uint4*>(base + head * eb);
  (void)cursor;
  uint64_t v = tid;
  for (; v + (kUnroll - 1) * stride < vecs; v += kUnroll * stride) {
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = __ldcs(vbase + v + u * stride);
    uint32_t suspect = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) suspect |= vec_suspect(dt, x[u]);
    if (suspect) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (vec_suspect(dt, x[u])) count_vector<kRows>(dt, x[u], head + (v + u * stride) * per_vec, c, rows);
    }
    if (kFix) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        zero_vector_if_padding(base, eb, head + (v + u * stride) * per_vec, per_vec, *rows, cursor);
    }
  }
  for (; v < vecs; v += stride) {
    const uint4 x = __ldcs(vbase + v);
    if (vec_suspect(dt, x)) count_vector<kRows>(dt, x, head + v * per_vec, c, rows);
    if (kFix) zero_vector_if_padding(base, eb, head + v * per_vec, per_vec, *rows, cursor);
  }
}

template <bool kRows, bool kFix>
__device__ void scan_buffer_dispatch(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  switch (b.dtype) {
#define NS_SCAN_TYPED_(suffix, name, code, bytes) \
  case NS_##suffix: scan_buffer_typed<NS_##suffix, kRows, kFix>(b, c, rows); break;
    NANSCOPE_SCAN_DTYPES(NS_SCAN_TYPED_)
#undef NS_SCAN_TYPED_
    default: break;
  }
}

// Plain scans never see a row spec; row-aware scans (watches, rules) run in their own entry
// point so the plain kernel keeps its registers and occupancy.
// Row-aligned buffers (16-byte aligned rows) are walked in chunks of one row, so a block looks
// a row's padding status up once per chunk. With kZeroOnly, real rows are not read at all:
// padding rows are scanned (for the report) and zeroed.
template <uint32_t dt, bool kFix, bool kZeroOnly>
__device__ void scan_rows_chunked(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  unsigned char* base = reinterpret_cast<unsigned char*>(b.ptr);
  const uint32_t eb = element_bytes(dt);
  const uint32_t per_vec = 16 / eb;
  const uint64_t row_vecs = rows->row_elements / per_vec;
  const uint64_t chunk_vecs = uint64_t{kThreads} * kUnroll;
  const uint64_t chunks_per_row = row_vecs ? (row_vecs + chunk_vecs - 1) / chunk_vecs : 1;
  const uint64_t items = rows->rows * chunks_per_row;

  // Chunk `ch` of row `r`: scan it, and zero it when the row is padding.
  // `known_padding`: the caller already knows the row is padding; otherwise (fix) its status is
  // looked up after the chunk's loads are issued, so the two round trips overlap.
  auto process = [&](uint64_t r, uint64_t ch, bool known_padding) {
    const uint64_t row_start = r * rows->row_stride;
    uint4* vrow = reinterpret_cast<uint4*>(base + row_start * eb);
    const uint64_t v0 = ch * chunk_vecs;
    const uint64_t v1 = v0 + chunk_vecs < row_vecs ? v0 + chunk_vecs : row_vecs;
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t i = v0 + threadIdx.x + u * kThreads;
      x[u] = i < v1 ? __ldcs(vrow + i) : make_uint4(0, 0, 0, 0);
    }
    const bool pad = known_padding || (kFix && row_is_padding(*rows, r));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t i = v0 + threadIdx.x + u * kThreads;
      if (i >= v1) continue;
      if (vec_suspect(dt, x[u])) count_vector<true>(dt, x[u], row_start + i * per_vec, c, rows);
      if (kFix && pad) vrow[i] = make_uint4(0, 0, 0, 0);
    }
    if (ch == chunks_per_row - 1) {  // elements past the last full vector of the row
      for (uint64_t j = row_vecs * per_vec + threadIdx.x; j < rows->row_elements; j += kThreads) {
        c.add(classify(dt, load_bits(base, dt, row_start + j)), row_start + j, rows);
        if (kFix && pad) store_zero(base, eb, row_start + j);
      }
    }
  };

  if constexpr (kZeroOnly) {
    // Real rows are never read. The block looks up the status of up to kThreads of its items
    // at once (one round trip, not one per item), then works on the padding ones only.
    __shared__ unsigned int s_pad_bits[kThreads / 32];
    for (uint64_t first = blockIdx.x; first < items; first += uint64_t{gridDim.x} * kThreads) {
      const uint64_t mine = first + uint64_t{threadIdx.x} * gridDim.x;
      const bool pad = mine < items && row_is_padding(*rows, mine / chunks_per_row);
      const unsigned int ballot = __ballot_sync(0xffffffffu, pad);
      if ((threadIdx.x & 31) == 0) s_pad_bits[threadIdx.x / 32] = ballot;
      __syncthreads();
      for (int w = 0; w < kThreads / 32; ++w) {
        unsigned int bits = s_pad_bits[w];
        while (bits) {
          const int lane = __ffs(bits) - 1;
          bits &= bits - 1;
          const uint64_t item = first + uint64_t(w * 32 + lane) * gridDim.x, r = item / chunks_per_row;
          process(r, item - r * chunks_per_row, true);
        }
      }
      __syncthreads();
    }
  } else {
    // Items are visited gridDim.x apart: step (row, chunk) by the same amount instead of
    // dividing every item (a 64-bit division costs more than the chunk's status check).
    const uint64_t step_r = gridDim.x / chunks_per_row, step_c = gridDim.x - step_r * chunks_per_row;
    uint64_t r = blockIdx.x / chunks_per_row, ch = blockIdx.x - r * chunks_per_row;
    for (uint64_t item = blockIdx.x; item < items; item += gridDim.x) {
      process(r, ch, false);
      r += step_r;
      ch += step_c;
      if (ch >= chunks_per_row) ch -= chunks_per_row, ++r;
    }
  }
}

template <bool kFix, bool kZeroOnly>
__device__ void scan_rows_chunked_dispatch(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  switch (b.dtype) {
#define NS_SCAN_CHUNKED_(suffix, name, code, bytes) \
  case NS_##suffix: scan_rows_chunked<NS_##suffix, kFix, kZeroOnly>(b, c, rows); break;
    NANSCOPE_SCAN_DTYPES(NS_SCAN_CHUNKED_)
#undef NS_SCAN_CHUNKED_
    default: break;
  }
}

template <bool kRows>
__device__ void scan_buffer(const nanscope_scan_buffer b, ThreadCounts& c, const nanscope_row_spec* rows) {
  if (!kRows || !rows) {
    scan_buffer_dispatch<false, false>(b, c, nullptr);
    return;
  }
  // Detection alone needs no per-row walk (rows are looked up only for bad values), so only
  // the fix takes the row-chunked path, where each chunk's padding status is looked up once.
  const bool fix = rows->fix && rows->source != NS_PAD_NONE;
  if (fix && rows->chunked) {
    if (rows->zero_only) scan_rows_chunked_dispatch<true, true>(b, c, rows);
    else scan_rows_chunked_dispatch<true, false>(b, c, rows);
  } else if (fix) {
    scan_buffer_dispatch<true, true>(b, c, rows);
  } else {
    scan_buffer_dispatch<true, false>(b, c, rows);
  }
}

// Turns the row bitmap into ranges of consecutive rows with the same padding status, and
// clears it for the next run. One thread; only words with a set bit cost more than a load.
__device__ void publish_rows(const nanscope_row_spec& s, nanscope_record* r) {
  uint32_t count = 0, pad_bits = 0;
  bool truncated = false;
  const uint64_t words = (s.rows + 31) / 32;
  for (uint64_t w = 0; w < words; ++w) {
    unsigned int bits = s.row_bitmap[w];
    if (!bits) continue;
    s.row_bitmap[w] = 0;
    while (bits) {
      const int bit = __ffs(bits) - 1;
      bits &= bits - 1;
      const uint64_t row = w * 32 + bit;
      const bool pad = row_is_padding(s, row);
      if (count > 0 && r->range_last[count - 1] + 1 == row && ((pad_bits >> (count - 1)) & 1u) == pad) {
        r->range_last[count - 1] = (uint32_t)row;
      } else if (count < NANSCOPE_MAX_ROW_RANGES) {
        r->range_first[count] = r->range_last[count] = (uint32_t)row;
        pad_bits |= (uint32_t)pad << count;
        ++count;
      } else {
        truncated = true;
      }
    }
  }
  r->range_count = (uint16_t)count;
  r->range_padding_bits = pad_bits;
  r->ranges_truncated = truncated;
}

// Reserves a channel slot without consuming an index it could not fill, so the host never
// waits on a hole (it reads records strictly in index order). The host's read_index lives in
// host memory; it is read over PCIe only when the cached copy says the ring looks full.
template <typename Task>
__device__ bool reserve_slot(const Task& t, unsigned long long& slot) {
  const unsigned long long cap = t.channel_capacity;
  // Two independent L2 loads, in flight together; the CAS below validates the guess.
  unsigned long long limit = __ldcg(&t.channel_dev->read_index_seen) + cap;
  slot = __ldcg(&t.channel_dev->write_index);
  for (;;) {
    if (slot >= limit) {
      const unsigned long long seen = t.channel_host->read_index;  // one PCIe round trip
      atomicMax(&t.channel_dev->read_index_seen, seen);
      limit = seen + cap;
      if (slot >= limit) return false;
    }
    const unsigned long long prev = atomicCAS(&t.channel_dev->write_index, slot, slot + 1);
    if (prev == slot) return true;
    slot = prev;
  }
}

// Copies a record built in local memory to the mapped host ring with 16-byte stores (posted
// PCIe writes, no reads back), then releases it by writing `seq` last.
__device__ void post_record(nanscope_record* dst, const nanscope_record& rec, unsigned long long seq) {
  const uint4* from = reinterpret_cast<const uint4*>(&rec);
  uint4* to = reinterpret_cast<uint4*>(dst);
  *reinterpret_cast<volatile uint64_t*>(&dst->launch_id) = rec.launch_id;  // shares seq's 16 bytes
#pragma unroll
  for (int i = 1; i < (int)(sizeof(nanscope_record) / sizeof(uint4)); ++i) to[i] = from[i];
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(&dst->seq), "l"(seq) : "memory");
}

// Origin: the non-finite state of the launch's tracked inputs before it ran. Read before any
// output's word is updated, so an in-place buffer counts with its state from before.
struct InputStates {
  unsigned long long parents[NANSCOPE_ORIGIN_MAX_PARENTS];
  uint32_t parent_count;
  bool unknown;
};

// A plain task is one launch; a group (nanscope_scan_group) holds several, one per member scan.
template <typename Task>
constexpr bool kIsGroup = std::is_same<Task, nanscope_scan_group>::value;

template <typename Task>
__device__ __forceinline__ uint32_t input_count(const Task& t, uint32_t launch) {
  if constexpr (kIsGroup<Task>) return t.launches[launch].in_count;
  else return t.in_count;
}

template <typename Task>
__device__ __forceinline__ uint32_t input_ref(const Task& t, uint32_t launch, uint32_t i) {
  if constexpr (kIsGroup<Task>) return t.launches[launch].in_state[i];
  else return t.in_state[i];
}

template <typename Task>
__device__ InputStates read_inputs(const Task& t, uint32_t launch) {
  InputStates in{};
  if (!t.buffer_state) return in;
  const uint32_t count = input_count(t, launch);
  const uint32_t n = count < NANSCOPE_ORIGIN_MAX_INPUTS ? count : NANSCOPE_ORIGIN_MAX_INPUTS;
  unsigned long long w[NANSCOPE_ORIGIN_MAX_INPUTS];
#pragma unroll
  for (uint32_t i = 0; i < NANSCOPE_ORIGIN_MAX_INPUTS; ++i)  // all loads in flight at once
    w[i] = i < n ? __ldcg(&t.buffer_state[NS_SLOT_OF(input_ref(t, launch, i))]) : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t status = (uint32_t)(w[i] & 0xffu);
    if (((w[i] >> 8) & 0xffffu) != NS_GEN_OF(input_ref(t, launch, i)) || status == NS_STATE_UNKNOWN) {
      in.unknown = true;  // a reused slot's old word, or never scanned
      continue;
    }
    if (status != NS_STATE_NONFINITE) continue;
    const unsigned long long seq = w[i] >> 24;
    bool seen = false;
    for (uint32_t j = 0; j < in.parent_count && j < NANSCOPE_ORIGIN_MAX_PARENTS; ++j) seen |= in.parents[j] == seq;
    if (seen) continue;
    if (in.parent_count < NANSCOPE_ORIGIN_MAX_PARENTS) in.parents[in.parent_count] = seq;
    ++in.parent_count;
  }
  return in;
}

template <typename Task>
__device__ __forceinline__ uint32_t launch_origin_flags(const Task& t, uint32_t launch) {
  if constexpr (kIsGroup<Task>) return t.launches[launch].origin_flags;
  else return t.origin_flags;
}

// The launch fields of a record for buffers[b] (`launch`: its launch in a group).
template <typename Task>
__device__ __forceinline__ void set_launch_fields(const Task& t, uint32_t launch, nanscope_record& r) {
  if constexpr (kIsGroup<Task>) {
    r.launch_id = t.launches[launch].launch_id;
    r.correlation_id = t.launches[launch].correlation_id;
    r.kernel_id = t.launches[launch].kernel_id;
    r.graph_node = t.launches[launch].graph_node;
  } else {
    r.launch_id = t.launch_id;
    r.correlation_id = t.correlation_id;
    r.kernel_id = t.kernel_id;
    r.graph_node = t.graph_node;
  }
}

// Records what a scan left in buffers[b]: clean, or non-finite since finding `seq`.
template <typename Task>
__device__ __forceinline__ void set_state(const Task& t, uint32_t b, uint32_t status, unsigned long long seq) {
  if (!t.buffer_state || t.out_state[b] == NANSCOPE_ORIGIN_NONE) return;
  const uint32_t ref = t.out_state[b];
  t.buffer_state[NS_SLOT_OF(ref)] = status | (unsigned long long)NS_GEN_OF(ref) << 8 | seq << 24;
}

// The last block to finish turns the totals into channel records. `tot` holds each buffer's
// totals (read from the accumulator, or straight from shared memory for a one-block scan).
template <bool kRows, typename Task>
__device__ void publish(const Task& t, const nanscope_scan_counts* tot, unsigned int replay) {
  uint32_t launch = 0;
  InputStates in = read_inputs(t, 0);
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if constexpr (kIsGroup<Task>) {
      // A group's next launch: its inputs as the launches before it in this node left them.
      if (t.launch_of[b] != launch) launch = t.launch_of[b], in = read_inputs(t, launch);
    }
    const nanscope_scan_counts c = tot[b];
    const bool row_aware = kRows && ((t.row_aware_mask >> b) & 1u);
    bool unchanged = false, quiet = false;
    if constexpr (kRows) {
      // zero_padding zeroes what it finds, so no later scan sees it again: it keeps no
      // previous state to compare with (the zero-rows kernel has none).
      if (row_aware && !t.row_specs[b].zero_only) {
        const unsigned long long* st = t.row_specs[b].last_state;
        const unsigned long long s0 = __ldcg(st), s1 = __ldcg(st + 1), s2 = __ldcg(st + 2), s3 = __ldcg(st + 3),
                                 s4 = __ldcg(st + 4), s5 = __ldcg(st + 5);
        unchanged = s0 == c.nan && s1 == c.pos_inf && s2 == c.neg_inf && s3 == ~c.first_inv && s4 == c.last &&
                    s5 == c.padding;
        quiet = unchanged && t.row_specs[b].quiet_unchanged;
      }
    }
    if (c.nan + c.pos_inf + c.neg_inf != 0 && quiet) {
      // Nothing new to say, and the host would drop it: count it instead of a PCIe round trip.
      t.channel_host->unchanged = atomicAdd(&t.channel_dev->unchanged, 1ull) + 1;
      if constexpr (kRows) {
        const nanscope_row_spec spec = t.row_specs[b];
        for (uint64_t w = 0; w < (spec.rows + 31) / 32; ++w) spec.row_bitmap[w] = 0;
      }
    } else if (c.nan + c.pos_inf + c.neg_inf != 0) {
      unsigned long long slot = 0;
      if (!reserve_slot(t, slot)) {
        // Counted on the device, mirrored into host memory so the host never needs a CUDA call.
        t.channel_host->overflow = atomicAdd(&t.channel_dev->overflow, 1ull) + 1;
        set_state(t, b, NS_STATE_NONFINITE, 0);  // non-finite, from a finding nobody will see
        if constexpr (kRows) {
          if (row_aware) {  // dropped: the bitmap must still be cleared for the next run
            const nanscope_row_spec spec = t.row_specs[b];
            for (uint64_t w = 0; w < (spec.rows + 31) / 32; ++w) spec.row_bitmap[w] = 0;
          }
        }
      } else {
        alignas(16) nanscope_record r = {};  // posted with 16-byte loads and stores
        set_launch_fields(t, launch, r);
        r.stream = t.stream;
        r.ptr = t.buffers[b].ptr;
        r.elements = t.buffers[b].elements;
        r.nan = c.nan;
        r.pos_inf = c.pos_inf;
        r.neg_inf = c.neg_inf;
        r.first_index = ~c.first_inv;
        r.last_index = c.last;
        r.graph_id = t.graph_id;
        r.replay = replay;
        r.arg = (uint16_t)t.buffers[b].arg;
        r.dtype = (uint8_t)t.buffers[b].dtype;
        r.flags = t.graph_id ? NS_RECORD_CAPTURED : 0;
        r.counts_padding = c.padding;
        if (t.buffer_state) {
          for (uint32_t j = 0; j < NANSCOPE_ORIGIN_MAX_PARENTS; ++j) r.parents[j] = j < in.parent_count ? in.parents[j] : 0;
          r.parent_count = in.parent_count;
          r.origin_flags = launch_origin_flags(t, launch) | NS_ORIGIN_TRACKED | (in.unknown ? NS_ORIGIN_INPUT_UNKNOWN : 0u);
        }
        bool fixed_clean = false;  // the fix zeroed every non-finite value: the lineage closes
        if constexpr (kRows) {
          if (row_aware) {
            const nanscope_row_spec spec = t.row_specs[b];
            r.flags |= NS_RECORD_ROWS | (spec.fix && spec.source ? NS_RECORD_FIXED : 0) |
                       (unchanged ? NS_RECORD_UNCHANGED : 0);
            r.rows_total = spec.rows;
            r.watch_id = spec.watch_id;
            r.padding_source = (uint8_t)spec.source;
            publish_rows(spec, &r);
            fixed_clean = spec.fix && spec.source && c.padding == c.nan + c.pos_inf + c.neg_inf;
          }
        }
        post_record(&t.records[slot % t.channel_capacity], r, slot + 1);
        set_state(t, b, fixed_clean ? NS_STATE_CLEAN : NS_STATE_NONFINITE, fixed_clean ? 0 : slot + 1);
      }
    }
    if (c.nan + c.pos_inf + c.neg_inf == 0) set_state(t, b, NS_STATE_CLEAN, 0);
    if constexpr (kRows) {
      if (row_aware && !t.row_specs[b].zero_only) {
        // Remember what this scan saw, so the next one can tell an unchanged buffer (a launch
        // that only read it) from one written again. A clean scan stores the empty state.
        unsigned long long* st = t.row_specs[b].last_state;
        st[0] = c.nan, st[1] = c.pos_inf, st[2] = c.neg_inf, st[3] = ~c.first_inv, st[4] = c.last;
        st[5] = c.padding;
      }
    }
  }
}

template <bool kRows, typename Task>
__device__ __forceinline__ void scan_main(const Task& t) {
  __shared__ unsigned int s_nan[NANSCOPE_SCAN_MAX_BUFFERS], s_pinf[NANSCOPE_SCAN_MAX_BUFFERS],
      s_ninf[NANSCOPE_SCAN_MAX_BUFFERS], s_pad[NANSCOPE_SCAN_MAX_BUFFERS];
  __shared__ unsigned long long s_first[NANSCOPE_SCAN_MAX_BUFFERS], s_last[NANSCOPE_SCAN_MAX_BUFFERS];
  __shared__ nanscope_scan_counts s_tot[NANSCOPE_SCAN_MAX_BUFFERS];
  // The row spec lives in shared memory: taking the address of a kernel parameter would copy the
  // whole task into local memory in every thread.
  __shared__ nanscope_row_spec s_rows;
  const bool one_block = gridDim.x == 1;
  // The replay number is stable while this scan runs (only its last block bumps it): load it
  // now, so its round trip hides behind the scan.
  unsigned int replay = 0;
  if (threadIdx.x == 0) replay = __ldcg(&t.accum->executions);
  if (threadIdx.x < NANSCOPE_SCAN_MAX_BUFFERS) {
    s_nan[threadIdx.x] = s_pinf[threadIdx.x] = s_ninf[threadIdx.x] = s_pad[threadIdx.x] = 0;
    s_first[threadIdx.x] = ~0ull;
    s_last[threadIdx.x] = 0;
  }
  __syncthreads();

  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    ThreadCounts c;
    bool row_aware = false;
    if constexpr (kRows) {
      row_aware = (t.row_aware_mask >> b) & 1u;
      if (row_aware) {
        __syncthreads();  // the previous buffer's readers are done with s_rows
        if (threadIdx.x == 0) s_rows = t.row_specs[b];
        __syncthreads();
      }
    }
    scan_buffer<kRows>(t.buffers[b], c, row_aware ? &s_rows : nullptr);
    // Rare: only warps that saw a bad value touch shared memory, one lane each. A buffer full
    // of NaN would otherwise serialise hundreds of threads on the same shared counters.
    const unsigned found = __ballot_sync(0xffffffffu, c.any());
    if (found) {
      const unsigned pad = __reduce_add_sync(0xffffffffu, c.padding), nan = __reduce_add_sync(0xffffffffu, c.nan),
                     pinf = __reduce_add_sync(0xffffffffu, c.pos_inf),
                     ninf = __reduce_add_sync(0xffffffffu, c.neg_inf);
      unsigned long long first = c.first, last = c.last;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o), l = __shfl_xor_sync(0xffffffffu, last, o);
        first = f < first ? f : first;
        last = l > last ? l : last;
      }
      if ((threadIdx.x & 31) == (unsigned)(__ffs(found) - 1)) {
        atomicAdd(&s_pad[b], pad);
        atomicAdd(&s_nan[b], nan);
        atomicAdd(&s_pinf[b], pinf);
        atomicAdd(&s_ninf[b], ninf);
        atomicMin(&s_first[b], first);
        atomicMax(&s_last[b], last);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  nanscope_scan_accum* acc = t.accum;
  bool wrote = false;
  for (uint32_t b = 0; b < t.buffer_count; ++b) wrote |= (s_nan[b] | s_pinf[b] | s_ninf[b]) != 0;
  if (one_block) {
    // The only block is the last one: totals come straight from shared memory, with no
    // accumulator traffic, fence or ticket (the common case for decode-sized outputs).
    for (uint32_t b = 0; b < t.buffer_count; ++b)
      s_tot[b] = {s_nan[b], s_pinf[b], s_ninf[b], ~s_first[b], s_last[b], s_pad[b]};
  } else {
    for (uint32_t b = 0; b < t.buffer_count; ++b) {
      if ((s_nan[b] | s_pinf[b] | s_ninf[b]) == 0) continue;
      atomicAdd(&acc->buf[b].padding, (unsigned long long)s_pad[b]);
      atomicAdd(&acc->buf[b].nan, (unsigned long long)s_nan[b]);
      atomicAdd(&acc->buf[b].pos_inf, (unsigned long long)s_pinf[b]);
      atomicAdd(&acc->buf[b].neg_inf, (unsigned long long)s_ninf[b]);
      atomicMax(&acc->buf[b].first_inv, ~s_first[b]);
      atomicMax(&acc->buf[b].last, s_last[b]);
    }
    // Only a block that added counts must order them before its ticket; clean blocks (the
    // common case) skip the fence. The ticket's high half counts blocks that added counts, so
    // the last block of a clean scan knows it without reading the accumulator back.
    if (wrote) __threadfence();
    const unsigned int old = atomicAdd(&acc->blocks_done, wrote ? 0x10001u : 1u);
    if ((old & 0xffffu) != gridDim.x - 1) return;  // not the last block
    wrote |= (old >> 16) != 0;
    acc->blocks_done = 0;  // the next scan with this accumulator is a later kernel
    if (wrote) {
      __threadfence();
      for (uint32_t b = 0; b < t.buffer_count; ++b) {
        // Read once, all loads in flight together, then reset for the next run.
        nanscope_scan_counts* a = &acc->buf[b];
        s_tot[b] = {__ldcg(&a->nan), __ldcg(&a->pos_inf), __ldcg(&a->neg_inf), __ldcg(&a->first_inv),
                    __ldcg(&a->last), __ldcg(&a->padding)};
        *a = nanscope_scan_counts{};
      }
    }
  }
  if (wrote) {
    publish<kRows>(t, s_tot, replay);
  } else {
    for (uint32_t b = 0; b < t.buffer_count; ++b) set_state(t, b, NS_STATE_CLEAN, 0);
  }
  if constexpr (kRows) {
    for (uint32_t b = 0; b < t.buffer_count && !wrote; ++b) {
      if (!((t.row_aware_mask >> b) & 1u) || t.row_specs[b].zero_only) continue;
      unsigned long long* st = t.row_specs[b].last_state;  // what a clean publish would store
      st[0] = st[1] = st[2] = st[4] = st[5] = 0;
      st[3] = ~0ull;
    }
  }
  acc->executions = replay + 1;
}

// ---- zero_padding: the seed's fix as one lean kernel (nanscope_zero_rows).
// It zeroes the padding rows and reads nothing else: no real row, and not the padding rows
// either, so what they held is not reported (the `fix` action scans, reports and zeroes). Each
// block marks the padding rows itself in a shared bitmap (one batch of row-status loads in
// flight, one barrier), then takes its share of the (padding row, chunk) items. No counters and
// no ticket: a node costs an empty kernel, one round trip and the stores.
constexpr int kZeroThreads = NANSCOPE_ZERO_THREADS;  // scan_abi.h; kZeroRowsThreads on the host
constexpr int kZeroUnroll = 1024 / kZeroThreads;               // a chunk is 1024 16-byte vectors
constexpr int kZeroRowsPerThread = 1024 / kZeroThreads;        // row statuses a thread loads per batch
constexpr int kZeroBatchRows = kZeroThreads * kZeroRowsPerThread;  // rows marked per batch
constexpr int kZeroBatchWords = kZeroBatchRows / 32;

// How a zero-rows kernel reads padding: one entry point per kind, so a node runs no source switch.
enum ZeroSource { kZeroSeqLens32 = 0, kZeroSeqLens64 = 1, kZeroMask = 2, kZeroCount = 3 };

// Which of this thread's rows batch + k * kZeroThreads + threadIdx.x are padding. The loads are
// unconditional (indices clamped to the last row) so all of them are in flight together.
template <int kSource>
__device__ __forceinline__ void padding_batch(const nanscope_zero_buffer& s, uint64_t batch, bool (&pad)[kZeroRowsPerThread]) {
  const uint64_t r0 = batch + threadIdx.x;
  auto row = [&](int k) { return r0 + uint64_t(k) * kZeroThreads; };
  auto at = [&](int k) { return row(k) < s.rows ? row(k) : s.rows - 1; };
  if constexpr (kSource == kZeroCount) {
    int64_t n = static_cast<int64_t>(s.host_count);
    if (s.source == NS_PAD_COUNT_DEVICE)
      n = s.index_i64 ? *reinterpret_cast<const int64_t*>(s.source_ptr) : *reinterpret_cast<const int32_t*>(s.source_ptr);
#pragma unroll
    for (int k = 0; k < kZeroRowsPerThread; ++k) pad[k] = row(k) < s.rows && (n < 0 || row(k) >= static_cast<uint64_t>(n));
  } else {
    int64_t x[kZeroRowsPerThread];
#pragma unroll
    for (int k = 0; k < kZeroRowsPerThread; ++k) {
      if constexpr (kSource == kZeroSeqLens32) x[k] = reinterpret_cast<const int32_t*>(s.source_ptr)[at(k)];
      else if constexpr (kSource == kZeroSeqLens64) x[k] = reinterpret_cast<const int64_t*>(s.source_ptr)[at(k)];
      else x[k] = reinterpret_cast<const unsigned char*>(s.source_ptr)[at(k)];
    }
#pragma unroll
    for (int k = 0; k < kZeroRowsPerThread; ++k)
      pad[k] = row(k) < s.rows && (kSource == kZeroMask ? x[k] != 0 : x[k] == s.pad_value);
  }
}

// The padding rows of one batch as every warp holds them: lane l has word l of the batch's
// bitmap (rows batch + 32l ..) and the count of rows through it, so finding the idx-th padding
// row is a ballot and two shuffles, not a walk over shared memory.
static_assert(kZeroBatchWords == 32, "one bitmap word per lane");
struct MarkedRows {
  unsigned bits;   // this lane's word
  uint32_t upto;   // padding rows in words 0..lane
  uint32_t total;  // padding rows in the batch
};

// Marks the padding rows of [batch, batch + kZeroBatchRows) in `bits`, in row order so every
// block numbers them alike.
template <int kSource>
__device__ __forceinline__ MarkedRows mark_padding_rows(const nanscope_zero_buffer& s, uint64_t batch, unsigned* bits) {
  bool pad[kZeroRowsPerThread];
  padding_batch<kSource>(s, batch, pad);
#pragma unroll
  for (int k = 0; k < kZeroRowsPerThread; ++k) {
    const unsigned ballot = __ballot_sync(0xffffffffu, pad[k]);
    if ((threadIdx.x & 31) == 0) bits[k * (kZeroThreads / 32) + threadIdx.x / 32] = ballot;
  }
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  MarkedRows m;
  m.bits = bits[lane];
  m.upto = __popc(m.bits);
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t v = __shfl_up_sync(0xffffffffu, m.upto, o);
    if (lane >= (unsigned)o) m.upto += v;
  }
  m.total = __shfl_sync(0xffffffffu, m.upto, 31);
  return m;
}

// Batch offset of the idx-th padding row (idx < m.total; the same idx in every lane).
__device__ __forceinline__ uint32_t nth_marked_row(const MarkedRows& m, uint32_t idx) {
  const uint32_t w = __popc(__ballot_sync(0xffffffffu, m.upto <= idx));  // words wholly before it
  const uint32_t before = __shfl_sync(0xffffffffu, m.upto, w ? w - 1 : 0);
  const unsigned word = __shfl_sync(0xffffffffu, m.bits, w);
  return w * 32 + __fns(word, 0, static_cast<int>(idx - (w ? before : 0)) + 1);
}

// Zeroes the padding rows of one buffer. Zeroing needs no element type, only bytes, so there is
// one code path for every dtype (a smaller kernel: each dtype instantiation cost about 0.1 us a
// node). A row is cut into chunks of kZeroThreads x kZeroUnroll 16-byte vectors; its last chunk also
// zeroes the bytes before its first 16-byte boundary and after its last whole vector, so any
// row alignment works.
template <int kSource>
__device__ void zero_padding_rows(const nanscope_zero_buffer& s, unsigned* bits) {
  const uint32_t eb = element_bytes(s.dtype);
  unsigned char* base = reinterpret_cast<unsigned char*>(s.ptr);
  const uint64_t row_bytes = s.row_elements * eb, stride_bytes = s.row_stride * eb;
  const uint32_t chunk_vecs = kZeroThreads * kZeroUnroll;
  const uint64_t max_vecs = row_bytes / 16;
  const uint32_t chunks = max_vecs ? static_cast<uint32_t>((max_vecs + chunk_vecs - 1) / chunk_vecs) : 1;
  if (s.rows == 0) return;  // (the host never sends one) the status loads index row rows - 1
  for (uint64_t batch = 0;;) {
    const MarkedRows marked = mark_padding_rows<kSource>(s, batch, bits);
    const uint32_t items = marked.total * chunks;  // at most kZeroBatchRows rows of a batch
    for (uint32_t item = blockIdx.x; item < items; item += gridDim.x) {
      const uint32_t idx = chunks == 1 ? item : item / chunks, ch = item - idx * chunks;
      unsigned char* row = base + (batch + nth_marked_row(marked, idx)) * stride_bytes;
      uint64_t head = (16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15;
      head = head < row_bytes ? head : row_bytes;
      const uint64_t vecs = (row_bytes - head) / 16;
      uint4* vrow = reinterpret_cast<uint4*>(row + head);
      const uint64_t v0 = uint64_t{ch} * chunk_vecs, v1 = v0 + chunk_vecs < vecs ? v0 + chunk_vecs : vecs;
#pragma unroll
      for (int u = 0; u < kZeroUnroll; ++u) {
        const uint64_t i = v0 + threadIdx.x + u * kZeroThreads;
        if (i < v1) vrow[i] = make_uint4(0, 0, 0, 0);
      }
      if (ch == chunks - 1) {
        const uint64_t tail = head + vecs * 16;
        if (threadIdx.x < head) row[threadIdx.x] = 0;
        if (tail + threadIdx.x < row_bytes) row[tail + threadIdx.x] = 0;  // fewer than 16 bytes
      }
    }
    batch += kZeroBatchRows;
    if (batch >= s.rows) break;
    __syncthreads();  // the bitmap is rewritten for the next batch
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) nanscope_scan(const nanscope_scan_task_head t) {
  scan_main<false>(t);
}

// Read-only scans of several launches merged into one graph node (hooks/graph_overlap.cpp).
extern "C" __global__ void __launch_bounds__(kThreads) nanscope_scan_grouped(const nanscope_scan_group t) {
  scan_main<false>(t);
}

// Three blocks per SM (at most 80 registers): the fused scan + fix streams at full bandwidth.
extern "C" __global__ void __launch_bounds__(kThreads, 3) nanscope_scan_rows(const nanscope_scan_task t) {
  scan_main<true>(t);
}

// The same row-aware scan for launches that mix zero_padding watches with other outputs to scan
// (it reads and zeroes the padding rows of the zero_padding buffers, and reports them; launches
// with only zero_padding buffers run nanscope_zero_rows*): its sparse row walk suffers from
// spilled registers more than it gains from a third block per SM, so it gets the registers it wants.
extern "C" __global__ void __launch_bounds__(kThreads) nanscope_scan_rows_zero(const nanscope_scan_task t) {
  scan_main<true>(t);
}

// zero_padding tasks (every buffer zero_padding; src/scan_launch.hpp: zero_rows_task) zero the
// padding rows and read nothing. A buffer leaves with its real rows unscanned, so its origin
// state is unknown from here on.
__device__ __forceinline__ void forget_state(const nanscope_zero_task& t, const nanscope_zero_buffer& s) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && t.buffer_state && s.out_state != NANSCOPE_ORIGIN_NONE)
    t.buffer_state[NS_SLOT_OF(s.out_state)] = NS_STATE_UNKNOWN | (unsigned long long)NS_GEN_OF(s.out_state) << 8;
}

template <int kSource>
__device__ __forceinline__ void zero_one_buffer(const nanscope_zero_task& t) {
  __shared__ unsigned s_bits[kZeroBatchWords];
  zero_padding_rows<kSource>(t.buffers[0], s_bits);
  forget_state(t, t.buffers[0]);
}

// One buffer with a given padding source: the common case, and the leanest code path (every
// branch a node skips still costs it instruction fetches: about 0.1 us for a source switch).
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_seq32(const nanscope_zero_task t) {
  zero_one_buffer<kZeroSeqLens32>(t);
}
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_seq64(const nanscope_zero_task t) {
  zero_one_buffer<kZeroSeqLens64>(t);
}
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_mask(const nanscope_zero_task t) {
  zero_one_buffer<kZeroMask>(t);
}
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows_count(const nanscope_zero_task t) {
  zero_one_buffer<kZeroCount>(t);
}

// Several zero_padding buffers written by one launch, each with its own source.
extern "C" __global__ void __launch_bounds__(kZeroThreads) nanscope_zero_rows(const nanscope_zero_task t) {
  __shared__ unsigned s_bits[kZeroBatchWords];
  for (uint32_t b = 0; b < t.buffer_count; ++b) {
    if (b) __syncthreads();  // the previous buffer's blocks are done with the bitmap
    const nanscope_zero_buffer& s = t.buffers[b];
    switch (s.source) {
      case NS_PAD_SEQ_LENS:
        if (s.index_i64) zero_padding_rows<kZeroSeqLens64>(s, s_bits);
        else zero_padding_rows<kZeroSeqLens32>(s, s_bits);
        break;
      case NS_PAD_MASK: zero_padding_rows<kZeroMask>(s, s_bits); break;
      default: zero_padding_rows<kZeroCount>(s, s_bits); break;
    }
    forget_state(t, s);
  }
}

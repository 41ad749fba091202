// Layout shared by the device scan kernels (kernels/) and the host (src/, hooks/).
// Plain C structs: nvcc and g++ must agree byte for byte. Changing anything here
// changes the device<->host ABI: keep the static_asserts in step.
#ifndef NANSCOPE_SCAN_ABI_H
#define NANSCOPE_SCAN_ABI_H
#include <stddef.h>
#include <stdint.h>

#define NANSCOPE_SCAN_MAX_BUFFERS 8

// Launch geometry the kernels are compiled for (__launch_bounds__, shared arrays, strides) and
// the host launches with (src/scan_launch.hpp): one constant each, so neither side can change
// alone. A tuning run that overrides NANSCOPE_ZERO_THREADS must define it for both.
#define NANSCOPE_SCAN_THREADS 256  // threads of a nanscope_scan* block
#define NANSCOPE_SCAN_UNROLL 4     // 16-byte loads in flight per thread
#ifndef NANSCOPE_ZERO_THREADS
#define NANSCOPE_ZERO_THREADS 128  // nanscope_zero_rows*: measured best of 64-512 by ~0.05 us a node (run S5-14)
#endif
#define NANSCOPE_MAX_ROW_RANGES 14

// NaN origin: the non-finite state of every tracked buffer lives in one device array of 64-bit
// words, so scans inside graph replays keep it current without a host round trip.
// word = status | generation << 8 | finding << 24 (finding: channel sequence number, 0 = none)
#define NANSCOPE_ORIGIN_MAX_INPUTS 8
#define NANSCOPE_ORIGIN_MAX_PARENTS 4
#define NANSCOPE_ORIGIN_SLOTS 65535u       /* state words per context */
#define NANSCOPE_ORIGIN_NONE 0xffffffffu   /* no slot: the buffer is not tracked */
#define NS_STATE_UNKNOWN 0u    /* never scanned since the slot was (re)assigned */
#define NS_STATE_CLEAN 1u
#define NS_STATE_NONFINITE 2u
// A slot reference in a task: slot | generation << 16. The generation tells a reused slot's
// stale word from the current buffer's.
#define NS_SLOT_OF(ref) ((ref) & 0xffffu)
#define NS_GEN_OF(ref) ((ref) >> 16)
// Task and record origin flags.
#define NS_ORIGIN_READS_UNTRACKED 1u  /* the launch may read memory nanscope does not track */
#define NS_ORIGIN_HOST 2u             /* the values were written by a host copy or memset */
#define NS_ORIGIN_INPUT_UNKNOWN 4u    /* (record) a tracked input's state was unknown */
#define NS_ORIGIN_TRACKED 8u          /* (record) origin fields are valid */
#define NS_ORIGIN_UNWRITTEN 16u       /* an initial scan of memory no write nanscope saw filled */

// Where a row-aware scan learns which rows are padding (read on the device at scan time), the
// one list: X(SUFFIX, name, code). NS_PAD_<SUFFIX> is the device's code, `name` the host's
// nanscope::PaddingSource enumerator (padding.hpp) and the log's padding_source string.
//   NONE          no spec: region "unknown"
//   SEQ_LENS      row r is padding when seq_lens[r] == pad_value
//   COUNT_DEVICE  rows >= *count are padding
//   COUNT_HOST    rows >= host_count are padding
//   MASK          row r is padding when mask[r] != 0
#define NANSCOPE_PADDING_SOURCES(X)           \
  X(NONE, none, 0)                            \
  X(SEQ_LENS, seq_lens, 1)                    \
  X(COUNT_DEVICE, real_count_device, 2)       \
  X(COUNT_HOST, real_count_host, 3)           \
  X(MASK, mask, 4)
#define NS_PAD_ENUM_(suffix, name, code) NS_PAD_##suffix = code,
enum nanscope_padding_source { NANSCOPE_PADDING_SOURCES(NS_PAD_ENUM_) };
#undef NS_PAD_ENUM_

// Row layout and padding source of one buffer. Element index i lies in row i / row_stride,
// column i % row_stride; columns >= row_elements are gaps between rows and are not scanned.
typedef struct nanscope_row_spec {
  uint64_t rows;
  uint64_t row_elements;
  uint64_t row_stride;      // elements, >= row_elements
  uint64_t source_ptr;      // seq_lens / count / mask (device)
  int64_t pad_value;
  uint64_t host_count;
  unsigned int* row_bitmap; // device, rows bits: rows holding non-finite values; reset by the publisher
  uint32_t source;          // nanscope_padding_source
  uint32_t index_i64;       // seq_lens / count hold int64 instead of int32
  uint32_t fix;             // zero every padding row after scanning it
  uint32_t watch_id;
  double inv_row_stride;    // 1.0 / row_stride: row lookups without a 64-bit division
  uint32_t chunked;         // rows start 16-byte aligned: walk row by row (one status lookup per chunk)
  uint32_t zero_only;       // with fix: read and zero padding rows only, never read real rows
  unsigned long long* last_state;  // device: counts of this watch's previous scan (NANSCOPE_STATE_WORDS)
  uint32_t quiet_unchanged;  // a finding identical to the previous scan's is only counted, not
                             // posted (a rescan after a launch not known to write the buffer)
  uint32_t reserved;
} nanscope_row_spec;

// Per-watch device state compared by each scan: nan, +inf, -inf, first, last, padding.
#define NANSCOPE_STATE_WORDS 6

// The element types, the one list: X(SUFFIX, name, code, bytes). SUFFIX names the C ABI's
// NANSCOPE_DTYPE_<SUFFIX> (include/nanscope/nanscope.h, which must stay self-contained) and the
// device's NS_<SUFFIX>; `name` is the host's nanscope::DType enumerator (signature.hpp) and the
// log's dtype string; `bytes` is one element's size. signature.cpp static_asserts that all three
// enums agree; python/nanscope's table is checked against nanscope.h by tests/python.
#define NANSCOPE_SCAN_DTYPES(X) \
  X(F64, f64, 0, 8)             \
  X(F32, f32, 1, 4)             \
  X(F16, f16, 2, 2)             \
  X(BF16, bf16, 3, 2)           \
  X(F8E4M3, f8e4m3, 4, 1)       \
  X(F8E5M2, f8e5m2, 5, 1)

#define NS_DTYPE_ENUM_(suffix, name, code, bytes) NS_##suffix = code,
enum nanscope_scan_dtype { NANSCOPE_SCAN_DTYPES(NS_DTYPE_ENUM_) };
#undef NS_DTYPE_ENUM_
#define NS_DTYPE_ONE_(suffix, name, code, bytes) +1
enum { NS_DTYPE_COUNT = 0 NANSCOPE_SCAN_DTYPES(NS_DTYPE_ONE_) };
#undef NS_DTYPE_ONE_

#ifdef __CUDACC__
#define NS_HOST_DEVICE __host__ __device__
#else
#define NS_HOST_DEVICE
#endif
// Bytes of one element of a nanscope_scan_dtype; 0 for a code that is none. A switch on the
// code, so neither the order of the list nor gaps in the codes matter.
static inline NS_HOST_DEVICE uint32_t nanscope_scan_dtype_bytes(uint32_t dtype) {
  switch (dtype) {
#define NS_DTYPE_BYTES_(suffix, name, code, bytes) \
  case NS_##suffix: return bytes;
    NANSCOPE_SCAN_DTYPES(NS_DTYPE_BYTES_)
#undef NS_DTYPE_BYTES_
    default: return 0;
  }
}

// One buffer to scan.
typedef struct nanscope_scan_buffer {
  uint64_t ptr;       // device address of element 0
  uint64_t elements;  // number of scalar elements
  uint32_t dtype;     // nanscope_scan_dtype
  uint32_t arg;       // kernel parameter index (for the record), NS_INTENT_* << 16
} nanscope_scan_buffer;

// Infinities a launch writes on purpose into a buffer (a mask fill with -inf, an attention
// kernel's logsumexp padding): the decoder knows them, the scan carries them to the record in
// the high half of nanscope_scan_buffer::arg, and an infinity-only finding they cover is not a
// fault (docs/origin.md#nan-first-verdicts).
#define NS_INTENT_NEG_INF 1u
#define NS_INTENT_POS_INF 2u
#define NS_BUFFER_ARG(arg) ((arg) & 0xffffu)
#define NS_BUFFER_INTENT(arg) ((arg) >> 16)
#define NS_BUFFER_ARG_WITH_INTENT(arg, intent) (((arg) & 0xffffu) | ((uint32_t)(intent) << 16))

// Per-scan accumulator in device memory. Blocks add into it; the last block to finish
// publishes records and resets it, so the same accumulator works for every graph replay.
// All-zero bytes is the empty state (first index is kept inverted), so a fresh allocation
// only needs a memset.
typedef struct nanscope_scan_counts {
  unsigned long long nan, pos_inf, neg_inf;
  unsigned long long first_inv, last;  // first bad index = ~first_inv
  unsigned long long padding;          // non-finite values in padding rows (row-aware buffers)
} nanscope_scan_counts;

typedef struct nanscope_scan_accum {
  unsigned int blocks_done;
  unsigned int executions;  // how often this accumulator finished a scan: the replay number in graphs
  nanscope_scan_counts buf[NANSCOPE_SCAN_MAX_BUFFERS];
} nanscope_scan_accum;

// One finding, written by the device into mapped host memory. `seq` is written last with a
// system-scope release store; the host reads it with an acquire load before the rest.
typedef struct nanscope_record {
  unsigned long long seq;  // channel index + 1 once complete
  uint64_t launch_id;
  uint64_t correlation_id;
  uint64_t stream;
  uint64_t ptr;
  uint64_t elements;
  uint64_t nan, pos_inf, neg_inf;
  uint64_t first_index, last_index;
  uint64_t graph_id;       // 0 when not captured
  uint32_t kernel_id;      // host-side kernel table index
  uint32_t replay;         // accumulator execution count (0-based)
  uint32_t graph_node;
  uint16_t arg;
  uint8_t dtype;
  uint8_t flags;           // NS_RECORD_*
  // Row verdicts, for buffers scanned with a row spec (a watch or a rule).
  uint64_t counts_padding;
  uint64_t rows_total;
  uint32_t watch_id;
  uint16_t range_count;
  uint8_t ranges_truncated;
  uint8_t padding_source;  // nanscope_padding_source: 0 means no spec, region unknown
  uint32_t range_padding_bits;  // bit i: range i is made of padding rows
  uint32_t intent;         // NS_INTENT_*: the infinities the launch writes into this buffer on purpose
  uint32_t range_first[NANSCOPE_MAX_ROW_RANGES];
  uint32_t range_last[NANSCOPE_MAX_ROW_RANGES];
  // Origin (flags & NS_ORIGIN_TRACKED): the findings that made the launch's tracked inputs
  // non-finite, as their sequence numbers (0: that finding was never posted).
  uint64_t parents[NANSCOPE_ORIGIN_MAX_PARENTS];
  uint32_t parent_count;   // non-finite tracked inputs (may exceed the parents listed)
  uint32_t origin_flags;   // NS_ORIGIN_*
  // The finding that left this buffer non-finite before the launch, as its word said (0: none,
  // or the word was clean, unknown or another generation's): a launch with finite inputs that
  // finds the values still there may not have written them (origin preexisting).
  uint64_t prior_seq;
} nanscope_record;

#define NS_RECORD_CAPTURED 1u
#define NS_RECORD_ROWS 2u    // the row fields are valid
#define NS_RECORD_FIXED 4u   // padding rows were zeroed after the scan
#define NS_RECORD_UNCHANGED 8u  // same counts and positions as this watch's previous scan

// Host-visible channel header, in mapped pinned memory, followed by `capacity` records.
typedef struct nanscope_channel_host {
  volatile unsigned long long read_index;  // written by the host after it consumed records
  unsigned long long capacity;
  volatile unsigned long long overflow;    // mirror of nanscope_channel_dev::overflow, for the host
  volatile unsigned long long unchanged;   // mirror of nanscope_channel_dev::unchanged
} nanscope_channel_host;

// Device-memory control block for the channel: slot reservation and overflow count.
typedef struct nanscope_channel_dev {
  unsigned long long write_index;
  unsigned long long overflow;
  unsigned long long read_index_seen;  // last host read_index the device fetched: a slot below
                                       // read_index_seen + capacity is free without a PCIe read
  unsigned long long unchanged;        // quiet rescans that found a buffer as the last scan left it
} nanscope_channel_dev;

// A task's correlation_id, which the device copies untouched into its records: CUPTI's
// correlation id (32 bits) in the low half; in the high half the slot of the launch's facts on
// the host (src/launch_facts.hpp; 0: none), so a drained record finds them without a lookup.
#define NS_CORRELATION_OF(c) ((uint32_t)((c) & 0xffffffffu))
#define NS_FACTS_SLOT_OF(c) ((uint32_t)((uint64_t)(c) >> 32))
#define NS_CORRELATION_WITH_FACTS(c, slot) (((uint64_t)(slot) << 32) | NS_CORRELATION_OF(c))

// Everything one scan launch needs, passed by value as the single kernel parameter. The plain
// kernel takes only the head (no row specs): a small parameter block launches faster, which
// matters most for scan nodes inside graphs.
#define NANSCOPE_SCAN_TASK_HEAD                                                \
  nanscope_scan_buffer buffers[NANSCOPE_SCAN_MAX_BUFFERS];                     \
  uint32_t buffer_count;                                                       \
  uint32_t kernel_id;                                                          \
  uint64_t launch_id;                                                          \
  uint64_t correlation_id;                                                     \
  uint64_t stream;                                                             \
  uint64_t graph_id;                                                           \
  uint32_t graph_node;                                                         \
  uint32_t pad_;                                                               \
  nanscope_scan_accum* accum;          /* device memory */                     \
  nanscope_channel_dev* channel_dev;   /* device memory */                     \
  nanscope_channel_host* channel_host; /* mapped host memory (device address) */ \
  nanscope_record* records;            /* mapped host memory (device address) */ \
  uint32_t row_aware_mask;             /* bit b: buffers[b] uses row_specs[b] */ \
  uint32_t channel_capacity;           /* records in the channel (a copy of the host header's) */ \
  unsigned long long* buffer_state;    /* device: origin state words; null = no origin tracking */ \
  uint32_t out_state[NANSCOPE_SCAN_MAX_BUFFERS];   /* slot refs of buffers[] */            \
  uint32_t in_state[NANSCOPE_ORIGIN_MAX_INPUTS];   /* slot refs of tracked inputs */       \
  uint32_t in_count;                                                           \
  uint32_t origin_flags;               /* NS_ORIGIN_READS_UNTRACKED, NS_ORIGIN_HOST */

typedef struct nanscope_scan_task_head {
  NANSCOPE_SCAN_TASK_HEAD
} nanscope_scan_task_head;

typedef struct nanscope_scan_task {
  NANSCOPE_SCAN_TASK_HEAD
  nanscope_row_spec row_specs[NANSCOPE_SCAN_MAX_BUFFERS];
} nanscope_scan_task;

// Scans of several launches in one graph node (hooks/graph_overlap.cpp merges the read-only scan
// nodes that may run together): the head's buffers belong to up to NANSCOPE_SCAN_MAX_BUFFERS
// launches, each with its own attribution and origin inputs. The head's own launch fields are
// unused. Launches are published in order, so a later launch sees the state words an earlier
// one left (the NaN origin of a chain inside one node).
typedef struct nanscope_launch_meta {
  uint64_t launch_id;
  uint64_t correlation_id;
  uint32_t kernel_id;
  uint32_t graph_node;
  uint32_t in_state[NANSCOPE_ORIGIN_MAX_INPUTS];  // slot refs of the launch's tracked inputs
  uint32_t in_count;
  uint32_t origin_flags;
} nanscope_launch_meta;

typedef struct nanscope_scan_group {
  NANSCOPE_SCAN_TASK_HEAD
  uint8_t launch_of[NANSCOPE_SCAN_MAX_BUFFERS];  // buffers[b] was written by launches[launch_of[b]]
  uint32_t launch_count;
  uint32_t reserved_;
  nanscope_launch_meta launches[NANSCOPE_SCAN_MAX_BUFFERS];
} nanscope_scan_group;

// A merged node of small buffers runs one block per block step (threads x unroll x 16 bytes) of
// each buffer, so the loads of all its buffers are in flight at once: a one-block node walked its
// buffers one round trip after another, about 1 us more per member on the H200 (run S14-1). The
// kernel takes that layout when its grid is exactly the sum of nanscope_group_part_blocks over its
// buffers; a larger node (more than NANSCOPE_GROUP_MAX_PART_BLOCKS) shares every buffer among
// all its blocks.
#define NANSCOPE_GROUP_PART_BYTES ((uint64_t)NANSCOPE_SCAN_THREADS * NANSCOPE_SCAN_UNROLL * 16)
#define NANSCOPE_GROUP_MAX_PART_BLOCKS 32

static inline NS_HOST_DEVICE uint32_t nanscope_group_part_blocks(uint64_t bytes) {
  return bytes <= NANSCOPE_GROUP_PART_BYTES ? 1u : (uint32_t)((bytes + NANSCOPE_GROUP_PART_BYTES - 1) / NANSCOPE_GROUP_PART_BYTES);
}

// The zero-rows kernel's parameter (zero_padding tasks, src/scan_launch.hpp: zero_task_of): only
// what it needs, so a node reads a few parameter words (a whole task cost about 0.2 us a node).
typedef struct nanscope_zero_buffer {
  uint64_t ptr;
  uint64_t elements;        // the scanned extent, as in nanscope_scan_buffer
  uint64_t rows;
  uint64_t row_elements;
  uint64_t row_stride;
  uint64_t source_ptr;      // as in nanscope_row_spec
  int64_t pad_value;
  uint64_t host_count;
  uint32_t source;          // nanscope_padding_source
  uint32_t index_i64;
  uint32_t dtype;           // nanscope_scan_dtype
  uint32_t out_state;       // origin slot ref of the buffer (NANSCOPE_ORIGIN_NONE: untracked)
} nanscope_zero_buffer;

typedef struct nanscope_zero_task {
  uint32_t buffer_count;
  uint32_t reserved;
  unsigned long long* buffer_state;  // device: origin state words; null = no origin tracking
  nanscope_zero_buffer buffers[NANSCOPE_SCAN_MAX_BUFFERS];
} nanscope_zero_task;

#ifdef __cplusplus
static_assert(sizeof(nanscope_zero_buffer) == 80, "zero buffer layout");
static_assert(sizeof(nanscope_record) == 304, "record layout");
static_assert(sizeof(nanscope_record) % 16 == 0, "records are posted in 16-byte stores");
static_assert(sizeof(nanscope_row_spec) == 104, "row spec layout");
static_assert(offsetof(nanscope_scan_task, row_specs) == sizeof(nanscope_scan_task_head),
              "the plain kernel reads the head of a full task");
static_assert(sizeof(nanscope_scan_buffer) == 24, "buffer layout");
static_assert(sizeof(nanscope_launch_meta) == 64, "launch meta layout");
static_assert(offsetof(nanscope_scan_group, buffers) == 0 && sizeof(nanscope_scan_group) % 8 == 0,
              "a group starts with a plain task's head");
static_assert(sizeof(nanscope_channel_host) % 16 == 0, "records start 16-byte aligned");
#endif
#endif

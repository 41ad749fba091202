/*
 * nanscope C API. The C ABI is the contract: opaque handles, structs whose first member is
 * `struct_size`, enums pinned to 32 bits. Injection (CUDA_INJECTION64_PATH), LD_PRELOAD and a
 * linked debug build all go through the same idempotent initialisation.
 */
#ifndef NANSCOPE_NANSCOPE_H
#define NANSCOPE_NANSCOPE_H

#include <stddef.h>
#include <stdint.h>
#include "nanscope/version.h"

#if defined(_WIN32)
#define NANSCOPE_API
#else
#define NANSCOPE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nanscope_status_t {
  NANSCOPE_SUCCESS = 0,
  NANSCOPE_ERROR_INVALID_ARGUMENT = 1,
  NANSCOPE_ERROR_NOT_INITIALIZED = 2,
  NANSCOPE_ERROR_UNAVAILABLE = 3, /* CUPTI could not be used (e.g. another subscriber) */
  NANSCOPE_ERROR_INTERNAL = 4,
  NANSCOPE_STATUS_FORCE_INT = 0x7fffffff
} nanscope_status_t;

typedef enum nanscope_attach_t {
  NANSCOPE_ATTACH_LINKED = 0,
  NANSCOPE_ATTACH_INJECTION = 1,
  NANSCOPE_ATTACH_PRELOAD = 2,
  NANSCOPE_ATTACH_FORCE_INT = 0x7fffffff
} nanscope_attach_t;

/* Counters since initialisation. */
typedef struct nanscope_stats_t {
  size_t struct_size; /* set to sizeof(nanscope_stats_t) before the call (at least V1_SIZE) */
  uint64_t launches;
  uint64_t scans;
  uint64_t findings;
  uint64_t kernels_inspected;
  uint64_t kernels_not_inspected;
  uint64_t scans_dropped;
  uint64_t overflow;
} nanscope_stats_t;
/* Size of the first version of the struct: a caller built against any later version (its
 * struct_size larger) or any earlier one down to this is served the fields both know. New
 * fields are only ever appended. */
#define NANSCOPE_STATS_V1_SIZE (offsetof(nanscope_stats_t, overflow) + sizeof(uint64_t))

/* Initialise nanscope in this process (no-op if it is already initialised by injection,
 * preload or an earlier call). Configuration comes from NANSCOPE_* environment variables. */
NANSCOPE_API nanscope_status_t nanscope_init(void);

/* Wait until findings already produced on the device are written to the log. Does not
 * synchronise any stream: call it after your own synchronisation. */
NANSCOPE_API nanscope_status_t nanscope_flush(void);

NANSCOPE_API nanscope_status_t nanscope_get_stats(nanscope_stats_t* stats);

NANSCOPE_API const char* nanscope_version(void);

NANSCOPE_API const char* nanscope_status_string(nanscope_status_t status);

/* ---- Padding specs and watches --------------------------------------------------------
 * A padding spec says which rows of a padded batch are padding. Device sources are read on the
 * GPU at every scan, so a CUDA graph replayed with new seq_lens gets a fresh verdict each time.
 * A watch ties a device buffer to a spec: after any kernel launch whose parameters reference
 * the buffer (a pointer anywhere inside it, also inside struct parameters), nanscope scans the
 * whole buffer row by row and reports padding / real verdicts. Watches may be declared before
 * CUDA is initialised; they take effect at the first launch that references them. */

typedef struct nanscope_padding_spec_st* nanscope_padding_spec_t;
typedef struct nanscope_watch_st* nanscope_watch_t;

typedef enum nanscope_dtype_t {
  NANSCOPE_DTYPE_F64 = 0,
  NANSCOPE_DTYPE_F32 = 1,
  NANSCOPE_DTYPE_F16 = 2,
  NANSCOPE_DTYPE_BF16 = 3,
  NANSCOPE_DTYPE_F8E4M3 = 4,
  NANSCOPE_DTYPE_F8E5M2 = 5,
  NANSCOPE_DTYPE_FORCE_INT = 0x7fffffff
} nanscope_dtype_t;

typedef enum nanscope_index_type_t {
  NANSCOPE_INDEX_INT32 = 0,
  NANSCOPE_INDEX_INT64 = 1,
  NANSCOPE_INDEX_FORCE_INT = 0x7fffffff
} nanscope_index_type_t;

typedef enum nanscope_action_t {
  NANSCOPE_ACTION_DEFAULT = 0, /* NANSCOPE_MODE */
  NANSCOPE_ACTION_DETECT = 1,
  NANSCOPE_ACTION_FIX = 2,     /* zero the padding rows right after the producing kernel */
  NANSCOPE_ACTION_ABORT = 3,   /* SIGABRT at the first non-finite value in a real row */
  NANSCOPE_ACTION_ZERO_PADDING = 4, /* zero padding rows only; real rows are not read (cheapest) */
  NANSCOPE_ACTION_FORCE_INT = 0x7fffffff
} nanscope_action_t;

/* Row r is padding when seq_lens[r] == pad_value. seq_lens: device array of `rows` entries. */
NANSCOPE_API nanscope_status_t nanscope_padding_spec_seq_lens(nanscope_padding_spec_t* spec, uint64_t rows,
                                                              const void* seq_lens, nanscope_index_type_t type,
                                                              int64_t pad_value);
/* Rows >= *real_rows are padding. real_rows: device scalar. */
NANSCOPE_API nanscope_status_t nanscope_padding_spec_real_rows_device(nanscope_padding_spec_t* spec, uint64_t rows,
                                                                      const void* real_rows,
                                                                      nanscope_index_type_t type);
/* Rows >= real_rows are padding; the value is fixed at declaration (also inside graphs). */
NANSCOPE_API nanscope_status_t nanscope_padding_spec_real_rows(nanscope_padding_spec_t* spec, uint64_t rows,
                                                               uint64_t real_rows);
/* Row r is padding when mask[r] != 0. mask: device array of `rows` bytes. */
NANSCOPE_API nanscope_status_t nanscope_padding_spec_mask(nanscope_padding_spec_t* spec, uint64_t rows,
                                                          const void* mask);
NANSCOPE_API nanscope_status_t nanscope_padding_spec_destroy(nanscope_padding_spec_t spec);

typedef struct nanscope_watch_desc_t {
  size_t struct_size;            /* sizeof(nanscope_watch_desc_t), at least V1_SIZE */
  const char* name;              /* shown in the log; copied */
  const void* ptr;               /* device address of row 0 */
  nanscope_dtype_t dtype;
  uint64_t rows;
  uint64_t row_elements;         /* elements per row */
  uint64_t row_stride;           /* elements between row starts; 0 = row_elements */
  nanscope_action_t action;
  nanscope_padding_spec_t padding; /* may be NULL: verdicts are "unknown"; the spec is copied */
} nanscope_watch_desc_t;
/* First version's size; fields a smaller (older) desc lacks take their zero defaults. */
#define NANSCOPE_WATCH_DESC_V1_SIZE (offsetof(nanscope_watch_desc_t, padding) + sizeof(nanscope_padding_spec_t))

NANSCOPE_API nanscope_status_t nanscope_watch(const nanscope_watch_desc_t* desc, nanscope_watch_t* watch);
NANSCOPE_API nanscope_status_t nanscope_unwatch(nanscope_watch_t watch);

/* A process-wide padding spec for typed outputs found without a watch: when the element count
 * nanscope scans is a multiple of the spec's rows, the buffer gets row verdicts, flagged
 * rows_inferred. The spec is copied; set NULL or call clear to drop it. */
NANSCOPE_API nanscope_status_t nanscope_padding_set_global(nanscope_padding_spec_t spec);
NANSCOPE_API nanscope_status_t nanscope_padding_clear_global(void);

/* ---- Generated Python code ------------------------------------------------------------
 * A code generator's map from its generated lines to the user's source (torch.compile:
 * Inductor's output code and the stack trace of the FX node each line was emitted for; the
 * Python helper sends them, docs/python.md). Lines of `generated_file` from `generated_line` up to
 * the next line given are named at the innermost frame of `traceback` outside libraries and
 * generated code: the standard traceback text, outermost frame first (`File "f", line n, in fn`
 * lines, as traceback.format_stack writes them). NULL or "": those lines come from no user frame.
 * A launch whose Python frame is such a line is then logged at that frame, the generated line
 * beside it. Copied; bounded (UNAVAILABLE when full). Does not initialise nanscope. */
NANSCOPE_API nanscope_status_t nanscope_python_line_origin(const char* generated_file, uint32_t generated_line,
                                                          const char* traceback);

/* The message of the last failed call on this thread (names the offending field). */
NANSCOPE_API const char* nanscope_last_error(void);

/* Entry point for CUDA_INJECTION64_PATH. Returns 1 on success. */
NANSCOPE_API int InitializeInjection(void);

#ifdef __cplusplus
}
#endif
#endif /* NANSCOPE_NANSCOPE_H */

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
  size_t struct_size; /* set to sizeof(nanscope_stats_t) before the call */
  uint64_t launches;
  uint64_t scans;
  uint64_t findings;
  uint64_t kernels_inspected;
  uint64_t kernels_not_inspected;
  uint64_t scans_dropped;
  uint64_t overflow;
} nanscope_stats_t;

/* Initialise nanscope in this process (no-op if it is already initialised by injection,
 * preload or an earlier call). Configuration comes from NANSCOPE_* environment variables. */
NANSCOPE_API nanscope_status_t nanscope_init(void);

/* Wait until findings already produced on the device are written to the log. Does not
 * synchronise any stream: call it after your own synchronisation. */
NANSCOPE_API nanscope_status_t nanscope_flush(void);

NANSCOPE_API nanscope_status_t nanscope_get_stats(nanscope_stats_t* stats);

NANSCOPE_API const char* nanscope_version(void);

NANSCOPE_API const char* nanscope_status_string(nanscope_status_t status);

/* Entry point for CUDA_INJECTION64_PATH. Returns 1 on success. */
NANSCOPE_API int InitializeInjection(void);

#ifdef __cplusplus
}
#endif
#endif /* NANSCOPE_NANSCOPE_H */

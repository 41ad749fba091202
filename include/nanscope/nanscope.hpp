/*
 * nanscope C++ API: a header-only RAII layer over the C ABI in nanscope/nanscope.h, in the spirit
 * of NVTX's C++ wrapper. Everything here is inline and calls only the C functions, so it adds no
 * symbols to libnanscope.so and works with any C++17 compiler (also nvcc).
 *
 *   nanscope::Session session;                                    // nanscope_init (idempotent)
 *   auto spec = nanscope::PaddingSpec::seq_lens(rows, d_seq_lens);  // int32 or int64 device array
 *   nanscope::Watch w("attn_out", d_out, rows, row_elements, nanscope::Action::fix, &spec);
 *   {
 *     nanscope::ScopedPadding pad(spec);                          // global spec for typed outputs
 *     ...launch / capture / replay...
 *   }                                                             // previous global spec restored
 *   session.flush();                                              // w is unwatched at scope exit
 *
 * Linking and injecting use the same engine: a program linked against libnanscope and also run
 * under `nanscope --` (or CUDA_INJECTION64_PATH / LD_PRELOAD) initialises once; Session then
 * attaches to the engine the driver already started.
 *
 * Failures throw nanscope::Error, which carries the status and nanscope_last_error().
 */
#ifndef NANSCOPE_NANSCOPE_HPP
#define NANSCOPE_NANSCOPE_HPP

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "nanscope/nanscope.h"

/* CUDA declares these the same way; the forward declarations let dtype_of<T>() know them
 * whatever the include order. */
struct __half;
struct __nv_bfloat16;
struct __nv_fp8_e4m3;
struct __nv_fp8_e5m2;

namespace nanscope {

enum class DType : int32_t {
  f64 = NANSCOPE_DTYPE_F64,
  f32 = NANSCOPE_DTYPE_F32,
  f16 = NANSCOPE_DTYPE_F16,
  bf16 = NANSCOPE_DTYPE_BF16,
  f8e4m3 = NANSCOPE_DTYPE_F8E4M3,
  f8e5m2 = NANSCOPE_DTYPE_F8E5M2,
};

enum class Action : int32_t {
  default_ = NANSCOPE_ACTION_DEFAULT, /* NANSCOPE_MODE decides */
  detect = NANSCOPE_ACTION_DETECT,
  fix = NANSCOPE_ACTION_FIX,
  abort = NANSCOPE_ACTION_ABORT,
  zero_padding = NANSCOPE_ACTION_ZERO_PADDING,
};

enum class IndexType : int32_t {
  i32 = NANSCOPE_INDEX_INT32,
  i64 = NANSCOPE_INDEX_INT64,
};

/* The nanscope dtype of an element type: float, double, __half, __nv_bfloat16, __nv_fp8_e4m3,
 * __nv_fp8_e5m2. Other types do not compile; pass a DType explicitly for them. */
template <typename T>
struct dtype_traits;
template <> struct dtype_traits<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_traits<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_traits<::__half> { static constexpr DType value = DType::f16; };
template <> struct dtype_traits<::__nv_bfloat16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_traits<::__nv_fp8_e4m3> { static constexpr DType value = DType::f8e4m3; };
template <> struct dtype_traits<::__nv_fp8_e5m2> { static constexpr DType value = DType::f8e5m2; };
template <typename T>
constexpr DType dtype_of() noexcept {
  return dtype_traits<typename std::remove_cv<T>::type>::value;
}

/* A failed nanscope call: what() = "<function>: <status>: <nanscope_last_error()>". */
class Error : public std::runtime_error {
 public:
  Error(nanscope_status_t status, const char* function, std::string detail)
      : std::runtime_error(compose(status, function, detail)),
        status_(status),
        function_(function ? function : ""),
        detail_(std::move(detail)) {}
  nanscope_status_t status() const noexcept { return status_; }
  /* The C function that failed, e.g. "nanscope_watch". */
  const std::string& function() const noexcept { return function_; }
  /* nanscope_last_error() at the time of the failure (empty for calls that do not set it). */
  const std::string& last_error() const noexcept { return detail_; }

 private:
  static std::string compose(nanscope_status_t status, const char* function, const std::string& detail) {
    std::string s = function ? function : "nanscope";
    s += ": ";
    const char* name = nanscope_status_string(status);
    s += name ? name : "unknown status";
    if (!detail.empty()) {
      s += ": ";
      s += detail;
    }
    return s;
  }
  nanscope_status_t status_;
  std::string function_;
  std::string detail_;
};

namespace detail {
/* Functions that report through nanscope_last_error() (the padding and watch calls). */
inline void check(nanscope_status_t status, const char* function) {
  if (status == NANSCOPE_SUCCESS) return;
  const char* msg = nanscope_last_error();
  throw Error(status, function, msg ? msg : "");
}
/* Functions that only return a status (init, flush, stats): an older last_error would mislead. */
inline void check_status(nanscope_status_t status, const char* function) {
  if (status != NANSCOPE_SUCCESS) throw Error(status, function, std::string());
}
}  // namespace detail

/* Counters since initialisation (nanscope_stats_t without struct_size). */
struct Stats {
  uint64_t launches = 0;
  uint64_t scans = 0;
  uint64_t findings = 0;
  uint64_t kernels_inspected = 0;
  uint64_t kernels_not_inspected = 0;
  uint64_t scans_dropped = 0;
  uint64_t overflow = 0;
};

/* Initialises nanscope (nanscope_init) and gives access to the engine. The engine lives until
 * the process ends (its log is flushed at exit), so a Session owns nothing and may be copied;
 * constructing several is harmless. Throws Error when nanscope is disabled (NANSCOPE_ENABLE=0)
 * or cannot attach to CUPTI; use Session(std::nothrow) to carry on without it. */
class Session {
 public:
  Session() { detail::check_status(nanscope_init(), "nanscope_init"); }
  explicit Session(const std::nothrow_t&) noexcept : status_(nanscope_init()) {}

  /* NANSCOPE_SUCCESS, or why initialisation failed (nothrow constructor only). */
  nanscope_status_t status() const noexcept { return status_; }
  bool ok() const noexcept { return status_ == NANSCOPE_SUCCESS; }
  explicit operator bool() const noexcept { return ok(); }

  /* Writes findings already produced on the device to the log. Synchronise your streams first. */
  void flush() const { detail::check_status(nanscope_flush(), "nanscope_flush"); }

  Stats stats() const {
    nanscope_stats_t s{};
    s.struct_size = sizeof s;
    detail::check_status(nanscope_get_stats(&s), "nanscope_get_stats");
    Stats out;
    out.launches = s.launches;
    out.scans = s.scans;
    out.findings = s.findings;
    out.kernels_inspected = s.kernels_inspected;
    out.kernels_not_inspected = s.kernels_not_inspected;
    out.scans_dropped = s.scans_dropped;
    out.overflow = s.overflow;
    return out;
  }

  static const char* version() noexcept { return nanscope_version(); }

 private:
  nanscope_status_t status_ = NANSCOPE_SUCCESS;
};

/* Which rows of a padded batch are padding. Move-only; owns a nanscope_padding_spec_t. Watches
 * and the global spec copy it, so it may be destroyed once they are declared, but the device
 * memory it points at (seq_lens, count, mask) must stay allocated while they are in use. */
class PaddingSpec {
 public:
  PaddingSpec() noexcept = default; /* no spec: verdicts are "unknown" */
  PaddingSpec(PaddingSpec&& other) noexcept : handle_(other.release()) {}
  PaddingSpec& operator=(PaddingSpec&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.release();
    }
    return *this;
  }
  PaddingSpec(const PaddingSpec&) = delete;
  PaddingSpec& operator=(const PaddingSpec&) = delete;
  ~PaddingSpec() { reset(); }

  /* Row r is padding when seq_lens[r] == pad_value; seq_lens is a device array of `rows`. */
  static PaddingSpec seq_lens(uint64_t rows, const void* d_seq_lens, IndexType type, int64_t pad_value = 0) {
    PaddingSpec s;
    detail::check(nanscope_padding_spec_seq_lens(&s.handle_, rows, d_seq_lens,
                                                 static_cast<nanscope_index_type_t>(type), pad_value),
                  "nanscope_padding_spec_seq_lens");
    return s;
  }
  static PaddingSpec seq_lens(uint64_t rows, const int32_t* d_seq_lens, int64_t pad_value = 0) {
    return seq_lens(rows, static_cast<const void*>(d_seq_lens), IndexType::i32, pad_value);
  }
  static PaddingSpec seq_lens(uint64_t rows, const int64_t* d_seq_lens, int64_t pad_value = 0) {
    return seq_lens(rows, static_cast<const void*>(d_seq_lens), IndexType::i64, pad_value);
  }

  /* Rows >= real_rows are padding; the count is fixed now (also inside graphs). */
  static PaddingSpec real_rows(uint64_t rows, uint64_t real_rows) {
    PaddingSpec s;
    detail::check(nanscope_padding_spec_real_rows(&s.handle_, rows, real_rows), "nanscope_padding_spec_real_rows");
    return s;
  }

  /* Rows >= *d_real_rows are padding; the device scalar is read at every scan. */
  static PaddingSpec real_rows_device(uint64_t rows, const void* d_real_rows, IndexType type) {
    PaddingSpec s;
    detail::check(nanscope_padding_spec_real_rows_device(&s.handle_, rows, d_real_rows,
                                                         static_cast<nanscope_index_type_t>(type)),
                  "nanscope_padding_spec_real_rows_device");
    return s;
  }
  static PaddingSpec real_rows_device(uint64_t rows, const int32_t* d_real_rows) {
    return real_rows_device(rows, static_cast<const void*>(d_real_rows), IndexType::i32);
  }
  static PaddingSpec real_rows_device(uint64_t rows, const int64_t* d_real_rows) {
    return real_rows_device(rows, static_cast<const void*>(d_real_rows), IndexType::i64);
  }

  /* Row r is padding when d_mask[r] != 0 (`rows` bytes on the device). */
  static PaddingSpec mask(uint64_t rows, const void* d_mask) {
    PaddingSpec s;
    detail::check(nanscope_padding_spec_mask(&s.handle_, rows, d_mask), "nanscope_padding_spec_mask");
    return s;
  }

  /* Takes ownership of a handle made with the C API. */
  static PaddingSpec adopt(nanscope_padding_spec_t handle) noexcept {
    PaddingSpec s;
    s.handle_ = handle;
    return s;
  }

  nanscope_padding_spec_t get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  nanscope_padding_spec_t release() noexcept { return std::exchange(handle_, nullptr); }
  void reset() noexcept {
    if (handle_) nanscope_padding_spec_destroy(std::exchange(handle_, nullptr));
  }

 private:
  nanscope_padding_spec_t handle_ = nullptr;
};

/* nanscope_watch_desc_t with C++ types; `padding` may be null and is copied by the watch. */
struct WatchDesc {
  const char* name = nullptr; /* copied */
  const void* ptr = nullptr;  /* device address of row 0 */
  DType dtype = DType::f32;
  uint64_t rows = 0;
  uint64_t row_elements = 0;
  uint64_t row_stride = 0; /* elements between row starts; 0 = row_elements */
  Action action = Action::default_;
  const PaddingSpec* padding = nullptr;

  nanscope_watch_desc_t to_c() const noexcept {
    nanscope_watch_desc_t d{};
    d.struct_size = sizeof d;
    d.name = name;
    d.ptr = ptr;
    d.dtype = static_cast<nanscope_dtype_t>(dtype);
    d.rows = rows;
    d.row_elements = row_elements;
    d.row_stride = row_stride;
    d.action = static_cast<nanscope_action_t>(action);
    d.padding = padding ? padding->get() : nullptr;
    return d;
  }
};

/* A watched device buffer: after every launch that references it (also inside CUDA graphs,
 * captured when the launch is), the whole buffer is scanned row by row. Move-only; unwatches in
 * its destructor. A watch may be declared before CUDA is initialised. */
class Watch {
 public:
  Watch() noexcept = default;
  explicit Watch(const nanscope_watch_desc_t& desc) {
    detail::check(nanscope_watch(&desc, &handle_), "nanscope_watch");
  }
  explicit Watch(const WatchDesc& desc) : Watch(desc.to_c()) {}
  Watch(const char* name, const void* ptr, DType dtype, uint64_t rows, uint64_t row_elements,
        uint64_t row_stride = 0, Action action = Action::default_, const PaddingSpec* padding = nullptr)
      : Watch(WatchDesc{name, ptr, dtype, rows, row_elements, row_stride, action, padding}) {}
  /* The dtype from the pointer type (float, double, __half, __nv_bfloat16, fp8); contiguous rows. */
  template <typename T>
  Watch(const char* name, const T* ptr, uint64_t rows, uint64_t row_elements, Action action = Action::default_,
        const PaddingSpec* padding = nullptr)
      : Watch(name, static_cast<const void*>(ptr), dtype_of<T>(), rows, row_elements, 0, action, padding) {}

  Watch(Watch&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Watch& operator=(Watch&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  ~Watch() { reset(); }

  /* Stops watching now; throws if nanscope does not know the watch. No-op on an empty Watch. */
  void unwatch() {
    if (handle_) detail::check(nanscope_unwatch(std::exchange(handle_, nullptr)), "nanscope_unwatch");
  }
  /* As unwatch(), never throws. */
  void reset() noexcept {
    if (handle_) nanscope_unwatch(std::exchange(handle_, nullptr));
  }
  nanscope_watch_t get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  nanscope_watch_t handle_ = nullptr;
};

/* Sets the process-wide padding spec (nanscope_padding_set_global) for its lifetime: typed kernel
 * outputs whose scanned element count is a multiple of the spec's rows get row verdicts (marked
 * rows_inferred). The spec is copied; its device memory must outlive the scope. Scopes nest
 * (last in, first out; use them from one thread): leaving an inner scope restores the outer spec, leaving
 * the outermost clears the global spec. Not copyable or movable. */
class ScopedPadding {
 public:
  /* Borrows `spec`, which must outlive the scope (an outer scope re-applies it on restore). */
  explicit ScopedPadding(const PaddingSpec& spec) : spec_(&spec) { push(); }
  /* Owns the spec. */
  explicit ScopedPadding(PaddingSpec&& spec) : owned_(std::move(spec)), spec_(&owned_) { push(); }
  ScopedPadding(const ScopedPadding&) = delete;
  ScopedPadding& operator=(const ScopedPadding&) = delete;
  ~ScopedPadding() {
    if (top() == this) top() = outer_;
    if (outer_) nanscope_padding_set_global(outer_->spec_->get());
    else nanscope_padding_clear_global();
  }

 private:
  void push() {
    detail::check(nanscope_padding_set_global(spec_->get()), "nanscope_padding_set_global");
    outer_ = top();
    top() = this;
  }
  /* The innermost live scope. A function-local static: one per program, no exported symbol. */
  static ScopedPadding*& top() noexcept {
    static ScopedPadding* current = nullptr;
    return current;
  }
  PaddingSpec owned_;
  const PaddingSpec* spec_;
  ScopedPadding* outer_ = nullptr;
};

}  // namespace nanscope

#endif /* NANSCOPE_NANSCOPE_HPP */

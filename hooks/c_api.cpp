// The C API for padding specs and watches (include/nanscope/nanscope.h). Handles are opaque;
// every failure returns a status and leaves a message naming the field in nanscope_last_error.
#include <fmt/format.h>

#include <string>

#include "abi_struct.hpp"
#include "engine.hpp"
#include "nanscope/nanscope.h"
#include "padding.hpp"

struct nanscope_padding_spec_st {
  nanscope::PaddingSpec spec;
};
struct nanscope_watch_st {
  uint32_t id = 0;
};

namespace {

thread_local std::string t_last_error;

nanscope_status_t fail(nanscope_status_t status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

nanscope_status_t make_spec(nanscope_padding_spec_t* out, nanscope::PaddingSpec spec, const char* fn) {
  if (!out) return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, fmt::format("{}: spec (the output handle) is NULL", fn));
  if (std::string err = nanscope::validate(spec); !err.empty())
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, fmt::format("{}: {}", fn, err));
  *out = new nanscope_padding_spec_st{spec};
  return NANSCOPE_SUCCESS;
}

bool index_type(nanscope_index_type_t t, nanscope::IndexType& out) {
  if (t == NANSCOPE_INDEX_INT32) out = nanscope::IndexType::i32;
  else if (t == NANSCOPE_INDEX_INT64) out = nanscope::IndexType::i64;
  else return false;
  return true;
}

// nanscope_watch on a desc of this version (older ones were widened with zero defaults).
nanscope_status_t watch_from(const nanscope_watch_desc_t* desc, nanscope_watch_t* watch) {
  if (nanscope_scan_dtype_bytes(static_cast<uint32_t>(desc->dtype)) == 0)  // not in the dtype list
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, fmt::format("nanscope_watch: dtype {} is not a nanscope_dtype_t", static_cast<int>(desc->dtype)));
  nanscope::WatchSpec w;
  w.name = desc->name ? desc->name : fmt::format("watch@{}", desc->ptr);
  w.ptr = reinterpret_cast<uint64_t>(desc->ptr);
  w.dtype = static_cast<nanscope::DType>(desc->dtype);
  w.rows = desc->rows;
  w.row_elements = desc->row_elements;
  w.row_stride = desc->row_stride;
  switch (desc->action) {
    case NANSCOPE_ACTION_DEFAULT:
    case NANSCOPE_ACTION_DETECT: w.action = nanscope::Action::detect; break;
    case NANSCOPE_ACTION_FIX: w.action = nanscope::Action::fix; break;
    case NANSCOPE_ACTION_ABORT: w.action = nanscope::Action::abort; break;
    case NANSCOPE_ACTION_ZERO_PADDING: w.action = nanscope::Action::zero_padding; break;
    default: return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_watch: action is not a nanscope_action_t");
  }
  if (desc->padding) w.padding = desc->padding->spec;
  if (std::string err = nanscope::validate(w); !err.empty())
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, fmt::format("nanscope_watch '{}': {}", w.name, err));
  if (!nanscope::Engine::instance()) nanscope_init();  // a watch declared first initialises, CUDA or not
  nanscope::Engine* e = nanscope::Engine::instance();
  if (!e || !e->subscribed())
    return fail(NANSCOPE_ERROR_UNAVAILABLE, "nanscope_watch: nanscope is disabled or could not attach to CUPTI");
  *watch = new nanscope_watch_st{e->add_watch(std::move(w))};
  return NANSCOPE_SUCCESS;
}

}  // namespace

extern "C" {

NANSCOPE_API nanscope_status_t nanscope_padding_spec_seq_lens(nanscope_padding_spec_t* spec, uint64_t rows,
                                                              const void* seq_lens, nanscope_index_type_t type,
                                                              int64_t pad_value) {
  nanscope::PaddingSpec s;
  s.source = nanscope::PaddingSource::seq_lens;
  s.rows = rows;
  s.device_ptr = reinterpret_cast<uint64_t>(seq_lens);
  s.pad_value = pad_value;
  if (!index_type(type, s.index_type))
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_padding_spec_seq_lens: type must be INT32 or INT64");
  return make_spec(spec, s, "nanscope_padding_spec_seq_lens");
}

NANSCOPE_API nanscope_status_t nanscope_padding_spec_real_rows_device(nanscope_padding_spec_t* spec, uint64_t rows,
                                                                      const void* real_rows,
                                                                      nanscope_index_type_t type) {
  nanscope::PaddingSpec s;
  s.source = nanscope::PaddingSource::real_count_device;
  s.rows = rows;
  s.device_ptr = reinterpret_cast<uint64_t>(real_rows);
  if (!index_type(type, s.index_type))
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_padding_spec_real_rows_device: type must be INT32 or INT64");
  return make_spec(spec, s, "nanscope_padding_spec_real_rows_device");
}

NANSCOPE_API nanscope_status_t nanscope_padding_spec_real_rows(nanscope_padding_spec_t* spec, uint64_t rows,
                                                               uint64_t real_rows) {
  nanscope::PaddingSpec s;
  s.source = nanscope::PaddingSource::real_count_host;
  s.rows = rows;
  s.host_count = real_rows;
  return make_spec(spec, s, "nanscope_padding_spec_real_rows");
}

NANSCOPE_API nanscope_status_t nanscope_padding_spec_mask(nanscope_padding_spec_t* spec, uint64_t rows,
                                                          const void* mask) {
  nanscope::PaddingSpec s;
  s.source = nanscope::PaddingSource::mask;
  s.rows = rows;
  s.device_ptr = reinterpret_cast<uint64_t>(mask);
  return make_spec(spec, s, "nanscope_padding_spec_mask");
}

NANSCOPE_API nanscope_status_t nanscope_padding_spec_destroy(nanscope_padding_spec_t spec) {
  delete spec;  // watches hold their own copy
  return NANSCOPE_SUCCESS;
}

NANSCOPE_API nanscope_status_t nanscope_watch(const nanscope_watch_desc_t* desc, nanscope_watch_t* watch) {
  if (!desc || !watch) return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_watch: desc and watch must not be NULL");
  nanscope_watch_desc_t d{};  // fields an older, smaller desc lacks stay zero (their defaults)
  if (!nanscope::abi_read(*desc, NANSCOPE_WATCH_DESC_V1_SIZE, d))
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT,
                fmt::format("nanscope_watch: desc->struct_size is {}, expected at least {}", desc->struct_size,
                            NANSCOPE_WATCH_DESC_V1_SIZE));
  return watch_from(&d, watch);
}

NANSCOPE_API nanscope_status_t nanscope_unwatch(nanscope_watch_t watch) {
  if (!watch) return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_unwatch: watch is NULL");
  nanscope::Engine* e = nanscope::Engine::instance();
  const bool removed = e && e->remove_watch(watch->id);
  delete watch;
  return removed ? NANSCOPE_SUCCESS : fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_unwatch: unknown watch");
}

NANSCOPE_API nanscope_status_t nanscope_padding_set_global(nanscope_padding_spec_t spec) {
  if (!nanscope::Engine::instance()) nanscope_init();
  nanscope::Engine* e = nanscope::Engine::instance();
  if (!e || !e->subscribed())
    return fail(NANSCOPE_ERROR_UNAVAILABLE, "nanscope_padding_set_global: nanscope is disabled or could not attach to CUPTI");
  e->set_global_padding(spec ? std::optional<nanscope::PaddingSpec>(spec->spec) : std::nullopt);
  return NANSCOPE_SUCCESS;
}

NANSCOPE_API nanscope_status_t nanscope_padding_clear_global(void) { return nanscope_padding_set_global(nullptr); }

NANSCOPE_API nanscope_status_t nanscope_python_line_origin(const char* generated_file, uint32_t generated_line,
                                                          const char* traceback) {
  if (!generated_file || !*generated_file)
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_python_line_origin: generated_file is NULL or empty");
  if (generated_line == 0)
    return fail(NANSCOPE_ERROR_INVALID_ARGUMENT, "nanscope_python_line_origin: generated_line is 0 (lines count from 1)");
  nanscope::Engine* e = nanscope::Engine::instance();
  if (!e) return fail(NANSCOPE_ERROR_NOT_INITIALIZED, "nanscope_python_line_origin: nanscope is not attached to this process");
  if (std::string why = e->note_generated_line(generated_file, generated_line, traceback); !why.empty())
    return fail(NANSCOPE_ERROR_UNAVAILABLE, "nanscope_python_line_origin: " + why);
  return NANSCOPE_SUCCESS;
}

NANSCOPE_API const char* nanscope_last_error(void) { return t_last_error.c_str(); }

}  // extern "C"

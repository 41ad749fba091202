// A pure C++17 user of every class in nanscope/nanscope.hpp (no CUDA headers), compiled with
// -Wall -Wextra -Wpedantic -Werror and linked through pkg-config by install_test.cmake.
// Without arguments it prints "nanscope <version>" (the library loads; nothing else runs).
// `cxx_consumer --run <device pointers...>` is not used by the test: exercise() needs a GPU.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "nanscope/nanscope.hpp"

static_assert(!std::is_copy_constructible<nanscope::PaddingSpec>::value, "PaddingSpec is move-only");
static_assert(std::is_nothrow_move_constructible<nanscope::PaddingSpec>::value, "PaddingSpec moves");
static_assert(!std::is_copy_constructible<nanscope::Watch>::value, "Watch is move-only");
static_assert(std::is_nothrow_move_assignable<nanscope::Watch>::value, "Watch moves");
static_assert(!std::is_copy_constructible<nanscope::ScopedPadding>::value, "ScopedPadding stays put");
static_assert(std::is_base_of<std::runtime_error, nanscope::Error>::value, "Error is a runtime_error");
static_assert(nanscope::dtype_of<float>() == nanscope::DType::f32, "float is f32");
static_assert(nanscope::dtype_of<const double>() == nanscope::DType::f64, "double is f64");
static_assert(static_cast<int>(nanscope::Action::zero_padding) == NANSCOPE_ACTION_ZERO_PADDING, "enums match");

static int exercise(const float* out, const int32_t* seq_lens, const int64_t* count, const unsigned char* mask) {
  try {
    nanscope::Session session;
    nanscope::Session quiet(std::nothrow);
    if (!quiet) std::printf("nanscope unavailable: %s\n", nanscope_status_string(quiet.status()));

    auto by_len = nanscope::PaddingSpec::seq_lens(8, seq_lens, /*pad_value=*/0);
    auto by_void = nanscope::PaddingSpec::seq_lens(8, static_cast<const void*>(seq_lens), nanscope::IndexType::i32);
    auto by_host = nanscope::PaddingSpec::real_rows(8, 5);
    auto by_dev = nanscope::PaddingSpec::real_rows_device(8, count);
    auto by_mask = nanscope::PaddingSpec::mask(8, mask);
    nanscope::PaddingSpec moved = std::move(by_void);
    by_void = std::move(moved);
    nanscope::PaddingSpec empty;
    if (empty || !by_len) return 1;

    nanscope::Watch a("typed", out, 8, 64, nanscope::Action::detect, &by_len);
    nanscope::Watch b("explicit", out, nanscope::DType::f32, 8, 64, /*row_stride=*/64, nanscope::Action::fix, &by_host);
    nanscope::WatchDesc desc;
    desc.name = "desc";
    desc.ptr = out;
    desc.rows = 8;
    desc.row_elements = 64;
    desc.action = nanscope::Action::zero_padding;
    desc.padding = &by_dev;
    nanscope::Watch c(desc);
    nanscope_watch_desc_t raw = desc.to_c();
    raw.padding = by_mask.get();
    nanscope::Watch d(raw);
    nanscope::Watch e = std::move(d);
    e.unwatch();
    c.reset();
    {
      nanscope::ScopedPadding outer(by_len);
      nanscope::ScopedPadding inner(nanscope::PaddingSpec::real_rows(8, 3));
    }
    nanscope_padding_spec_t handle = by_host.release();
    nanscope::PaddingSpec adopted = nanscope::PaddingSpec::adopt(handle);
    session.flush();
    const nanscope::Stats st = session.stats();
    std::printf("launches=%llu findings=%llu\n", static_cast<unsigned long long>(st.launches),
                static_cast<unsigned long long>(st.findings));
    return a && b && !c && adopted ? 0 : 1;
  } catch (const nanscope::Error& err) {
    std::fprintf(stderr, "%s (status %d, function %s, last error '%s')\n", err.what(), static_cast<int>(err.status()),
                 err.function().c_str(), err.last_error().c_str());
    return 1;
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--run") == 0)
    return exercise(nullptr, nullptr, nullptr, nullptr);  // pointers would come from the app
  std::printf("nanscope %s\n", nanscope::Session::version());
  return 0;
}

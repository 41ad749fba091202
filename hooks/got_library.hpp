// One intercepted library (cuBLAS, cuDNN, NCCL, next cuFFT or cuSPARSE) from a trait and a table.
// The table is an X-macro list of the hooked functions; the trait says how the library is
// patched. The template holds what every interposer needs the same way: the originals the
// wrappers call through, the sink they report to, and the calls each interceptor exports
// (hooks, patch_all, set_original, wrapper). A library then reads:
//
//   #define NS_CUFFT_HOOKS(X) X(cufftExecC2C) X(cufftExecR2C)          // the table
//   enum Id : int { NS_CUFFT_HOOKS(NS_GOT_ID) kHookCount };
//   struct Traits {                                                     // the trait
//     static constexpr std::size_t kCount = kHookCount;
//     using Sink = ...;                        // what the wrappers report to
//     static const got::Hook* table();         // NS_CUFFT_HOOKS(NS_GOT_HOOK), defined after the wrappers
//     static got::Options options(bool force); // which objects are never patched
//     static void after_walk();                // helpers found beside the originals
//   };
//   using Lib = got::Library<Traits>;
//   ... wrappers w_<name> calling Lib::original<decltype(&w_<name>)>(k_<name>) ...
//   const got::Hook kHooks[] = {NS_CUFFT_HOOKS(NS_GOT_HOOK)};
#pragma once
#include <atomic>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "got_patch.hpp"

// The table's rows: the hook's id, its name, and its {name, wrapper, original} entry (a wrapper
// is w_<name>, and `Lib` names the library's got::Library).
#define NS_GOT_ID(name) k_##name,
#define NS_GOT_NAME(name) #name,
#define NS_GOT_HOOK(name) {#name, reinterpret_cast<void*>(&w_##name), &Lib::originals[k_##name]},

namespace nanscope::got {

template <class Traits>
struct Library {
  using Sink = typename Traits::Sink;

  // Written by patch_all (or set_original) before the first slot is patched; never reset.
  static inline std::atomic<void*> originals[Traits::kCount];
  // Never freed once set: a wrapper on another thread may still hold the previous one.
  static inline std::atomic<const Sink*> sink{nullptr};

  template <class Fn>
  static Fn original(std::size_t id) {
    return reinterpret_cast<Fn>(originals[id].load(std::memory_order_relaxed));
  }
  static const Sink* observer() { return sink.load(std::memory_order_acquire); }
  static void observe(const Sink* s) { sink.store(s, std::memory_order_release); }

  static const Hook* hooks(std::size_t* count) {
    if (count) *count = Traits::kCount;
    return Traits::table();
  }
  // Patches every loaded importer; once a walk happened, the helpers beside the originals are
  // looked up (never loading a library).
  static Report patch_all(bool force) {
    const Report report = got::patch_all(Traits::table(), Traits::kCount, Traits::options(force));
    if (report.walked) Traits::after_walk();
    return report;
  }
  // A function the program looked up at run time (dlsym: XLA's and CuPy's loaders,
  // hooks/dlsym_intercept.hpp): the wrapper to hand it instead, when `name` is hooked here and
  // `fn` is the hook's one original (it becomes the original when none is yet, and the helpers
  // beside it are found); else nullptr, and the program keeps `fn` (a second copy of the
  // library is never wrapped: the wrapper would call the first).
  static void* adopt(const char* name, void* fn) {
    const Hook* h = find_hook(Traits::table(), Traits::kCount, name);
    if (!h || !fn || fn == h->wrapper) return nullptr;
    void* expected = nullptr;
    if (!h->original->compare_exchange_strong(expected, fn) && expected != fn) return nullptr;
    if (!expected) Traits::after_walk();
    return h->wrapper;
  }
  static bool set_original(const char* name, void* fn) {
    return got::set_original(Traits::table(), Traits::kCount, name, fn);
  }
  static void* wrapper(const char* name) { return got::wrapper_of(Traits::table(), Traits::kCount, name); }
};

// Options for a library whose own objects call each other through these imports: those are
// never patched (one call, one report), nor is nanscope itself.
inline Options options_skipping(bool force, std::vector<std::string> skip_names) {
  Options options;
  options.force = force;
  options.skip_names = std::move(skip_names);
  return options;
}

}  // namespace nanscope::got

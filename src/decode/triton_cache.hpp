// Where a loaded Triton module's TTIR is, and which kernel a module holds.
//
// Triton's cache (runtime/cache.py) keeps one directory per compiled kernel,
// `<root>/<hash>/<name>.{cubin,ttir,source,json,...}`, with root TRITON_CACHE_DIR, else
// $TRITON_HOME/.triton/cache (TRITON_HOME defaults to $HOME); Inductor sets TRITON_CACHE_DIR
// to `<inductor cache>/triton/<device>` at run time, so the environment is read per lookup.
// - Inductor's static launcher calls cuModuleLoad(path of the cached .cubin): the TTIR is the
//   sibling `<name>.ttir`, else `<name>.source` (the pre-inlining TTIR, which Triton 3.6 writes
//   even under TRITON_STORE_BINARY_ONLY=1, when the .ttir is dropped).
// - Triton's own launcher calls cuModuleLoadData(cubin bytes), which carries no size: the size
//   comes from the ELF headers, and the image is matched by size and hash against the cache.
// All of this runs inside the application's module-load callback: bounded reads, bounded
// directory walks, no exceptions, and only paths the driver was given or the cache's own layout.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "decode/triton.hpp"
#include "lock_rank.hpp"

namespace nanscope::decode {

inline constexpr std::size_t kMaxCacheFiles = 20000;      // cubins indexed per cache root
inline constexpr std::size_t kMaxCubinBytes = 64u << 20;  // larger images are not matched
inline constexpr std::size_t kMaxHashesPerLookup = 64;    // same-size candidates hashed per lookup

// FNV-1a, 64-bit, over the bytes: cheap, no dependency, the same for a file and an image.
uint64_t fnv1a64(const void* data, std::size_t size);
// Size of an ELF64 image (a cubin) from its headers: the furthest end of the header tables,
// sections and segments. 0 when it is not an ELF64 image or the headers are implausible.
std::size_t elf_image_size(const void* image, std::size_t max_bytes = kMaxCubinBytes);

struct TtirText {
  std::string text;
  std::string path;         // the file the text came from
  std::string_view reason;  // static; empty on success
  bool ok() const { return reason.empty(); }
};

// The TTIR beside a cubin that cuModuleLoad was given.
TtirText ttir_for_module_path(const std::string& cubin_path);
// TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache, else $HOME/.triton/cache (as knobs.py).
std::vector<std::string> triton_cache_dirs();

// Cubins of the Triton cache by size, hashed lazily; indexed on first use and again after a
// miss when the root's mtime changed (a new kernel directory) or the index is stale.
class TritonCacheIndex {
 public:
  // `roots` empty: the roots come from the environment at each lookup.
  explicit TritonCacheIndex(std::vector<std::string> roots = {});
  // Path of the cached .cubin whose bytes are the image's; "" when none.
  std::string cubin_for_image(const void* image, std::size_t size);
  std::size_t indexed_files() const;

 private:
  struct Entry {
    std::string path;
    uint64_t hash = 0;
    bool hashed = false;
  };
  struct Root {
    int64_t mtime_ns = -1;
    int64_t built_at_ns = -1;
    std::unordered_multimap<std::size_t, Entry> by_size;
  };
  void build(const std::string& root, Root& r);
  std::string match(Root& r, std::size_t size, uint64_t hash);

  std::vector<std::string> fixed_roots_;
  std::unordered_map<std::string, Root> roots_;
  mutable Ranked<std::mutex, LockLevel::container> mu_{"TritonCacheIndex::mu_"};
};

// The TTIR of the cached kernel whose cubin is `image` (cuModuleLoadData). `size` 0: from the
// ELF headers.
TtirText ttir_for_image(const void* image, std::size_t size, TritonCacheIndex& index);

// Parsed signatures of loaded Triton modules, keyed by the driver's CUmodule (opaque here).
// A Triton module holds one kernel. Thread-safe; at most `max_modules` entries (later loads
// are refused until modules unload, so memory stays bounded in autotuning loops).
class TritonRegistry {
 public:
  explicit TritonRegistry(std::size_t max_modules = 65536);
  // Parses `source` (or records why there is none) for `module`; false when refused or when
  // there is no signature.
  bool on_module_loaded(uint64_t module, const TtirText& source);
  void on_module_unloaded(uint64_t module);

  struct Found {
    std::shared_ptr<const TritonSignature> signature;  // null when not known
    std::string_view reason;                           // static; why not, when null
  };
  // The signature of `function` in `module` (cuFuncGetModule + cuFuncGetName at launch).
  Found lookup(uint64_t module, std::string_view function) const;
  std::size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<const TritonSignature> signature;
    std::string_view reason;
  };
  std::size_t max_modules_;
  std::unordered_map<uint64_t, Entry> modules_;
  mutable Ranked<std::shared_mutex, LockLevel::container> mu_{"TritonRegistry::mu_"};
};

}  // namespace nanscope::decode

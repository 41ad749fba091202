// Triton cache lookups and the module registry; see triton_cache.hpp.
#include "decode/triton_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "safe_file.hpp"

namespace nanscope::decode {

namespace {

// A miss re-walks a root whose mtime is unchanged only after this long: a kernel's directory
// is created before its files land, so one walk can see the directory and miss the cubin.
constexpr int64_t kStaleIndexNs = 5'000'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t mtime_ns(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Calls `f(name)` for the entries of a directory, at most `limit` of them.
template <typename F>
void for_entries(const std::string& dir, std::size_t limit, F f) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::size_t seen = 0;
  while (const dirent* e = ::readdir(d)) {
    if (++seen > limit) break;
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (!f(name)) break;
  }
  ::closedir(d);
}

}  // namespace

uint64_t fnv1a64(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::size_t elf_image_size(const void* image, std::size_t max_bytes) {
  if (!image) return 0;
  const auto* p = static_cast<const unsigned char*>(image);
  constexpr unsigned char kMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (std::memcmp(p, kMagic, 4) != 0 || p[4] != 2 || p[5] != 1) return 0;  // ELF64, little endian
  const uint64_t phoff = load<uint64_t>(p + 0x20), shoff = load<uint64_t>(p + 0x28);
  const uint16_t phentsize = load<uint16_t>(p + 0x36), phnum = load<uint16_t>(p + 0x38);
  const uint16_t shentsize = load<uint16_t>(p + 0x3a), shnum = load<uint16_t>(p + 0x3c);
  if ((shnum && shentsize != 64) || (phnum && phentsize != 56) || shnum == 0) return 0;
  const uint64_t sh_end = shoff + uint64_t{shnum} * 64, ph_end = phoff + uint64_t{phnum} * 56;
  if (shoff > max_bytes || phoff > max_bytes || sh_end > max_bytes || ph_end > max_bytes) return 0;
  uint64_t end = std::max<uint64_t>({64, sh_end, phnum ? ph_end : 0});
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = p + shoff + uint64_t{i} * 64;
    if (load<uint32_t>(sh + 4) == 8) continue;  // SHT_NOBITS occupies no file bytes
    const uint64_t off = load<uint64_t>(sh + 0x18), size = load<uint64_t>(sh + 0x20);
    if (off > max_bytes || size > max_bytes - off) return 0;
    end = std::max(end, off + size);
  }
  for (uint16_t i = 0; i < phnum; ++i) {
    const unsigned char* ph = p + phoff + uint64_t{i} * 56;
    const uint64_t off = load<uint64_t>(ph + 8), size = load<uint64_t>(ph + 0x20);
    if (off > max_bytes || size > max_bytes - off) return 0;
    end = std::max(end, off + size);
  }
  return static_cast<std::size_t>(end);
}

TtirText ttir_for_module_path(const std::string& cubin_path) {
  TtirText t;
  if (!std::string_view(cubin_path).ends_with(".cubin")) return t.reason = "triton: the module file is not a .cubin", t;
  const std::string stem = cubin_path.substr(0, cubin_path.size() - 6);
  for (const char* ext : {".ttir", ".source"}) {
    const std::string path = stem + ext;
    switch (read_bounded(path, kMaxTtirBytes, t.text)) {
      case BoundedRead::ok: t.path = path; return t;
      case BoundedRead::too_large: t.text.clear(); return t.reason = "triton: the TTIR beside the cubin is larger than the parser accepts", t;
      default: t.text.clear(); break;
    }
  }
  t.reason = "triton: no .ttir or .source beside the cubin";
  return t;
}

std::vector<std::string> triton_cache_dirs() {
  if (const char* dir = std::getenv("TRITON_CACHE_DIR"); dir && *dir) return {dir};
  const char* home = std::getenv("TRITON_HOME");
  if (!home || !*home) home = std::getenv("HOME");
  if (!home || !*home) return {};
  return {std::string(home) + "/.triton/cache"};
}

TritonCacheIndex::TritonCacheIndex(std::vector<std::string> roots) : fixed_roots_(std::move(roots)) {}

void TritonCacheIndex::build(const std::string& root, Root& r) {
  r.by_size.clear();
  r.mtime_ns = mtime_ns(root);
  r.built_at_ns = now_ns();
  std::size_t files = 0;
  // Two levels only, as cache.py lays them out: <root>/<hash>/<name>.cubin.
  for_entries(root, kMaxCacheFiles, [&](std::string_view hash_dir) {
    const std::string dir = root + "/" + std::string(hash_dir);
    for_entries(dir, 64, [&](std::string_view name) {
      if (!std::string_view(name).ends_with(".cubin")) return true;
      const std::string path = dir + "/" + std::string(name);
      struct stat st{};
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= kMaxCubinBytes) {
        r.by_size.emplace(static_cast<std::size_t>(st.st_size), Entry{path});
        ++files;
      }
      return files < kMaxCacheFiles;
    });
    return files < kMaxCacheFiles;
  });
}

std::string TritonCacheIndex::match(Root& r, std::size_t size, uint64_t hash) {
  auto [b, e] = r.by_size.equal_range(size);
  std::size_t hashed = 0;
  for (auto it = b; it != e; ++it) {
    Entry& entry = it->second;
    if (!entry.hashed) {
      if (++hashed > kMaxHashesPerLookup) break;
      std::string bytes;
      if (read_bounded(entry.path, kMaxCubinBytes, bytes) != BoundedRead::ok || bytes.size() != size) continue;
      entry.hash = fnv1a64(bytes.data(), bytes.size());
      entry.hashed = true;
    }
    if (entry.hash == hash) return entry.path;
  }
  return {};
}

std::string TritonCacheIndex::cubin_for_image(const void* image, std::size_t size) {
  if (!image || size == 0 || size > kMaxCubinBytes) return {};
  const uint64_t hash = fnv1a64(image, size);
  const std::vector<std::string> roots = fixed_roots_.empty() ? triton_cache_dirs() : fixed_roots_;
  std::lock_guard lock(mu_);
  for (const std::string& root : roots) {
    Root& r = roots_[root];
    if (r.built_at_ns < 0) build(root, r);
    std::string found = match(r, size, hash);
    if (found.empty() && (mtime_ns(root) != r.mtime_ns || now_ns() - r.built_at_ns > kStaleIndexNs)) {
      build(root, r);
      found = match(r, size, hash);
    }
    if (!found.empty()) return found;
  }
  return {};
}

std::size_t TritonCacheIndex::indexed_files() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [root, r] : roots_) n += r.by_size.size();
  return n;
}

TtirText ttir_for_image(const void* image, std::size_t size, TritonCacheIndex& index) {
  TtirText t;
  if (size == 0) size = elf_image_size(image);
  if (size == 0) return t.reason = "triton: the module image is not a cubin", t;
  const std::string cubin = index.cubin_for_image(image, size);
  if (cubin.empty()) return t.reason = "triton: no cubin in the Triton cache has the image's bytes", t;
  return ttir_for_module_path(cubin);
}

TritonRegistry::TritonRegistry(std::size_t max_modules) : max_modules_(max_modules) {}

bool TritonRegistry::on_module_loaded(uint64_t module, const TtirText& source) {
  Entry e;
  if (!source.ok()) {
    e.reason = source.reason;
  } else {
    ParsedTtir parsed = parse_ttir(source.text);
    if (parsed.signature) {
      e.signature = std::make_shared<const TritonSignature>(std::move(*parsed.signature));
    } else {
      e.reason = parsed.error;
    }
  }
  std::unique_lock lock(mu_);
  if (modules_.size() >= max_modules_ && modules_.find(module) == modules_.end()) return false;
  const bool known = e.signature != nullptr;
  modules_[module] = std::move(e);
  return known;
}

void TritonRegistry::on_module_unloaded(uint64_t module) {
  std::unique_lock lock(mu_);
  modules_.erase(module);
}

TritonRegistry::Found TritonRegistry::lookup(uint64_t module, std::string_view function) const {
  std::shared_lock lock(mu_);
  const auto it = modules_.find(module);
  if (it == modules_.end()) return {nullptr, "triton: module not seen loading from the Triton cache"};
  const Entry& e = it->second;
  if (!e.signature) return {nullptr, e.reason};
  if (e.signature->name != function) return {nullptr, "triton: the function is not the module's TTIR kernel"};
  return {e.signature, {}};
}

std::size_t TritonRegistry::size() const {
  std::shared_lock lock(mu_);
  return modules_.size();
}

}  // namespace nanscope::decode

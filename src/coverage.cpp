#include "coverage.hpp"

#include "log_schema.hpp"

#include <algorithm>

namespace nanscope {

const char* inspection_key(Inspection how) {
  switch (how) {
#define NANSCOPE_X(id, key) \
  case Inspection::id: return key;
    NANSCOPE_INSPECTIONS(NANSCOPE_X)
#undef NANSCOPE_X
    case Inspection::count_: break;
  }
  return "unknown";
}

namespace {

template <std::size_t N>
bool starts_with_any(std::string_view name, const std::string_view (&prefixes)[N]) {
  for (std::string_view p : prefixes)
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

}  // namespace

bool library_kernel(std::string_view name) {
  // Name prefixes of the kernels cuBLASLt (nvjet, xmma, CUTLASS 3 GEMMs), cuBLAS and cuDNN
  // (its generated and runtime-fused kernels) launch on sm_90.
  static constexpr std::string_view kPrefixes[] = {"nvjet_",      "sm90_xmma_", "sm80_xmma_",      "cutlass3x_",
                                                   "cutlass_80_", "cublas",     "cudnn",           "void cudnn",
                                                   "gemv",        "void gemv",  "void gemmSN",     "gemmk1_kernel",
                                                   "void cublasLt", "cutlass::Kernel", "void cutlass::Kernel"};
  return starts_with_any(name, kPrefixes);
}

bool cutlass_device_kernel(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"_ZN7cutlass13device_kernelI", "void cutlass::device_kernel<",
                                                   "cutlass::device_kernel<"};
  return starts_with_any(name, kPrefixes);
}

std::atomic<uint64_t>* Coverage::counter(uint32_t kernel_id) {
  const uint32_t c = kernel_id / kChunk;
  if (c >= kChunks) return nullptr;
  Chunk* chunk = chunks_[c].load(std::memory_order_acquire);
  if (!chunk) {
    std::lock_guard lock(mu_);
    chunk = chunks_[c].load(std::memory_order_relaxed);
    if (!chunk) {
      owned_.push_back(std::make_unique<Chunk>());
      chunk = owned_.back().get();
      chunks_[c].store(chunk, std::memory_order_release);
    }
  }
  return &chunk->launches[kernel_id % kChunk];
}

void Coverage::on_kernel(uint32_t kernel_id, const std::string& name, const std::string& reason) {
  if (reason.empty()) return;
  std::lock_guard lock(mu_);
  not_inspected_.push_back({kernel_id, name, reason});
}

void Coverage::on_refused_launch(uint32_t kernel_id, const std::string& name, std::string_view reason) {
  std::lock_guard lock(mu_);
  if (kernel_id < refused_listed_.size() && refused_listed_[kernel_id]) return;
  if (kernel_id >= refused_listed_.size()) refused_listed_.resize(kernel_id + 1, false);
  refused_listed_[kernel_id] = true;
  not_inspected_.push_back({kernel_id, name, "refused at launch: " + std::string(reason)});
}

bool Coverage::refusal_listed(uint32_t kernel_id) const {
  std::lock_guard lock(mu_);
  return kernel_id < refused_listed_.size() && refused_listed_[kernel_id];
}

void Coverage::on_launch(uint32_t kernel_id, Inspection how, uint64_t written, uint64_t scanned) {
  by_kind_[static_cast<size_t>(how)].fetch_add(1, std::memory_order_relaxed);
  if (written) {
    written_.fetch_add(written, std::memory_order_relaxed);
    written_scanned_.fetch_add(std::min(written, scanned), std::memory_order_relaxed);
  }
  if (scanned) scanned_.fetch_add(scanned, std::memory_order_relaxed);
  if (how == Inspection::opaque || how == Inspection::mismatch || how == Inspection::library ||
      how == Inspection::extent_unknown) {
    if (auto* c = counter(kernel_id)) c->fetch_add(1, std::memory_order_relaxed);
    else overflow_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Coverage::on_library_call(const char* api, const char* refused) {
  library_calls_.fetch_add(1, std::memory_order_relaxed);
  if (!refused) {
    library_scanned_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::lock_guard lock(mu_);
  for (LibraryRefusal& r : library_refused_)
    if (r.api == api && r.why == refused) {
      ++r.calls;
      return;
    }
  if (library_refused_.size() < 64) library_refused_.push_back({api, refused, 1});
}

nlohmann::ordered_json Coverage::to_json(size_t top) const {
  namespace ck = schema::coverage_key;
  nlohmann::ordered_json launches = nlohmann::ordered_json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < by_kind_.size(); ++i) {
    const uint64_t n = by_kind_[i].load(std::memory_order_relaxed);
    launches[inspection_key(static_cast<Inspection>(i))] = n;
    total += n;
  }
  const uint64_t looked = launches[inspection_key(Inspection::decoded)].get<uint64_t>() +
                          launches[inspection_key(Inspection::typed)].get<uint64_t>() +
                          launches[inspection_key(Inspection::watched)].get<uint64_t>();
  struct Row {
    uint64_t launches;
    const Kernel* k;
  };
  std::vector<Row> rows;
  auto library_json = [this] {  // under mu_
    nlohmann::ordered_json refused = nlohmann::ordered_json::array();
    namespace lk = schema::library_calls_key;
    for (const LibraryRefusal& r : library_refused_) refused.push_back({{lk::api, r.api}, {lk::reason, r.why}, {lk::calls, r.calls}});
    return nlohmann::ordered_json{{lk::calls, library_calls_.load(std::memory_order_relaxed)},
                                  {lk::scanned, library_scanned_.load(std::memory_order_relaxed)},
                                  {lk::not_scanned, refused}};
  };
  std::lock_guard lock(mu_);
  for (const Kernel& k : not_inspected_) {
    const uint32_t c = k.id / kChunk;
    const Chunk* chunk = c < kChunks ? chunks_[c].load(std::memory_order_acquire) : nullptr;
    const uint64_t n = chunk ? chunk->launches[k.id % kChunk].load(std::memory_order_relaxed) : 0;
    if (n) rows.push_back({n, &k});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.launches > b.launches; });
  // The library kernels (GEMMs, cuDNN) in a list of their own: they would crowd out the kernels
  // a decoder should cover.
  nlohmann::ordered_json top_rows = nlohmann::ordered_json::array(), library_rows = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    nlohmann::ordered_json& list = library_kernel(r.k->name) ? library_rows : top_rows;
    if (list.size() < top) list.push_back({{ck::kernel, r.k->name}, {ck::reason, r.k->reason}, {ck::launches, r.launches}});
  }
  return {{ck::launches, total},
          {ck::by_inspection, launches},
          {ck::inspected_share, total ? static_cast<double>(looked) / static_cast<double>(total) : 0.0},
          {ck::bytes_written_decoded, written_.load(std::memory_order_relaxed)},
          {ck::bytes_written_decoded_scanned, written_scanned_.load(std::memory_order_relaxed)},
          {ck::bytes_scanned, scanned_.load(std::memory_order_relaxed)},
          {ck::kernels_not_inspected, not_inspected_.size()},
          {ck::not_inspected_top, top_rows},
          {ck::library_top, library_rows},
          {ck::library_calls, library_json()},
          {ck::not_inspected_uncounted_launches, overflow_.load(std::memory_order_relaxed)},
          {ck::graph_replays_sentinel_only, tier_sentinel_only_.load(std::memory_order_relaxed)},
          {ck::graph_replays_every_scan, tier_every_scan_.load(std::memory_order_relaxed)}};
}

}  // namespace nanscope

#include "rank_env.hpp"

#include <charconv>

#include <fmt/format.h>

namespace nanscope {

namespace {

struct Family {
  const char* source;
  const char* rank;
  const char* local_rank;  // nullptr: the family has none
  const char* world_size;
};
// Precedence, first match wins (see rank_env.hpp for why Slurm comes last).
constexpr Family kFamilies[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
};

std::optional<long> read_count(const RankEnvLookup& env, const char* name, std::vector<std::string>& errors) {
  if (!name) return std::nullopt;
  const std::optional<std::string> v = env(name);
  if (!v) return std::nullopt;
  long x = -1;
  const char* b = v->data();
  const char* e = b + v->size();
  const auto [p, ec] = std::from_chars(b, e, x);
  if (v->empty() || ec != std::errc() || p != e || x < 0) {
    errors.push_back(fmt::format("{}='{}' is not a non-negative integer; the rank it gives is unknown", name, *v));
    return std::nullopt;
  }
  return x;
}

}  // namespace

RankInfo detect_rank(const RankEnvLookup& getenv_fn) {
  RankInfo r;
  for (const Family& f : kFamilies) {
    if (!getenv_fn(f.rank)) continue;
    r.source = f.source;
    r.rank = read_count(getenv_fn, f.rank, r.errors);
    r.local_rank = read_count(getenv_fn, f.local_rank, r.errors);
    r.world_size = read_count(getenv_fn, f.world_size, r.errors);
    if (r.world_size && *r.world_size == 0) {
      r.errors.push_back(fmt::format("{}=0 is not a world size; the world size is unknown", f.world_size));
      r.world_size.reset();
    }
    if (r.rank && r.world_size && *r.rank >= *r.world_size) {
      r.errors.push_back(fmt::format("{}={} is not below {}={}; the rank is unknown", f.rank, *r.rank,
                                     f.world_size, *r.world_size));
      r.rank.reset();
    }
    return r;
  }
  return r;
}

}  // namespace nanscope

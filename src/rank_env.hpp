// Which rank of a multi-process job this process is, from the launchers' variables: torchrun
// (RANK, LOCAL_RANK, WORLD_SIZE), OpenMPI (OMPI_COMM_WORLD_*), MPICH / Intel MPI through PMI
// (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID) and Slurm (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS).
// Pure: the environment lookup is injected (config.hpp's EnvLookup). docs/multi-gpu.md.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

struct RankInfo {
  std::optional<long> rank, local_rank, world_size;
  const char* source = nullptr;  // the family that gave the rank: "torchrun", "openmpi", "pmi", "slurm"
  std::vector<std::string> errors;  // one per malformed or inconsistent variable, naming it
  // A job of several processes: a world size above 1, or a rank above 0.
  bool multi_process() const { return (world_size && *world_size > 1) || (rank && *rank > 0); }
};

// The first family (in the order above) whose rank variable is set gives rank, local_rank and
// world_size; the others are not consulted, so a torchrun inside a Slurm step (SLURM_PROCID is
// then the node's task, RANK the process's rank) or an mpirun inside an allocation (every
// child inherits the batch step's SLURM_PROCID=0) is read right. A malformed value (not a
// non-negative decimal integer, or a rank not below the world size) is said, naming the
// variable, and that value is unknown: never taken from another family.
using RankEnvLookup = std::function<std::optional<std::string>(const char*)>;
RankInfo detect_rank(const RankEnvLookup& getenv_fn);

}  // namespace nanscope

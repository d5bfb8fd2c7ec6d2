#include "comm/launcher.h"

#include <cstdlib>
#include <string>

namespace sb {
namespace {

// The leading integer of a variable's value, or `fallback` when unset or not a number. Slurm writes
// per-node task counts as "4(x2)" or "4,3", so the first number is the first node's count.
int leading_int(const char* value, int fallback) {
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return end == value ? fallback : static_cast<int>(parsed);
}

}  // namespace

LauncherInfo detect_launcher(const std::function<const char*(const char*)>& getenv) {
  auto text = [&](const char* name) -> std::string {
    const char* value = getenv(name);
    return value ? value : "";
  };
  auto number = [&](const char* name, int fallback) { return leading_int(getenv(name), fallback); };

  LauncherInfo info;
  // Slurm's job facts hold whatever started the ranks inside the allocation.
  info.job_id = text("SLURM_JOB_ID");
  info.node_list = text("SLURM_JOB_NODELIST");
  if (info.node_list.empty()) info.node_list = text("SLURM_NODELIST");

  // mpirun first: inside an allocation its ranks inherit SLURM_PROCID from the daemon srun started, so
  // the Slurm task variables would describe the daemon, not the rank.
  if (getenv("OMPI_COMM_WORLD_SIZE")) {
    info.name = "openmpi";
    info.rank = number("OMPI_COMM_WORLD_RANK", -1);
    info.size = number("OMPI_COMM_WORLD_SIZE", -1);
    info.local_rank = number("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    info.ranks_per_node = number("OMPI_COMM_WORLD_LOCAL_SIZE", 0);
  } else if (getenv("PMI_RANK") && (getenv("MPI_LOCALRANKID") || !getenv("SLURM_PROCID"))) {
    // Hydra (MPICH's mpiexec) sets MPI_LOCALRANKID; srun --mpi=pmi2 sets PMI_RANK but not that.
    info.name = "mpich";
    info.rank = number("PMI_RANK", -1);
    info.size = number("PMI_SIZE", -1);
    info.local_rank = number("MPI_LOCALRANKID", -1);
    info.ranks_per_node = number("MPI_LOCALNRANKS", 0);
  } else if (getenv("SLURM_PROCID")) {
    info.name = "slurm";
    info.rank = number("SLURM_PROCID", -1);
    info.size = number("SLURM_NTASKS", -1);
    info.local_rank = number("SLURM_LOCALID", -1);
    // --ntasks-per-node when given, else the step's own layout ("4(x2)" -> 4).
    info.ranks_per_node =
        number("SLURM_NTASKS_PER_NODE", number("SLURM_STEP_TASKS_PER_NODE", number("SLURM_TASKS_PER_NODE", 0)));
  }
  return info;
}

LauncherInfo detect_launcher() {
  return detect_launcher([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace sb

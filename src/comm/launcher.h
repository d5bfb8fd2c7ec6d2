// Which launcher started this process, read from the environment it sets. Recorded in the results
// file for the report; the ranks per node the job actually has come from MPI (MpiSession), not from here.
#pragma once
#include <functional>
#include <string>

namespace sb {

struct LauncherInfo {
  std::string name = "none";  // "openmpi" (mpirun/mpiexec), "mpich" (Hydra, PMI), "slurm" (srun), "none"
  std::string job_id;         // the Slurm job id where there is one (also under mpirun in an allocation)
  std::string node_list;      // Slurm's compressed node list, e.g. "gpu[01-04]"; "" outside Slurm
  int ranks_per_node = 0;     // as the launcher states it; 0 where it does not say
  int rank = -1;              // this process's rank as the launcher numbers it; -1 where unknown
  int size = -1;              // ranks the launcher started; -1 where unknown
  int local_rank = -1;        // rank on this node as the launcher numbers it; -1 where unknown
};

// Reads the process environment.
LauncherInfo detect_launcher();

// Same, with a stand-in for std::getenv (returns nullptr for an unset variable), for tests.
LauncherInfo detect_launcher(const std::function<const char*(const char*)>& getenv);

}  // namespace sb

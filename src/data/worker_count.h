// How many threads build a rank's batches when --workers is not given: the cores the launcher gives each
// rank, as a PyTorch DataLoader's num_workers is usually set.
#pragma once
#include <functional>
#include <string>

namespace sb {

// The process's environment, looked up by name (nullptr: unset); a parameter so tests can pass their own.
using EnvLookup = std::function<const char*(const char*)>;

// SLURM_CPUS_PER_TASK when the launcher sets it; else the cores this process may run on
// (sched_getaffinity): all of them when the launcher bound the rank to fewer than the node's cores,
// otherwise the node's cores shared among its local_ranks; at least 1.
int default_input_workers(int local_ranks, int affinity_cores, int node_cores, const EnvLookup& env);

// The same for this process: its affinity mask, the node's cores and its real environment.
int default_input_workers(int local_ranks);

}  // namespace sb

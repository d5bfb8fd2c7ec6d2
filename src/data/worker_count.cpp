#include "data/worker_count.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace sb {
namespace {

int positive_int(const char* text) {
  if (!text) return 0;
  int value = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, ec] = std::from_chars(text, end, value);
  return ec == std::errc() && stop == end && value > 0 ? value : 0;
}

int affinity_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

int default_input_workers(int local_ranks, int affinity_cores, int node_cores, const EnvLookup& env) {
  if (const int per_task = positive_int(env("SLURM_CPUS_PER_TASK"))) return per_task;
  // A bound rank's mask is already its share; an unbound one sees every core, which its neighbours share.
  if (affinity_cores < node_cores) return std::max(1, affinity_cores);
  return std::max(1, affinity_cores / std::max(1, local_ranks));
}

int default_input_workers(int local_ranks) {
  const int node_cores = static_cast<int>(std::thread::hardware_concurrency());
  return default_input_workers(local_ranks, affinity_core_count(), node_cores,
                               [](const char* name) { return std::getenv(name); });
}

}  // namespace sb

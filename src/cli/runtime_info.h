// Versions and devices, for `scalebench info` and the results file's root attributes.
#pragma once
#include <string>
#include <vector>

#include "comm/mpi_session.h"

namespace sb {

struct RuntimeInfo {
  std::string scalebench_version, mpi_version, hdf5_version;
  std::string cuda_runtime_version = "n/a", cuda_driver_version = "n/a", cudnn_version = "n/a", nccl_version = "n/a";
  bool cuda_built = false;
  int gpu_count_min = 0;                 // fewest GPUs visible on any rank
  std::vector<std::string> rank_devices; // per rank: the device it would use ("cpu" or the GPU's name)
};

// Collective over the session's world: every rank reports its device.
RuntimeInfo gather_runtime_info(MpiSession& session, bool use_gpu = true);
std::string format_runtime_info(const RuntimeInfo& info, const MpiSession& session);

}  // namespace sb

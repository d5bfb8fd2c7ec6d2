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
  std::string image_decoders;            // printed when set (`info` sets it): image_decoder_list()
};

// Collective over the session's world: every rank reports its device.
RuntimeInfo gather_runtime_info(MpiSession& session, bool use_gpu = true);
// The image decoders of this build: "libjpeg-turbo, libpng, nvjpeg (B)", B being nvJPEG's backend on the
// current device ("hardware" or "cuda"), "built in" where no device can be asked, or "not built in".
// Asking creates an nvJPEG handle on the device, so only `info` asks.
std::string image_decoder_list();
std::string format_runtime_info(const RuntimeInfo& info, const MpiSession& session);

}  // namespace sb

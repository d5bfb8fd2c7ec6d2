#include "cli/device_resolution.h"

#include "core/log.h"
#include "train/device_choice.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "train/engines/cuda/device_info.h"
#endif

namespace sb {

void resolve_device_on_ranks(MpiSession& session, TrainConfig& config, const char* line_prefix) {
#ifdef SCALEBENCH_HAVE_CUDA
  const bool cuda_built = true;
  // Only auto asks the driver: an explicit cpu run never touches CUDA.
  const int my_gpus = config.device == Device::Auto ? visible_gpu_count() : 0;
#else
  const bool cuda_built = false;
  const int my_gpus = 0;
#endif
  const int gpus = session.world().allreduce_min(my_gpus);  // every rank decides alike
  const DeviceChoice choice = resolve_device(config.device, cuda_built, gpus);
  config.device = choice.device;
  log0("%s%s\n", line_prefix, device_line(choice).c_str());
}

}  // namespace sb

#include "train/engines/cuda/cuda_engine_options.h"

#include "train/engines/optimizer_overlap.h"

namespace sb::cuda {

std::string overlap_refusal(const CudaEngineOptions& options, const TrainConfig& config, int ranks) {
  if (!options.optimizer_overlap) return "off in the engine's options";
  return optimizer_overlap_refusal(config, ranks);
}

}  // namespace sb::cuda

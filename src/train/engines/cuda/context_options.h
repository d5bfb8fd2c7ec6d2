// The CUDA layers' context options of a run: precision, layout, determinism, autotuning and the plan
// cache, as both CUDA engines (DDP and DataParallel) set them; fusion and the weight-gradient stream as
// the developer switches say (core/dev_switches.h).
#pragma once
#include "nn/cuda/context.h"
#include "train/train_config.h"

namespace sb {
cuda::ContextOptions context_options(const TrainConfig& config);
}  // namespace sb

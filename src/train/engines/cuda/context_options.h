// The CUDA layers' context options of a run: precision, layout, determinism, batch-norm path, fusion,
// autotuning and the plan cache, as both CUDA engines (DDP and DataParallel) set them.
#pragma once
#include "nn/cuda/context.h"
#include "train/train_config.h"

namespace sb {
cuda::ContextOptions context_options(const TrainConfig& config);
}  // namespace sb

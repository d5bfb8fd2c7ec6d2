// The CUDA layers' context options of a run: precision, layout, determinism, autotuning and the plan
// cache, as both CUDA engines (DDP and DataParallel) set them. The layers' alternative paths keep their
// defaults: a test that compares a path with its twin chooses it through CudaEngineOptions
// (cuda_engine_options.h) or the ContextOptions it builds a context with.
#pragma once
#include "nn/cuda/context.h"
#include "train/train_config.h"

namespace sb {
cuda::ContextOptions context_options(const TrainConfig& config);
}  // namespace sb

// The CUDA engine: one GPU per rank, the dataset resident on it as uint8, one kernel to assemble each
// batch, the cuDNN/cuBLAS network, gradients averaged by NCCL in buckets that overlap backward, one
// fused optimizer kernel, and the whole step captured as a CUDA graph where it can be.
#pragma once
#include <memory>

#include "comm/communicator.h"
#include "data/dataset.h"
#include "train/engines/cuda/cuda_engine_options.h"
#include "train/engines/engine.h"
#include "train/train_config.h"

namespace sb {
// Collective over comm (NCCL bootstrap). Selects GPU local_rank % visible GPUs. A run takes the default
// options; a test may choose the engine's alternative paths (cuda_engine_options.h).
std::unique_ptr<Engine> make_cuda_engine(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                         Communicator& comm, int local_rank, int local_size,
                                         const cuda::CudaEngineOptions& options = {});
}  // namespace sb

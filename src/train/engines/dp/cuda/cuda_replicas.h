// DataParallel's replicas on GPUs 0..N-1 of this process, each with its own stream, cuDNN and cuBLAS
// handles and network. As torch.nn.DataParallel does, the parameters are broadcast and the gradients
// reduced with NCCL (one communicator per GPU from ncclCommInitAll, driven from one thread in a group
// call: comm.broadcast_coalesced and comm.reduce_add), and the batch, the outputs and the loss gradient
// move as peer copies (Tensor.to(device) in scatter and gather). Replica 0 also holds the CUDA engine's
// input pipeline (the data set resident on its GPU, data/cuda/resident_input.h), loss and optimizer.
#pragma once
#include <memory>

#include "data/dataset.h"
#include "train/engines/dp/replicas.h"
#include "train/train_config.h"

namespace sb {

// Uses GPUs 0..config.replicas-1 of those visible. The datasets must outlive the replicas.
std::unique_ptr<Replicas> make_cuda_replicas(const TrainConfig& config, const Dataset& train, const Dataset& test);

}  // namespace sb

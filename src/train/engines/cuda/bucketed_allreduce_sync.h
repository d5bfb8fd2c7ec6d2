// The CUDA engine's gradient sync on several ranks: the NCCL communicator and the gradient buckets
// (gradient_buckets.h) that all-reduce the gradients while backward runs, fed by the layers'
// gradient-ready hook, with each bucket's optimizer update after its all-reduce where the optimizer
// overlap applies (train/engines/optimizer_overlap.h). One rank has nothing to average: no communicator,
// no buckets, no communication stream, and every call does nothing.
#pragma once
#include "train/engines/gradient_sync.h"

namespace sb::cuda {

extern const GradientSyncStrategy kBucketedAllreduce;

}  // namespace sb::cuda

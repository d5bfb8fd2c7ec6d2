// The gradient synchronisation of a CUDA engine on several ranks: the NCCL communicator and the gradient
// buckets (gradient_buckets.h) that all-reduce the gradients while backward runs, fed by the layers'
// gradient-ready hook. One rank has nothing to average: no communicator, no buckets, no communication
// stream, and every call below does nothing.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>

#include "comm/communicator.h"
#include "comm/cuda/nccl_communicator.h"
#include "nn/cuda/context.h"
#include "nn/cuda/network.h"
#include "train/engines/cuda/cuda_engine_options.h"
#include "train/engines/cuda/device_optimizer.h"
#include "train/engines/cuda/gradient_buckets.h"
#include "train/train_config.h"

namespace sb::cuda {

class GradientSync {
 public:
  // Collective over comm (the NCCL bootstrap, the symmetric window's agreement). Sets ctx's gradient-ready
  // hook: this object must stay where it is while ctx runs backward.
  GradientSync(const TrainConfig& config, Communicator& comm, Network& net, Context& ctx, cudaStream_t compute,
               const CudaEngineOptions& options);
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Each bucket's update of `optimizer` after its all-reduce, where the optimizer overlap applies to
  // `config` and the options allow it; where it does not apply, a log line says why.
  void overlap_updates(const DeviceOptimizer& optimizer, const TrainConfig& config, int ranks,
                       const CudaEngineOptions& options);

  bool averages() const { return buckets_ != nullptr; }
  // Whether the buckets' updates follow their all-reduces (then the step queues no update of its own).
  bool queues_updates() const { return buckets_ && buckets_->queues_updates(); }
  const GradientBuckets* buckets() const { return buckets_.get(); }

  // A step of `micro_batches` micro-batches in `slot` starts: with one, each bucket is all-reduced as
  // backward finishes it; with several, their sum is all-reduced after the last backward, by finish().
  void begin_step(int slot, size_t micro_batches);
  // Launches what is left and makes the compute stream wait for every bucket.
  void finish();

 private:
  Network& net_;
  std::unique_ptr<NcclCommunicator> nccl_;  // null on one rank
  std::unique_ptr<GradientBuckets> buckets_;  // null on one rank; released before the communicator
  bool reduce_during_backward_ = true;
};

}  // namespace sb::cuda

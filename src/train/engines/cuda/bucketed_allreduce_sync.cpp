#include "train/engines/cuda/bucketed_allreduce_sync.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "comm/cuda/nccl_communicator.h"
#include "comm/cuda/nccl_window.h"
#include "core/error.h"
#include "core/log.h"
#include "core/startup_clock.h"
#include "train/engines/bucket_plan.h"
#include "train/engines/cuda/device_sync_parts.h"
#include "train/engines/cuda/gradient_buckets.h"

namespace sb::cuda {
namespace {

class BucketedAllreduceSync final : public GradientSync {
 public:
  // Collective over comm (the NCCL bootstrap, the symmetric window's agreement). Sets the context's
  // gradient-ready hook: this object must stay where it is while the context runs backward.
  BucketedAllreduceSync(const TrainConfig& config, Communicator& comm, float* grads, const DeviceSyncParts& parts);
  BucketedAllreduceSync(const BucketedAllreduceSync&) = delete;
  BucketedAllreduceSync& operator=(const BucketedAllreduceSync&) = delete;

  // With one micro-batch each bucket is all-reduced as backward finishes it; with several, their sum is
  // all-reduced after the last backward, by finish().
  void begin(int slot, size_t micro_batches) override {
    reduce_during_backward_ = micro_batches == 1;
    if (buckets_) buckets_->begin_step(slot);
  }
  void gradients_ready(int64_t first_final, StreamHandle ready_on) override {
    if (reduce_during_backward_) buckets_->gradients_ready_from(first_final, static_cast<cudaStream_t>(ready_on));
  }
  // Launches what is left and makes the compute stream wait for every bucket.
  void finish() override {
    if (buckets_) buckets_->finish();
    reduce_during_backward_ = true;
  }
  bool averages() const override { return buckets_ != nullptr; }
  bool updates_parameters() const override { return buckets_ && buckets_->queues_updates(); }
  std::vector<BucketSpan> read_times(int slot, uint64_t step_start_ns) const override {
    return buckets_ ? buckets_->read_times(slot, step_start_ns) : std::vector<BucketSpan>{};
  }

 private:
  // Each bucket's update of the optimizer after its all-reduce, where the optimizer overlap applies to
  // `config` and the options allow it; where it does not apply, a log line says why.
  void overlap_updates(const DeviceOptimizer& optimizer, const TrainConfig& config, int ranks,
                       const CudaEngineOptions& options);

  std::unique_ptr<NcclCommunicator> nccl_;    // null on one rank
  std::unique_ptr<GradientBuckets> buckets_;  // null on one rank; released before the communicator
  bool reduce_during_backward_ = true;
};

BucketedAllreduceSync::BucketedAllreduceSync(const TrainConfig& config, Communicator& comm, float* grads,
                                             const DeviceSyncParts& parts) {
  if (comm.size() == 1) return;
  StartupSpan nccl_startup(StartupPart::nccl);
  nccl_ = std::make_unique<NcclCommunicator>(comm);
  nccl_startup.stop();
  const CudaEngineOptions& options = parts.options;
  const int64_t bucket_size = bucket_elements_of_mib(config.bucket_mib);
  const std::string window_refusal = options.symmetric_memory ? symmetric_window_refusal(comm) : "off in the engine's options";
  if (options.symmetric_memory && !window_refusal.empty()) log0("symmetric memory: off (%s)\n", window_refusal.c_str());
  buckets_ = std::make_unique<GradientBuckets>(plan_buckets(parts.net.param_specs(), bucket_size, default_tail_elements(bucket_size)),
                                               grads, parts.net.param_count(), *nccl_, parts.ctx.stream(),
                                               config.allreduce_bf16, window_refusal.empty());
  // The layers report gradients final many times a step: the hook calls this final class directly.
  parts.ctx.set_gradient_ready_hook([this, grads](const float* first_final, cudaStream_t final_on) {
    gradients_ready(first_final - grads, final_on);
  });
  overlap_updates(parts.optimizer, config, comm.size(), options);
}

void BucketedAllreduceSync::overlap_updates(const DeviceOptimizer& optimizer, const TrainConfig& config, int ranks,
                                            const CudaEngineOptions& options) {
  const std::string refusal = overlap_refusal(options, config, ranks);
  if (refusal.empty())
    buckets_->queue_updates(optimizer);
  else if (options.optimizer_overlap)  // a test's choice goes unsaid
    log0("optimizer overlap: off (%s)\n", refusal.c_str());
}

std::unique_ptr<GradientSync> make_bucketed_allreduce(const GradientSyncSetup& setup) {
  if (!setup.device) fatal("the bucketed NCCL all-reduce needs the CUDA engine's device parts");
  return std::make_unique<BucketedAllreduceSync>(setup.config, setup.comm, setup.grads.data(), *setup.device);
}

}  // namespace

const GradientSyncStrategy kBucketedAllreduce{
    "bucketed-allreduce",
    "NCCL all-reduces of gradient buckets launched as backward finishes them, beside it on a high-priority "
    "stream (DDP's scheme), each bucket's update after its all-reduce where the optimizer overlap applies",
    Device::Cuda, make_bucketed_allreduce};

}  // namespace sb::cuda

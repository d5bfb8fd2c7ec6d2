#include "train/engines/cuda/gradient_sync.h"

#include <string>

#include "comm/cuda/nccl_window.h"
#include "core/log.h"
#include "core/startup_clock.h"
#include "train/engines/bucket_plan.h"

namespace sb::cuda {

GradientSync::GradientSync(const TrainConfig& config, Communicator& comm, Network& net, Context& ctx, cudaStream_t compute,
                           const CudaEngineOptions& options)
    : net_(net) {
  if (comm.size() == 1) return;
  StartupSpan nccl_startup(StartupPart::nccl);
  nccl_ = std::make_unique<NcclCommunicator>(comm);
  nccl_startup.stop();
  const int64_t bucket_size = bucket_elements_of_mib(config.bucket_mib);
  const std::string window_refusal = options.symmetric_memory ? symmetric_window_refusal(comm) : "off in the engine's options";
  if (options.symmetric_memory && !window_refusal.empty()) log0("symmetric memory: off (%s)\n", window_refusal.c_str());
  buckets_ = std::make_unique<GradientBuckets>(plan_buckets(net.param_specs(), bucket_size, default_tail_elements(bucket_size)),
                                               net.grads(), net.param_count(), *nccl_, compute, config.allreduce_bf16,
                                               window_refusal.empty());
  ctx.set_gradient_ready_hook([this](const float* first_final, cudaStream_t final_on) {
    if (reduce_during_backward_) buckets_->gradients_ready_from(first_final - net_.grads(), final_on);
  });
}

void GradientSync::overlap_updates(const DeviceOptimizer& optimizer, const TrainConfig& config, int ranks,
                                   const CudaEngineOptions& options) {
  if (!buckets_) return;
  const std::string refusal = overlap_refusal(options, config, ranks);
  if (refusal.empty())
    buckets_->queue_updates(optimizer);
  else if (options.optimizer_overlap)  // a test's choice goes unsaid
    log0("optimizer overlap: off (%s)\n", refusal.c_str());
}

void GradientSync::begin_step(int slot, size_t micro_batches) {
  reduce_during_backward_ = micro_batches == 1;
  if (buckets_) buckets_->begin_step(slot);
}

void GradientSync::finish() {
  if (buckets_) buckets_->finish();
  reduce_during_backward_ = true;
}

}  // namespace sb::cuda

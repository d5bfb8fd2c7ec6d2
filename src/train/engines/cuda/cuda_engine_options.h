// The CUDA engine's alternative paths, and its gradient-sync strategy. Each settled path has a twin that
// stays so that the GPU tests can compare the two bit for bit (and a benchmark measure one against the
// other); a run's options never choose a twin, so every run takes the defaults. A test chooses one through
// make_cuda_engine (cuda_engine.h) when it builds the engine.
#pragma once
#include <functional>
#include <string>

#include "train/engines/cuda/bucketed_allreduce_sync.h"
#include "train/engines/gradient_sync.h"
#include "train/train_config.h"

namespace sb::cuda {

struct ContextOptions;

struct CudaEngineOptions {
  // Applied to the run's context options (context_options.h) before the layers are built, for the
  // layers' twins: ContextOptions::parallel_wgrad, fused_bn_kernels, fuse_residual_grad, batchnorm_path.
  std::function<void(ContextOptions&)> adjust_context;
  // Each gradient bucket's optimizer update right after its all-reduce where it applies
  // (train/engines/optimizer_overlap.h); off: one update after every all-reduce.
  bool optimizer_overlap = true;
  // The gradient buckets all-reduced in an NCCL symmetric window where NCCL can register one
  // (comm/cuda/nccl_window.h); off: on plain buffers.
  bool symmetric_memory = true;
  // How the gradients are averaged across ranks: a CUDA row of the strategies table
  // (src/cli/gradient_sync_table.h), which a run takes from there.
  const GradientSyncStrategy* gradient_sync = &kBucketedAllreduce;
};

// Why the engine keeps the one optimizer update after every all-reduce on `ranks` ranks, or "" where each
// bucket's update follows its all-reduce: the options' choice, else optimizer_overlap_refusal's.
std::string overlap_refusal(const CudaEngineOptions& options, const TrainConfig& config, int ranks);

}  // namespace sb::cuda

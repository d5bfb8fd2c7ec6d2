#include "train/engines/cuda/context_options.h"

#include "core/dev_switches.h"
#include "train/cache_folder.h"

namespace sb {

cuda::ContextOptions context_options(const TrainConfig& c) {
  cuda::ContextOptions o;
  o.compute = compute_dtype(c.precision);
  o.tf32 = c.precision == Precision::TF32;
  o.layout = c.layout;
  o.deterministic = c.deterministic;
  const DevSwitches dev = dev_switches();
  o.fused_bn_kernels = dev.fused_bn;
  o.fuse_residual_grad = dev.fused_residual_grad;
  o.parallel_wgrad = dev.parallel_wgrad;
  o.autotune = c.autotune;
  o.plan_cache_dir = cache_folder(c);
  return o;
}

}  // namespace sb

#include "train/cuda/context_options.h"

#include "nn/plan_store.h"

namespace sb {

cuda::ContextOptions context_options(const TrainConfig& c) {
  cuda::ContextOptions o;
  o.compute = compute_dtype(c.precision);
  o.tf32 = c.precision == Precision::TF32;
  o.layout = c.layout;
  o.deterministic = c.deterministic;
  o.batchnorm_path = c.batchnorm_path;
  o.fused_bn_kernels = c.fused_bn;
  o.autotune = c.autotune;
  o.plan_cache_dir = c.plan_cache ? *c.plan_cache : default_plan_cache_dir();
  return o;
}

}  // namespace sb

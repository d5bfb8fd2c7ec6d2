#include "train/engines/cuda/context_options.h"

#include "train/cache_folder.h"

namespace sb {

cuda::ContextOptions context_options(const TrainConfig& c) {
  cuda::ContextOptions o;
  o.compute = compute_dtype(c.precision);
  o.tf32 = c.precision == Precision::TF32;
  o.layout = c.layout;
  o.deterministic = c.deterministic;
  o.autotune = c.autotune;
  o.fold_batch_norm = c.fold_batch_norm;
  o.fold_bn_statistics = c.fold_bn_statistics_on();
  o.plan_cache_dir = cache_folder(c);
  return o;
}

}  // namespace sb

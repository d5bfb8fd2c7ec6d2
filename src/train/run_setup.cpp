#include "train/run_setup.h"

#include "core/error.h"
#include "optim/optimizer_factory.h"
#include "optim/schedule_factory.h"

namespace sb {
namespace {
void zero_dropout(LayerSpec& spec) {
  if (spec.kind == LayerKind::Dropout) spec.p = 0.0;
  for (auto& child : spec.children) zero_dropout(child);
}
}  // namespace

LayerSpec model_spec_for(const TrainConfig& config, const Dataset& train) {
  LayerSpec spec = build_model(config.model, ModelInput{train.channels, train.height, train.width, train.num_classes});
  if (!config.dropout) zero_dropout(spec);
  if (config.zero_init_residual && zero_init_residual(spec) == 0)
    throw UserError("--zero-init-residual: model '" + config.model +
                    "' has no residual branch that ends in batch normalisation; leave the option off");
  return spec;
}

OptimizerSpec optimizer_spec_for(const TrainConfig& config) {
  OptimizerOptions o;
  o.lr = config.lr;
  o.momentum = config.momentum;
  o.dampening = config.dampening;
  o.nesterov = config.nesterov;
  o.rho = config.rho;
  o.beta1 = config.beta1;
  o.beta2 = config.beta2;
  o.weight_decay = config.weight_decay;
  if (config.eps >= 0) o.eps = config.eps;
  return resolve_optimizer_spec(config.optimizer, o);
}

std::unique_ptr<Optimizer> optimizer_for(const TrainConfig& config, int64_t parameter_count) {
  return make_optimizer(optimizer_spec_for(config), parameter_count);
}

std::unique_ptr<LrSchedule> schedule_for(const TrainConfig& config, int ranks) {
  ScheduleOptions o;
  o.step_size = config.step_size;
  o.gamma = config.gamma;
  o.warmup_epochs = config.warmup_epochs;
  o.total_epochs = config.epochs;
  o.min_lr = config.min_lr;
  const double base = config.scale_lr ? config.lr * ranks : config.lr;
  return make_schedule(name_of(config.scheduler), base, o);
}

uint64_t dropout_stream_key(uint64_t seed, int rank) {
  // splitmix64 of (seed, rank): distinct, well-mixed keys per rank.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace sb

#include "train/train_config.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/json_text.h"
#include "optim/optimizer_kind.h"
#include "optim/option_checks.h"
#include "train/run_setup.h"

namespace sb {

const char* scaling_name(Scaling s) { return s == Scaling::Strong ? "strong" : "weak"; }

int64_t TrainConfig::per_rank_batch(int ranks) const {
  if (scaling == Scaling::Weak) return batch_size;
  if (batch_size % ranks != 0) {
    throw UserError("--batch-size " + std::to_string(batch_size) + " (the global batch under --scaling strong) does not divide by " +
                    std::to_string(ranks) + " ranks; pick a multiple of " + std::to_string(ranks) +
                    " or use --scaling weak");
  }
  return batch_size / ranks;
}

std::string TrainConfig::checkpoint_path() const {
  if (!checkpoint.empty()) return checkpoint;
  return out.empty() ? std::string("scalebench.ckpt.h5") : out + ".ckpt.h5";
}

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw UserError(message);
}
bool one_of(const std::string& v, std::initializer_list<const char*> valid) {
  for (const char* x : valid) if (v == x) return true;
  return false;
}
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

void TrainConfig::validate() const {
  require(epochs >= 1, "--epochs must be at least 1 (got " + std::to_string(epochs) + ")");
  require(batch_size >= 1, "--batch-size must be at least 1 (got " + std::to_string(batch_size) + ")");
  require(eval_batch_size >= 1, "--eval-batch-size must be at least 1 (got " + std::to_string(eval_batch_size) + ")");
  require(train_limit >= 0, "--train-limit must be 0 (all) or positive (got " + std::to_string(train_limit) + ")");
  require(test_limit >= 0, "--test-limit must be 0 (all) or positive (got " + std::to_string(test_limit) + ")");
  require(std::isfinite(lr) && lr > 0, "--lr must be a positive number (got " + num(lr) + ")");
  require(momentum >= 0 && momentum < 1 + 1e-12, "--momentum must lie in [0, 1] (got " + num(momentum) + ")");
  require(weight_decay.value_or(0) >= 0, "--weight-decay must not be negative (got " + num(weight_decay.value_or(0)) + ")");
  require(beta1 >= 0 && beta1 < 1, "--beta1 must lie in [0, 1) (got " + format_option_value(beta1) + "); Adam's default is 0.9");
  require(beta2 >= 0 && beta2 < 1, "--beta2 must lie in [0, 1) (got " + format_option_value(beta2) + "); Adam's default is 0.999");
  optimizer_spec_for(*this);  // the optimizer's name and its remaining rules, before any data is read
  require(gamma > 0, "--gamma must be positive (got " + num(gamma) + ")");
  require(step_size >= 1, "--step-size must be at least 1 (got " + std::to_string(step_size) + ")");
  require(one_of(device, {"cpu", "cuda"}), "--device must be cpu or cuda (got '" + device + "')");
  require(one_of(precision, {"fp32", "tf32", "fp16", "bf16"}),
          "--precision must be fp32, tf32, fp16 or bf16 (got '" + precision + "')");
  require(one_of(layout, {"nhwc", "nchw"}), "--layout must be nhwc or nchw (got '" + layout + "')");
  require(device == "cuda" || precision == "fp32",
          "--precision " + precision + " needs --device cuda; the CPU reference computes in fp32");
  require(target_accuracy >= 0 && target_accuracy <= 1,
          "--target-accuracy is a fraction in [0, 1] (got " + num(target_accuracy) + "); e.g. 0.9 for 90%");
  require(patience >= 0, "--patience must not be negative (got " + std::to_string(patience) + ")");
  require(bucket_mib > 0, "--bucket-mib must be positive (got " + num(bucket_mib) + ")");
  require(warmup_epochs >= 0, "--lr-warmup-epochs must not be negative (got " + num(warmup_epochs) + ")");
  require(checkpoint_every >= 0, "--checkpoint-every must not be negative (got " + std::to_string(checkpoint_every) + ")");
  require(sample_steps >= 0, "--sample-steps must not be negative");
  require(collective_timeout >= 0, "--collective-timeout must be 0 (off) or a number of seconds (got " + num(collective_timeout) + ")");
}

std::string TrainConfig::to_json() const {
  // The optimizer by its canonical name and the weight decay it applies, so that a default and the same
  // value given explicitly record (and resume) alike.
  const std::optional<OptimizerKind> kind = find_optimizer_kind(optimizer);
  std::ostringstream j;
  j << "{\"model\":" << json_quote(model) << ",\"data\":" << json_quote(data) << ",\"epochs\":" << epochs
    << ",\"batch_size\":" << batch_size << ",\"scaling\":" << json_quote(scaling_name(scaling))
    << ",\"eval_batch_size\":" << eval_batch_size << ",\"train_limit\":" << train_limit
    << ",\"test_limit\":" << test_limit << ",\"drop_last\":" << (drop_last ? "true" : "false")
    << ",\"augment\":" << (augment ? "true" : "false") << ",\"dropout\":" << (dropout ? "true" : "false")
    << ",\"optimizer\":" << json_quote(kind ? optimizer_name(*kind) : optimizer) << ",\"lr\":" << num(lr) << ",\"momentum\":" << num(momentum)
    << ",\"dampening\":" << num(dampening) << ",\"nesterov\":" << (nesterov ? "true" : "false")
    << ",\"weight_decay\":" << num(weight_decay.value_or(kind ? default_weight_decay(*kind) : 0.0)) << ",\"rho\":" << num(rho) << ",\"eps\":" << num(eps)
    << ",\"beta1\":" << num(beta1) << ",\"beta2\":" << num(beta2) << ",\"scheduler\":" << json_quote(scheduler)
    << ",\"step_size\":" << step_size << ",\"gamma\":" << num(gamma) << ",\"warmup_epochs\":" << num(warmup_epochs)
    << ",\"min_lr\":" << num(min_lr) << ",\"scale_lr\":" << (scale_lr ? "true" : "false")
    << ",\"seed\":" << seed << ",\"device\":" << json_quote(device) << ",\"precision\":" << json_quote(precision)
    << ",\"layout\":" << json_quote(layout) << ",\"cuda_graph\":" << (cuda_graph ? "true" : "false")
    << ",\"bucket_mib\":" << num(bucket_mib) << ",\"allreduce_bf16\":" << (allreduce_bf16 ? "true" : "false")
    << ",\"deterministic\":" << (deterministic ? "true" : "false")
    << ",\"target_accuracy\":" << num(target_accuracy) << ",\"patience\":" << patience
    << ",\"log_interval\":" << log_interval << ",\"sample_steps\":" << sample_steps << ",\"collective_timeout\":" << num(collective_timeout) << ",\"out\":" << json_quote(out) << ",\"checkpoint_every\":" << checkpoint_every << "}";
  return j.str();
}

}  // namespace sb

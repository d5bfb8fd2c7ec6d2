// The one optimizer setup of a run: optimizer_spec_for(config) resolves every default once, and both
// engines take their update from it (the CPU engine through optimizer_for, the CUDA engine through
// optimizer_args(optimizer_spec_for(config)), which the GPU test tests/gpu/mpi/test_gpu_optimizer_steps.cpp
// runs). Here: the resolved spec of every optimizer and option combination against values written out
// by hand, the CPU engine's optimizer against that spec, the names in any case, the configuration's JSON,
// the checks of TrainConfig::validate, and AdamW's default decay applied by a real step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "optim/adadelta.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "train/run_setup.h"
#include "train/train_config.h"
#include "train/train_options.h"

namespace sb {
namespace {

struct Case {
  const char* label;
  TrainConfig config;
  OptimizerSpec want;  // written out by hand: torch's defaults where the config leaves an option unset
};

// --optimizer NAME (set through its option row, as the command line sets it) and --lr LR.
TrainConfig config_of(const char* optimizer, double lr) {
  TrainConfig c;
  train_option_named("optimizer")->field.parse(c, optimizer, "optimizer");
  c.lr = lr;
  return c;
}

OptimizerSpec spec_of(OptimizerKind kind, double lr) {
  OptimizerSpec s;
  s.kind = kind;
  s.lr = lr;
  s.rho = 0.9;
  s.beta1 = 0.9;
  s.beta2 = 0.999;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  const auto add = [&](const char* label, TrainConfig c, OptimizerSpec s) { all.push_back({label, c, s}); };

  add("sgd plain", config_of("sgd", 0.1), spec_of(OptimizerKind::Sgd, 0.1));
  {
    TrainConfig c = config_of("sgd", 0.1);
    c.momentum = 0.9;
    OptimizerSpec s = spec_of(OptimizerKind::Sgd, 0.1);
    s.momentum = 0.9;
    add("sgd momentum", c, s);
    c.nesterov = true;
    s.nesterov = true;
    add("sgd nesterov", c, s);
    c.nesterov = false;
    c.dampening = 0.3;
    c.weight_decay = 5e-4;
    s.nesterov = false;
    s.dampening = 0.3;
    s.weight_decay = 5e-4;
    add("sgd dampening and weight decay", c, s);
  }
  {
    OptimizerSpec s = spec_of(OptimizerKind::Adadelta, 1.0);
    s.eps = 1e-6;
    add("adadelta defaults", config_of("adadelta", 1.0), s);
    TrainConfig c = config_of("ADADELTA", 1.0);
    c.rho = 0.95;
    c.eps = 1e-5;
    c.weight_decay = 0.01;
    s.rho = 0.95;
    s.eps = 1e-5;
    s.weight_decay = 0.01;
    add("adadelta options, upper case", c, s);
  }
  {
    OptimizerSpec s = spec_of(OptimizerKind::Adam, 1e-3);
    s.eps = 1e-8;
    add("adam defaults", config_of("adam", 1e-3), s);
    TrainConfig c = config_of("Adam", 1e-3);
    c.beta1 = 0.8;
    c.beta2 = 0.99;
    c.eps = 1e-6;
    c.weight_decay = 0.1;
    s.beta1 = 0.8;
    s.beta2 = 0.99;
    s.eps = 1e-6;
    s.weight_decay = 0.1;
    add("adam options, mixed case", c, s);
  }
  {
    OptimizerSpec s = spec_of(OptimizerKind::AdamW, 1e-3);
    s.eps = 1e-8;
    s.weight_decay = 1e-2;  // torch.optim.AdamW's default
    add("adamw without --weight-decay", config_of("adamw", 1e-3), s);
    add("AdamW without --weight-decay", config_of("AdamW", 1e-3), s);
    TrainConfig c = config_of("adamw", 1e-3);
    c.weight_decay = 0.0;
    s.weight_decay = 0.0;
    add("adamw with --weight-decay 0", c, s);
    c.weight_decay = 0.05;
    c.eps = 1e-7;
    s.weight_decay = 0.05;
    s.eps = 1e-7;
    add("adamw with --weight-decay 0.05 and --eps", c, s);
  }
  return all;
}

TEST(OptimizerSpecFor, ResolvesEveryOptionAndDefault) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const OptimizerSpec got = optimizer_spec_for(c.config);
    EXPECT_EQ(got.kind, c.want.kind);
    EXPECT_EQ(got.lr, c.want.lr);
    EXPECT_EQ(got.momentum, c.want.momentum);
    EXPECT_EQ(got.dampening, c.want.dampening);
    EXPECT_EQ(got.nesterov, c.want.nesterov);
    EXPECT_EQ(got.weight_decay, c.want.weight_decay);
    EXPECT_EQ(got.rho, c.want.rho);
    EXPECT_EQ(got.eps, c.want.eps);
    EXPECT_EQ(got.beta1, c.want.beta1);
    EXPECT_EQ(got.beta2, c.want.beta2);
    EXPECT_EQ(got.amsgrad, c.want.amsgrad);
    EXPECT_TRUE(got == c.want);
  }
}

// The CPU engine's optimizer (optimizer_for, as CpuEngine builds it) runs exactly the spec's update
// configs, the same sgd_config / adadelta_config / adam_config the CUDA engine hands its kernel.
TEST(OptimizerSpecFor, CpuEngineOptimizerRunsTheSpec) {
  constexpr int64_t n = 5;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const OptimizerSpec spec = optimizer_spec_for(c.config);
    const auto optimizer = optimizer_for(c.config, n);
    EXPECT_STREQ(optimizer->name(), optimizer_name(spec.kind));
    switch (spec.kind) {
      case OptimizerKind::Sgd: {
        const SgdConfig& got = dynamic_cast<Sgd&>(*optimizer).config();
        const SgdConfig want = sgd_config(spec);
        EXPECT_EQ(got.momentum, want.momentum);
        EXPECT_EQ(got.dampening, want.dampening);
        EXPECT_EQ(got.nesterov, want.nesterov);
        EXPECT_EQ(got.weight_decay, want.weight_decay);
        EXPECT_EQ(want.weight_decay, c.want.weight_decay);
        break;
      }
      case OptimizerKind::Adadelta: {
        const AdadeltaConfig& got = dynamic_cast<Adadelta&>(*optimizer).config();
        const AdadeltaConfig want = adadelta_config(spec);
        EXPECT_EQ(got.rho, want.rho);
        EXPECT_EQ(got.eps, want.eps);
        EXPECT_EQ(got.weight_decay, want.weight_decay);
        EXPECT_EQ(want.eps, c.want.eps);
        break;
      }
      case OptimizerKind::Adam:
      case OptimizerKind::AdamW: {
        const AdamConfig& got = dynamic_cast<Adam&>(*optimizer).config();
        const AdamConfig want = adam_config(spec);
        EXPECT_EQ(got.beta1, want.beta1);
        EXPECT_EQ(got.beta2, want.beta2);
        EXPECT_EQ(got.eps, want.eps);
        EXPECT_EQ(got.weight_decay, want.weight_decay);
        EXPECT_EQ(got.decoupled_weight_decay, want.decoupled_weight_decay);
        EXPECT_EQ(want.decoupled_weight_decay, spec.kind == OptimizerKind::AdamW);
        EXPECT_EQ(got.amsgrad, want.amsgrad);
        EXPECT_EQ(want.weight_decay, c.want.weight_decay);
        break;
      }
    }
  }
}

// One step of the CPU engine's AdamW built from --optimizer adamw alone, against torch.optim.AdamW's
// formula in double: θ(1 − γλ) − γ m̂ / (sqrt(v̂) + ε) with λ = 1e-2. Where the gradient is 0 the Adam
// part is exactly 0, so those elements show the decay alone: θ(1 − γλ), rounded once in fp32.
TEST(OptimizerSpecFor, AdamwWithoutWeightDecayAppliesTorchsDefaultDecay) {
  TrainConfig config = config_of("adamw", 0.1);
  const std::vector<float> start = {0.5f, -1.25f, 2.0f, 0.75f, -0.3f, 1.5f};
  const std::vector<float> grads = {0.0f, 0.0f, 0.0f, 0.2f, -0.05f, 1.0f};
  std::vector<float> params = start;
  optimizer_for(config, static_cast<int64_t>(params.size()))->step(params.data(), grads.data(), config.lr);
  const double lr = config.lr, decay = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  for (size_t i = 0; i < start.size(); ++i) {
    const double g = grads[i];
    const double m_hat = (1 - beta1) * g / (1 - beta1), v_hat = (1 - beta2) * g * g / (1 - beta2);
    const double want = start[i] * (1 - lr * decay) - lr * m_hat / (std::sqrt(v_hat) + eps);
    // The fp32 step rounds a handful of times, each within 2^-24 of |θ| + γ (the update's size).
    const double allowed = 8 * 0x1p-24 * (std::fabs(start[i]) + lr);
    EXPECT_NEAR(params[i], want, allowed) << "element " << i;
    // Without the decay the step would land lr * decay * |θ| away: far outside the rounding allowed.
    EXPECT_GT(lr * decay * std::fabs(start[i]), 10 * allowed);
  }
}

TEST(OptimizerSpecFor, NamesInAnyCaseGiveOneSpecAndOneRecordedConfiguration) {
  for (const char* spelling : {"AdamW", "ADAMW", "adamW"}) {
    SCOPED_TRACE(spelling);
    const TrainConfig other_case = config_of(spelling, 1e-3);
    TrainConfig explicit_default = config_of("adamw", 1e-3);
    explicit_default.weight_decay = 1e-2;
    EXPECT_TRUE(optimizer_spec_for(other_case) == optimizer_spec_for(explicit_default));
    // The JSON (results file, cross-rank hash, resume check) records the canonical name and the weight
    // decay applied, so the default and the same value given explicitly resume into each other.
    EXPECT_EQ(other_case.to_json(), explicit_default.to_json());
    EXPECT_NE(other_case.to_json().find("\"optimizer\":\"adamw\""), std::string::npos) << other_case.to_json();
    EXPECT_NE(other_case.to_json().find("\"weight_decay\":0.01"), std::string::npos) << other_case.to_json();
  }
  EXPECT_NE(config_of("sgd", 0.1).to_json().find("\"weight_decay\":0,"), std::string::npos);
}

// The UserError message of validate(), or "" when it accepts the configuration.
std::string refusal(const TrainConfig& config) {
  try {
    config.validate();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(OptimizerSpecFor, ValidateChecksTheOptimizerOptionsFirst) {
  TrainConfig c = config_of("adam", 1e-3);
  EXPECT_EQ(refusal(c), "");
  c.beta1 = 1.0;
  EXPECT_NE(refusal(c).find("--beta1 must lie in [0, 1) (got 1)"), std::string::npos) << refusal(c);
  c.beta1 = 0.9;
  c.beta2 = -0.5;
  EXPECT_NE(refusal(c).find("--beta2 must lie in [0, 1) (got -0.5)"), std::string::npos) << refusal(c);
  c.beta2 = 0.999;
  try {  // an unknown name never reaches the configuration: its option row refuses it
    config_of("rmsprop", 1e-3);
    ADD_FAILURE() << "--optimizer rmsprop was accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "--optimizer expects one of sgd, adadelta, adam, adamw (any case), got 'rmsprop'");
  }
  c = config_of("sgd", 0.1);
  c.nesterov = true;  // without momentum: refused before any data is read, as on either engine
  EXPECT_NE(refusal(c).find("Nesterov"), std::string::npos) << refusal(c);
  c = config_of("adadelta", 1.0);
  c.rho = 1.5;
  EXPECT_NE(refusal(c).find("rho"), std::string::npos) << refusal(c);
}

}  // namespace
}  // namespace sb

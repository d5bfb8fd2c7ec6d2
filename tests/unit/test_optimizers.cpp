// Each optimizer against an independent double-precision re-derivation of torch.optim's documented
// update (written out here from the formulas in docs/optimizers.md, never through src/optim's helpers),
// over three steps of random parameters and gradients. Also: state naming, checkpoint round trips and
// the factory's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "optim/adadelta.h"
#include "optim/adam.h"
#include "optim/optimizer_factory.h"
#include "optim/sgd.h"

namespace sb {
namespace {

using Vec = std::vector<double>;
constexpr int64_t kN = 13;
constexpr int kSteps = 3;

// Random parameters and one gradient per step, fixed seed, values in [-1, 1] (never all zero).
struct Inputs {
  std::vector<float> params;
  std::vector<std::vector<float>> grads;
};

Inputs random_inputs(uint64_t seed, double grad_scale_after_first = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Inputs in;
  for (int64_t i = 0; i < kN; ++i) in.params.push_back(u(rng));
  for (int s = 0; s < kSteps; ++s) {
    std::vector<float> g;
    for (int64_t i = 0; i < kN; ++i) g.push_back(static_cast<float>(u(rng) * (s == 0 ? 1.0 : grad_scale_after_first)));
    in.grads.push_back(g);
  }
  return in;
}

Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// |actual - expected| within a tolerance relative to the largest expected magnitude of the buffer
// (fp32 arithmetic against double). The updates are elementwise, no BLAS: the same on every CPU.
void expect_buffer_near(const float* actual, const Vec& expected, const std::string& what) {
  double scale = 0;
  for (double e : expected) scale = std::max(scale, std::abs(e));
  const double tol = 1e-5 * scale + 1e-12;
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << what << " element " << i;
}

const NamedState& find_state(const std::vector<NamedState>& states, const std::string& name) {
  for (const NamedState& s : states)
    if (s.name == name) return s;
  ADD_FAILURE() << "no state named " << name;
  static NamedState none;
  return none;
}

// ---- References (torch.optim's algorithm boxes, in double) ----

struct SgdRef {
  double momentum, dampening, weight_decay;
  bool nesterov;
  Vec buf;
  int t = 0;
  void step(Vec& p, const std::vector<float>& grad, double lr) {
    ++t;
    buf.resize(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i] + weight_decay * p[i];
      if (momentum != 0) {
        buf[i] = t == 1 ? g : momentum * buf[i] + (1 - dampening) * g;
        g = nesterov ? g + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * g;
    }
  }
};

struct AdadeltaRef {
  double rho, eps, weight_decay;
  Vec v, u;  // square_avg, acc_delta
  void step(Vec& p, const std::vector<float>& grad, double lr) {
    v.resize(p.size(), 0.0);
    u.resize(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i] + weight_decay * p[i];
      v[i] = rho * v[i] + (1 - rho) * g * g;
      const double dx = std::sqrt(u[i] + eps) / std::sqrt(v[i] + eps) * g;
      u[i] = rho * u[i] + (1 - rho) * dx * dx;
      p[i] -= lr * dx;
    }
  }
};

struct AdamRef {
  double beta1, beta2, eps, weight_decay;
  bool decoupled, amsgrad;
  Vec m, v, v_max;
  int t = 0;
  void step(Vec& p, const std::vector<float>& grad, double lr) {
    ++t;
    m.resize(p.size(), 0.0);
    v.resize(p.size(), 0.0);
    v_max.resize(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled) p[i] -= lr * weight_decay * p[i];
      else g += weight_decay * p[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      // torch's implementation keeps the maximum of the raw v (then bias-corrects it with this step's t).
      v_max[i] = std::max(v_max[i], v[i]);
      const double v_hat = (amsgrad ? v_max[i] : v[i]) / (1 - std::pow(beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// Runs `opt` and `ref` side by side for kSteps with a varying learning rate, checking the parameters
// after each step, and returns the reference for state checks.
template <typename Ref>
Ref run_and_compare(Optimizer& opt, Ref ref, const Inputs& in, double lr) {
  std::vector<float> p = in.params;
  Vec p_ref = to_double(in.params);
  for (int s = 0; s < kSteps; ++s) {
    const double step_lr = lr * (1.0 - 0.25 * s);  // the rate changes between steps, as under a schedule
    opt.step(p.data(), in.grads[s].data(), step_lr);
    ref.step(p_ref, in.grads[s], step_lr);
    expect_buffer_near(p.data(), p_ref, std::string(opt.name()) + " params after step " + std::to_string(s + 1));
    EXPECT_EQ(opt.step_count(), s + 1);
  }
  return ref;
}

// ---- SGD ----

TEST(Sgd, PlainStepsMatchReference) {
  const Inputs in = random_inputs(11);
  Sgd opt(kN, SgdConfig{});
  run_and_compare(opt, SgdRef{0, 0, 0, false, {}}, in, 0.1);
  EXPECT_TRUE(opt.state().empty());
}

TEST(Sgd, WeightDecayWithoutMomentum) {
  const Inputs in = random_inputs(12);
  SgdConfig c;
  c.weight_decay = 0.05;
  Sgd opt(kN, c);
  run_and_compare(opt, SgdRef{0, 0, 0.05, false, {}}, in, 0.1);
}

TEST(Sgd, LiteralMomentumExample) {
  // p = 1, g = 0.5 twice, lr 0.1, momentum 0.9: b1 = 0.5, p1 = 0.95; b2 = 0.95, p2 = 0.855.
  SgdConfig c;
  c.momentum = 0.9;
  Sgd opt(1, c);
  float p = 1.0f;
  const float g = 0.5f;
  opt.step(&p, &g, 0.1);
  EXPECT_NEAR(p, 0.95, 1e-7);
  opt.step(&p, &g, 0.1);
  EXPECT_NEAR(p, 0.855, 1e-7);
  EXPECT_NEAR(opt.state()[0].data[0], 0.95, 1e-7);
}

TEST(Sgd, MomentumDampeningWeightDecay) {
  const Inputs in = random_inputs(13);
  SgdConfig c;
  c.momentum = 0.9;
  c.dampening = 0.3;
  c.weight_decay = 1e-2;
  Sgd opt(kN, c);

  // The first step's buffer is the (decayed) gradient itself, without dampening.
  std::vector<float> p = in.params;
  opt.step(p.data(), in.grads[0].data(), 0.1);
  Vec first_buf(kN);
  for (int64_t i = 0; i < kN; ++i) first_buf[i] = in.grads[0][i] + 1e-2 * double(in.params[i]);
  expect_buffer_near(opt.state()[0].data, first_buf, "first momentum buffer");

  Sgd fresh(kN, c);
  const SgdRef ref = run_and_compare(fresh, SgdRef{0.9, 0.3, 1e-2, false, {}}, in, 0.1);
  expect_buffer_near(find_state(fresh.state(), "momentum_buffer").data, ref.buf, "momentum_buffer");
}

TEST(Sgd, Nesterov) {
  const Inputs in = random_inputs(14);
  SgdConfig c;
  c.momentum = 0.8;
  c.nesterov = true;
  c.weight_decay = 5e-4;
  Sgd opt(kN, c);
  const SgdRef ref = run_and_compare(opt, SgdRef{0.8, 0, 5e-4, true, {}}, in, 0.2);
  expect_buffer_near(find_state(opt.state(), "momentum_buffer").data, ref.buf, "momentum_buffer");

  // Nesterov really differs from classical momentum after the first step.
  c.nesterov = false;
  Sgd classic(kN, c);
  Sgd nesterov(kN, SgdConfig{0.8, 0.0, true, 5e-4});
  std::vector<float> p1 = in.params, p2 = in.params;
  for (int s = 0; s < 2; ++s) {
    classic.step(p1.data(), in.grads[s].data(), 0.2);
    nesterov.step(p2.data(), in.grads[s].data(), 0.2);
  }
  EXPECT_GT(std::abs(p1[0] - p2[0]), 1e-3);
}

TEST(Sgd, RejectsBadConfigs) {
  EXPECT_THROW(Sgd(4, SgdConfig{0.0, 0.0, true, 0.0}), UserError);  // Nesterov without momentum
  EXPECT_THROW(Sgd(4, SgdConfig{0.9, 0.1, true, 0.0}), UserError);  // Nesterov with dampening
  EXPECT_THROW(Sgd(4, SgdConfig{0.9, 1.5, false, 0.0}), UserError);
  EXPECT_THROW(Sgd(4, SgdConfig{0.9, 0.0, false, -1.0}), UserError);
  try {
    Sgd(4, SgdConfig{-0.5, 0.0, false, 0.0});
    FAIL() << "negative momentum accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "SGD momentum must be >= 0, got -0.5.");
  }
}

// ---- Adadelta ----

TEST(Adadelta, DefaultsMatchReference) {
  const Inputs in = random_inputs(21);
  Adadelta opt(kN, AdadeltaConfig{});
  const AdadeltaRef ref = run_and_compare(opt, AdadeltaRef{0.9, 1e-6, 0.0, {}, {}}, in, 1.0);
  expect_buffer_near(find_state(opt.state(), "square_avg").data, ref.v, "square_avg");
  expect_buffer_near(find_state(opt.state(), "acc_delta").data, ref.u, "acc_delta");
}

TEST(Adadelta, WeightDecayRhoEps) {
  const Inputs in = random_inputs(22);
  Adadelta opt(kN, AdadeltaConfig{0.7, 1e-3, 0.1});
  const AdadeltaRef ref = run_and_compare(opt, AdadeltaRef{0.7, 1e-3, 0.1, {}, {}}, in, 0.5);
  expect_buffer_near(find_state(opt.state(), "acc_delta").data, ref.u, "acc_delta");
}

TEST(Adadelta, RejectsBadConfigs) {
  EXPECT_THROW(Adadelta(4, AdadeltaConfig{1.5, 1e-6, 0.0}), UserError);
  EXPECT_THROW(Adadelta(4, AdadeltaConfig{0.9, -1.0, 0.0}), UserError);
  EXPECT_THROW(Adadelta(4, AdadeltaConfig{0.9, 1e-6, -0.1}), UserError);
}

// ---- Adam / AdamW ----

TEST(Adam, FirstStepMovesBySignOfGradient) {
  // m_hat = g and v_hat = g^2 on step 1, so p1 = p0 - lr * g / (|g| + eps).
  const Inputs in = random_inputs(30);
  Adam opt(kN, AdamConfig{});
  std::vector<float> p = in.params;
  opt.step(p.data(), in.grads[0].data(), 1e-3);
  for (int64_t i = 0; i < kN; ++i) {
    const double g = in.grads[0][i];
    EXPECT_NEAR(p[i], in.params[i] - 1e-3 * g / (std::abs(g) + 1e-8), 1e-7) << i;
  }
}

TEST(Adam, DefaultsMatchReference) {
  const Inputs in = random_inputs(31);
  Adam opt(kN, AdamConfig{});
  EXPECT_STREQ(opt.name(), "adam");
  const AdamRef ref = run_and_compare(opt, AdamRef{0.9, 0.999, 1e-8, 0.0, false, false, {}, {}, {}}, in, 1e-2);
  expect_buffer_near(find_state(opt.state(), "exp_avg").data, ref.m, "exp_avg");
  expect_buffer_near(find_state(opt.state(), "exp_avg_sq").data, ref.v, "exp_avg_sq");
}

TEST(Adam, L2WeightDecayAndOtherBetas) {
  const Inputs in = random_inputs(32);
  AdamConfig c;
  c.beta1 = 0.8;
  c.beta2 = 0.99;
  c.eps = 1e-3;
  c.weight_decay = 0.1;
  Adam opt(kN, c);
  run_and_compare(opt, AdamRef{0.8, 0.99, 1e-3, 0.1, false, false, {}, {}, {}}, in, 5e-2);
}

TEST(Adam, AmsgradKeepsTheMaximumSecondMoment) {
  // Later gradients 10x smaller and beta2 0.5, so the second moment falls and the maximum matters.
  const Inputs in = random_inputs(33, 0.1);
  AdamConfig c;
  c.beta2 = 0.5;
  c.amsgrad = true;
  Adam opt(kN, c);
  const AdamRef ref = run_and_compare(opt, AdamRef{0.9, 0.5, 1e-8, 0.0, false, true, {}, {}, {}}, in, 1e-2);
  const NamedState& v_max = find_state(opt.state(), "max_exp_avg_sq");
  const NamedState& v = find_state(opt.state(), "exp_avg_sq");
  expect_buffer_near(v_max.data, ref.v_max, "max_exp_avg_sq");
  EXPECT_GT(v_max.data[0], 2 * v.data[0]);  // the test does exercise the maximum
}

TEST(AdamW, DecoupledWeightDecayMatchesReference) {
  const Inputs in = random_inputs(34);
  AdamConfig c = adamw_config();
  c.weight_decay = 0.2;
  Adam opt(kN, c);
  EXPECT_STREQ(opt.name(), "adamw");
  run_and_compare(opt, AdamRef{0.9, 0.999, 1e-8, 0.2, true, false, {}, {}, {}}, in, 5e-2);
}

TEST(AdamW, DiffersFromAdamWithL2) {
  // Same weight decay, two meanings: Adam normalises the decay term away, AdamW does not.
  const Inputs in = random_inputs(35);
  AdamConfig l2;
  l2.weight_decay = 0.2;
  AdamConfig decoupled = l2;
  decoupled.decoupled_weight_decay = true;
  Adam adam(kN, l2), adamw(kN, decoupled);
  std::vector<float> pa = in.params, pw = in.params;
  for (int s = 0; s < kSteps; ++s) {
    adam.step(pa.data(), in.grads[s].data(), 5e-2);
    adamw.step(pw.data(), in.grads[s].data(), 5e-2);
  }
  double max_diff = 0;
  for (int64_t i = 0; i < kN; ++i) max_diff = std::max(max_diff, std::abs(double(pa[i]) - pw[i]));
  EXPECT_GT(max_diff, 1e-3);
}

TEST(Adam, RejectsBadConfigs) {
  AdamConfig c;
  c.beta1 = 1.0;
  EXPECT_THROW(Adam(4, c), UserError);
  c = AdamConfig{};
  c.beta2 = -0.1;
  EXPECT_THROW(Adam(4, c), UserError);
  c = adamw_config();
  c.eps = -1e-8;
  try {
    Adam(4, c);
    FAIL() << "negative eps accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "AdamW eps must be >= 0, got -1e-08.");
  }
}

// ---- State, step counter, checkpoints ----

std::vector<std::string> state_names(Optimizer& opt) {
  std::vector<std::string> names;
  for (const NamedState& s : opt.state()) {
    names.push_back(s.name);
    EXPECT_EQ(s.count, opt.size()) << s.name;
    EXPECT_NE(s.data, nullptr) << s.name;
  }
  return names;
}

TEST(OptimizerState, Names) {
  using Names = std::vector<std::string>;
  Sgd plain(kN, SgdConfig{});
  EXPECT_EQ(state_names(plain), Names{});
  Sgd momentum(kN, SgdConfig{0.9, 0.0, false, 0.0});
  EXPECT_EQ(state_names(momentum), Names{"momentum_buffer"});
  Adadelta adadelta(kN, AdadeltaConfig{});
  EXPECT_EQ(state_names(adadelta), (Names{"square_avg", "acc_delta"}));
  Adam adam(kN, AdamConfig{});
  EXPECT_EQ(state_names(adam), (Names{"exp_avg", "exp_avg_sq"}));
  AdamConfig ams = adamw_config();
  ams.amsgrad = true;
  Adam amsgrad(kN, ams);
  EXPECT_EQ(state_names(amsgrad), (Names{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
}

// Two steps on one optimizer, its state copied into a fresh one, then one more step on each:
// the results are bitwise equal, so state() plus the step counter is all a checkpoint needs.
void expect_checkpoint_round_trip(const std::string& name, const OptimizerOptions& options) {
  SCOPED_TRACE(name);
  const Inputs in = random_inputs(40);
  auto original = make_optimizer(name, options, kN);
  std::vector<float> p = in.params;
  original->step(p.data(), in.grads[0].data(), 0.05);
  original->step(p.data(), in.grads[1].data(), 0.05);

  auto restored = make_optimizer(name, options, kN);
  std::vector<NamedState> from = original->state(), to = restored->state();
  ASSERT_EQ(from.size(), to.size());
  for (size_t k = 0; k < from.size(); ++k) std::copy_n(from[k].data, from[k].count, to[k].data);
  restored->set_step_count(original->step_count());

  std::vector<float> q = p;
  original->step(p.data(), in.grads[2].data(), 0.05);
  restored->step(q.data(), in.grads[2].data(), 0.05);
  for (int64_t i = 0; i < kN; ++i) EXPECT_EQ(p[i], q[i]) << i;
}

TEST(OptimizerState, CheckpointRoundTrip) {
  OptimizerOptions momentum;
  momentum.momentum = 0.9;
  momentum.dampening = 0.1;
  expect_checkpoint_round_trip("sgd", momentum);
  expect_checkpoint_round_trip("adadelta", OptimizerOptions{});
  expect_checkpoint_round_trip("adam", OptimizerOptions{});
  OptimizerOptions ams;
  ams.amsgrad = true;
  expect_checkpoint_round_trip("adamw", ams);
}

TEST(OptimizerState, StepCounterAndLearningRateChecks) {
  Adam opt(kN, AdamConfig{});
  EXPECT_EQ(opt.step_count(), 0);
  opt.set_step_count(7);
  EXPECT_EQ(opt.step_count(), 7);
  EXPECT_THROW(opt.set_step_count(-1), std::invalid_argument);
  std::vector<float> p(kN, 0.5f), g(kN, 0.25f);
  EXPECT_THROW(opt.step(p.data(), g.data(), -0.1), std::invalid_argument);
  EXPECT_THROW(opt.step(p.data(), g.data(), std::nan("")), std::invalid_argument);
  EXPECT_EQ(opt.step_count(), 7);
  EXPECT_THROW(Sgd(-1, SgdConfig{}), std::invalid_argument);
}

// ---- Factory ----

TEST(OptimizerFactory, BuildsEachByName) {
  for (const std::string& name : optimizer_names()) {
    auto opt = make_optimizer(name, OptimizerOptions{}, kN);
    EXPECT_EQ(opt->name(), name);
    EXPECT_EQ(opt->size(), kN);
  }
  EXPECT_STREQ(make_optimizer("AdamW", OptimizerOptions{}, kN)->name(), "adamw");
}

TEST(OptimizerFactory, TorchDefaults) {
  auto adamw = make_optimizer("adamw", OptimizerOptions{}, kN);
  EXPECT_EQ(dynamic_cast<Adam&>(*adamw).config().weight_decay, 1e-2);
  EXPECT_TRUE(dynamic_cast<Adam&>(*adamw).config().decoupled_weight_decay);
  auto adam = make_optimizer("adam", OptimizerOptions{}, kN);
  EXPECT_EQ(dynamic_cast<Adam&>(*adam).config().weight_decay, 0.0);
  EXPECT_EQ(dynamic_cast<Adam&>(*adam).config().eps, 1e-8);
  auto adadelta = make_optimizer("adadelta", OptimizerOptions{}, kN);
  EXPECT_EQ(dynamic_cast<Adadelta&>(*adadelta).config().eps, 1e-6);
  EXPECT_EQ(dynamic_cast<Adadelta&>(*adadelta).config().rho, 0.9);
  EXPECT_EQ(default_learning_rate("adadelta"), 1.0);
  EXPECT_EQ(default_learning_rate("adam"), 1e-3);
  EXPECT_EQ(default_learning_rate("sgd"), 1e-3);

  OptimizerOptions o;
  o.weight_decay = 0.0;
  o.eps = 1e-4;
  auto custom = make_optimizer("adamw", o, kN);
  EXPECT_EQ(dynamic_cast<Adam&>(*custom).config().weight_decay, 0.0);
  EXPECT_EQ(dynamic_cast<Adam&>(*custom).config().eps, 1e-4);
}

TEST(OptimizerFactory, UnknownNameListsValidOnes) {
  try {
    make_optimizer("rmsprop", OptimizerOptions{}, kN);
    FAIL() << "unknown optimizer accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "Unknown optimizer 'rmsprop'; valid optimizers are sgd, adadelta, adam, adamw.");
  }
  EXPECT_THROW(default_learning_rate("lamb"), UserError);
}

TEST(OptimizerFactory, PassesOptionsThroughToValidation) {
  OptimizerOptions o;
  o.nesterov = true;  // without momentum
  EXPECT_THROW(make_optimizer("sgd", o, kN), UserError);
  o = OptimizerOptions{};
  o.beta1 = 1.0;
  EXPECT_THROW(make_optimizer("adam", o, kN), UserError);
}

}  // namespace
}  // namespace sb

// Every optimizer takes the same first steps on both engines: from one TrainConfig (options left at
// their defaults where torch has per-optimizer ones, AdamW's name in mixed case), each of the CUDA
// engine's first kSteps updates equals the CPU engine's optimizer applied to the same state and the same
// gradient, element by element, within the fp32 rounding of the update's own terms.
//
// Why the same gradient: the engines' fp32 gradients differ by rounding, and the normalised updates of
// Adadelta and Adam magnify that where a gradient is near 0; holding the GPU to the CPU's gradient would
// test the backward pass again (test_gpu_model_steps does) and blur what is tested here: the optimizer
// each engine builds from the configuration. So a probe engine (plain SGD at learning rate 2^40, the same
// model, weights and batch) reads the GPU's gradient off its step: θ1 = θ0 − 2^40 g, rounded once, so
// g = (θ0 − θ1) / 2^40 within ulp(θ1) / 2^41 (the probe's resolution, carried into the tolerance).
// Runs on every rank of an mpiexec job, each on its own GPU; skips without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "gtest_param_name.h"
#include "train/engines/cpu_engine.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/run_setup.h"

namespace sb {
namespace {

constexpr int kSteps = 3;
constexpr int kBatch = 8;
constexpr double kProbeLr = 0x1p40;
constexpr double kUnit = 0x1p-24;  // fp32 unit roundoff
// Each engine evaluates an update in at most 8 fp32 operations (decay, moment or buffer, denominator,
// step, subtraction), each rounding a quantity bounded by |θ| + the update's terms; the two engines'
// roundings add, so 16 of them bound the difference.
constexpr double kRoundings = 16;

struct OptimizerCase {
  const char* name;  // as given to --optimizer
  double lr;
  double momentum;
};

const OptimizerCase kCases[] = {{"sgd", 0.05, 0.9}, {"adadelta", 1.0, 0.0}, {"adam", 1e-2, 0.0}, {"AdamW", 1e-2, 0.0}};

double ulp(float x) { return std::nextafter(std::fabs(x), std::numeric_limits<float>::infinity()) - std::fabs(x); }

const std::vector<float>* state_named(const EngineState& s, const char* name) {
  for (const auto& [n, values] : s.optimizer_state)
    if (n == name) return &values;
  return nullptr;
}

// How far element i of the two engines' updates may differ: kRoundings roundings of |θ| plus the
// magnitude of the update's terms (before any cancellation), plus the update's sensitivity to its
// gradient times the gradient's uncertainty e (the probe's resolution and the rounding to fp32).
// `before` is the state the step starts from, t the step's 1-based number. The formulas are those of
// docs/optimizers.md, written out here in double.
struct Allowance {
  const OptimizerSpec& spec;
  const EngineState& before;
  double lr;

  double operator()(size_t i, double g, double e) const {
    const double theta = std::fabs(before.params[i]);
    const double t = static_cast<double>(before.optimizer_steps + 1);
    const double ag = std::fabs(g);
    double terms = 0, sensitivity = 0;
    switch (spec.kind) {
      case OptimizerKind::Sgd: {
        const double d = ag + spec.weight_decay * theta;
        const std::vector<float>* b = state_named(before, "momentum_buffer");
        const double buf = t == 1 || !b ? d : spec.momentum * std::fabs((*b)[i]) + (1 - spec.dampening) * d;
        terms = lr * (spec.nesterov ? d + spec.momentum * buf : buf);
        sensitivity = lr * (1 + spec.momentum);
        break;
      }
      case OptimizerKind::Adadelta: {
        const double sq = (*state_named(before, "square_avg"))[i], acc = (*state_named(before, "acc_delta"))[i];
        const double gd = ag + spec.weight_decay * theta;
        const double sq_new = spec.rho * sq + (1 - spec.rho) * gd * gd;
        terms = lr * std::sqrt(acc + spec.eps) / std::sqrt(sq_new + spec.eps) * gd;
        // |dΔ/dg| = sqrt(u + ε) (ρv + ε) / (ρv + (1 − ρ)g² + ε)^(3/2), at most its value at g = 0.
        sensitivity = lr * std::sqrt(acc + spec.eps) / std::sqrt(spec.rho * sq + spec.eps);
        break;
      }
      case OptimizerKind::Adam:
      case OptimizerKind::AdamW: {
        const double m = std::fabs((*state_named(before, "exp_avg"))[i]), v = (*state_named(before, "exp_avg_sq"))[i];
        const double b1 = spec.beta1, b2 = spec.beta2;
        const double step_size = lr / (1 - std::pow(b1, t)), bc2 = std::sqrt(1 - std::pow(b2, t));
        const double gd = ag + (spec.kind == OptimizerKind::Adam ? spec.weight_decay * theta : 0.0);
        const double m_terms = b1 * m + (1 - b1) * gd;
        const double denom = std::sqrt(b2 * v + (1 - b2) * gd * gd) / bc2 + spec.eps;
        terms = step_size * m_terms / denom;
        // d(update)/dg = step_size ((1 − β1)/D − m' (1 − β2) g / (bc2 sqrt(v') D²)), where |g| sqrt(1 − β2)
        // <= sqrt(v'); bounded over [g − e, g + e] by the smallest D and the largest |m'| there.
        const double g_low = std::max(0.0, gd - e);
        const double denom_low = std::sqrt(b2 * v + (1 - b2) * g_low * g_low) / bc2 + spec.eps;
        const double m_high = m_terms + (1 - b1) * e;
        sensitivity = step_size * ((1 - b1) / denom_low + m_high * std::sqrt(1 - b2) / (bc2 * denom_low * denom_low));
        break;
      }
    }
    return kRoundings * kUnit * (theta + terms) + sensitivity * e;
  }
};

class GpuOptimizerSteps : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(GpuOptimizerSteps, EachStepEqualsTheCpuOptimizerOnTheSameGradient) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) == 0) GTEST_SKIP() << "no CUDA device";
  auto alone = world->split(world->rank(), 0);
  const OptimizerCase c = GetParam();
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 64, 16, 5);

  TrainConfig config;
  config.model = "mlp";
  config.dropout = false;
  config.batch_size = kBatch;
  config.eval_batch_size = 16;
  config.seed = 9;
  config.optimizer = parse_optimizer_kind(c.name);
  config.lr = c.lr;
  config.momentum = c.momentum;
  config.validate();
  CpuEngine cpu(config, data.train, data.test, *alone);  // the CPU engine's own optimizer is the reference

  config.device = Device::Cuda;
  config.precision = Precision::FP32;  // no TF32
  config.deterministic = true;
  TrainConfig probe_config = config;
  probe_config.optimizer = OptimizerKind::Sgd;
  probe_config.momentum = 0.0;
  probe_config.weight_decay = 0.0;
  auto gpu = make_cuda_engine(config, data.train, data.test, *alone, world->rank(), world->size());
  auto probe = make_cuda_engine(probe_config, data.train, data.test, *alone, world->rank(), world->size());

  const OptimizerSpec spec = optimizer_spec_for(config);
  DistributedSampler sampler(data.train.size(), 1, 0, true, config.seed, false);
  const auto batches = split_batches(sampler.indices(0), kBatch, false);
  uint64_t position = 0;
  for (int k = 0; k < kSteps; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const auto& batch = batches[static_cast<size_t>(k)];
    const EngineState before = gpu->run_state().save();
    const size_t n = before.params.size();

    // The GPU's gradient at these weights, read off one probe step.
    EngineState probe_start;
    probe_start.params = before.params;
    probe_start.buffers = before.buffers;
    probe->run_state().load(probe_start);
    probe->train_step(batch, StepInfo{0, k, position, kProbeLr});
    probe->synchronize();
    const std::vector<float> probed = probe->run_state().save().params;
    std::vector<float> gradient(n);
    std::vector<double> uncertainty(n);
    for (size_t i = 0; i < n; ++i) {
      const double g = (static_cast<double>(before.params[i]) - probed[i]) / kProbeLr;
      gradient[i] = static_cast<float>(g);
      uncertainty[i] = ulp(probed[i]) / (2 * kProbeLr) + std::fabs(gradient[i] - g);
    }

    gpu->train_step(batch, StepInfo{0, k, position, config.lr});
    gpu->synchronize();
    const EngineState after = gpu->run_state().save();
    position += batch.size();

    cpu.run_state().load(before);  // also checks that the GPU keeps the CPU optimizer's state buffers
    cpu.optimizer().step(cpu.network().params().data(), gradient.data(), config.lr);
    const std::vector<float>& want = cpu.network().params();
    EXPECT_EQ(after.optimizer_steps, before.optimizer_steps + 1);

    const Allowance allowed{spec, before, config.lr};
    int outside = 0;
    double largest_update = 0;
    for (size_t i = 0; i < n; ++i) {
      largest_update = std::max(largest_update, std::fabs(static_cast<double>(want[i]) - before.params[i]));
      const double diff = std::fabs(static_cast<double>(after.params[i]) - want[i]);
      const double bound = allowed(i, gradient[i], uncertainty[i]);
      if (!(diff <= bound) && ++outside <= 5) {
        ADD_FAILURE() << c.name << " element " << i << ": GPU " << after.params[i] << ", CPU " << want[i] << " (from "
                      << before.params[i] << ", gradient " << gradient[i] << "), differ by " << diff << ", allowed " << bound;
      }
    }
    EXPECT_EQ(outside, 0) << c.name << ": elements outside the rounding bound";
    EXPECT_GT(largest_update, 0.0) << c.name << ": the step must move the parameters";
    std::printf("[rank %d] %s step %d: largest update %.3g, %d elements outside the bound\n", world->rank(), c.name, k,
                largest_update, outside);
  }
}

std::string case_name(const ::testing::TestParamInfo<OptimizerCase>& info) {
  return testing::gtest_param_name(info.param.name);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, GpuOptimizerSteps, ::testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace sb

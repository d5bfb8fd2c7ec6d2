// At the GPU whole-model step test's settings, the CPU's fp32 training of the BN models stays within 1e-6
// of the same training in double: the settings train stably (no chaotic growth of rounding), and no CPU
// layer loses precision in fp32 (say, a one-pass variance). The CPU network runs both, from the same
// weights and batches, with SGD and momentum written out here.
#include <gtest/gtest.h>

#include <cmath>

#include "data/batch.h"
#include "data/sampler.h"
#include "gtest_param_name.h"
#include "model_step_settings.h"
#include "models/registry.h"
#include "nn/cpu/loss.h"
#include "nn/cpu/network.h"
#include "relative_l2.h"
#include "train/run_setup.h"

namespace sb {
namespace {

template <typename T>
class SgdRun {
 public:
  SgdRun(const LayerSpec& spec, bool log_probabilities)
      : net_(spec, testing::kModelStepSeed), velocity_(net_.params().size(), T(0)), log_probabilities_(log_probabilities) {}

  cpu::Network<T>& net() { return net_; }

  double step(const Tensor<float>& images, const std::vector<int32_t>& labels, double lr, double momentum) {
    Tensor<T> x(images.shape());
    for (int64_t i = 0; i < images.numel(); ++i) x.data()[i] = static_cast<T>(images.data()[i]);
    Tensor<T> grad;
    const Tensor<T>& out = net_.forward(x, cpu::Mode::Train);
    const double loss = log_probabilities_ ? cpu::nll_loss(out, labels.data(), grad)
                                           : cpu::cross_entropy_loss(out, labels.data(), grad);
    net_.backward(grad);
    auto& params = net_.params();
    const auto& grads = net_.grads();
    for (size_t i = 0; i < params.size(); ++i) {
      velocity_[i] = static_cast<T>(momentum) * velocity_[i] + grads[i];
      params[i] -= static_cast<T>(lr) * velocity_[i];
    }
    return loss;
  }

 private:
  cpu::Network<T> net_;
  std::vector<T> velocity_;
  bool log_probabilities_;
};

class Fp32Conditioning : public ::testing::TestWithParam<testing::ModelStepCase> {};

TEST_P(Fp32Conditioning, BatchNormModelsTrainedInFp32StayWithinOneMillionthOfDouble) {
  const testing::ModelStepCase c = GetParam();
  const TrainTest data = make_synthetic(c.shape, 64, 16, 11);
  TrainConfig config;
  config.model = c.model;
  config.dropout = false;  // as in the GPU test
  const LayerSpec spec = model_spec_for(config, data.train);
  const bool log_probabilities = model_info(c.model).outputs_log_probabilities;
  SgdRun<float> single(spec, log_probabilities);
  SgdRun<double> twin(spec, log_probabilities);
  twin.net().params().assign(single.net().params().begin(), single.net().params().end());
  twin.net().buffers().assign(single.net().buffers().begin(), single.net().buffers().end());
  DistributedSampler sampler(data.train.size(), 1, 0, true, testing::kModelStepSeed, false);
  const auto batches = split_batches(sampler.indices(0), testing::kModelStepBatch, false);
  Tensor<float> images;
  std::vector<int32_t> labels;
  for (int k = 0; k < testing::kModelSteps; ++k) {
    assemble_batch(data.train, batches[static_cast<size_t>(k)], images, labels);
    const double got = single.step(images, labels, c.lr, testing::kModelStepMomentum);
    const double want = twin.step(images, labels, c.lr, testing::kModelStepMomentum);
    // The kernels' summation order is a small part of these differences, which are mostly fp32 rounding
    // of the values themselves: under the OpenBLAS core types Haswell, Zen, SkylakeX and Sandybridge the
    // loss's is 2.7e-7 to 3.0e-7, the parameters' and statistics' 4.9e-8 to 5.5e-8.
    EXPECT_NEAR(got, want, 1e-6 * std::fabs(want)) << c.model << " loss at step " << k;
  }
  EXPECT_LT(testing::relative_l2(single.net().params(), twin.net().params()), 1e-6) << c.model << " parameters";
  EXPECT_LT(testing::relative_l2(single.net().buffers(), twin.net().buffers()), 1e-6) << c.model << " running statistics";
}

INSTANTIATE_TEST_SUITE_P(Models, Fp32Conditioning, ::testing::ValuesIn(testing::kBatchNormModelCases),
                         [](const auto& info) { return testing::gtest_param_name(info.param.model); });

}  // namespace
}  // namespace sb

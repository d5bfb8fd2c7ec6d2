// Loss kernels against the CPU reference (src/nn/cpu/loss.*, the LogSoftmax layer): batch mean loss,
// gradient (with grad and loss scales), correct-prediction counts (ties included) and the device counters.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/loss.h"
#include "nn/cpu/activations.h"
#include "nn/cpu/loss.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct Case {
  int64_t n, c;
};
// Each width of row a lane holds in registers (up to 32, 128, 256, 512 and 1,024 classes) and the rows read
// again beyond them; 256 x 1000 is an ImageNet step's.
const Case kCases[] = {{64, 10}, {256, 100}, {5, 1000}, {1, 3}, {1500, 37}, {7, 200}, {3, 500}, {256, 1000}, {2, 1500}};

// Random logits with some exact ties (integers), so that the arg-max tie rule is exercised.
std::vector<float> logits_for(const Case& k, std::mt19937_64& rng, bool ties) {
  std::vector<float> x = random_values(static_cast<size_t>(k.n * k.c), rng, 0.1f, 6.0f);
  if (ties)
    for (float& v : x) v = std::round(v);
  return x;
}
std::vector<int32_t> labels_for(const Case& k, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(k.c - 1));
  std::vector<int32_t> l(static_cast<size_t>(k.n));
  for (int32_t& v : l) v = pick(rng);
  return l;
}

TEST(KernelsLoss, SoftmaxCrossEntropyMatchesCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(21);
  for (const Case& k : kCases)
    for (DType t : {DType::F32, DType::BF16, DType::F16})
      for (bool ties : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(k.n) + "x" + std::to_string(k.c) +
                     (ties ? " ties" : ""));
        std::vector<float> x = logits_for(k, rng, ties);
        quantize(x, t);
        const std::vector<int32_t> labels = labels_for(k, rng);
        Tensor<float> xt(Shape{k.n, k.c}), grad;
        std::copy(x.begin(), x.end(), xt.data());
        const float loss_ref = cpu::cross_entropy_loss(xt, labels.data(), grad);
        const int64_t correct_ref = cpu::count_correct(xt, labels.data());

        const float grad_scale = 2.0f, loss_scale = 8.0f;  // both powers of two: exact in every dtype
        DeviceMem dx = to_device(x, t), dl = to_device_raw(labels), dg(x.size() * dtype_size(t));
        DeviceMem dscale = to_device(std::vector<float>{loss_scale}, DType::F32), dloss(4);
        DeviceMem dcounters(sizeof(kernels::LossCounters));
        dg.poison();
        dloss.poison();
        cudaMemset(dcounters.get(), 0, sizeof(kernels::LossCounters));
        kernels::softmax_cross_entropy(dx.get(), dl.as<int32_t>(), dg.get(), k.n, k.c, t, grad_scale,
                                       dscale.as<float>(), dloss.as<float>(),
                                       dcounters.as<kernels::LossCounters>(), nullptr);
        // A second (evaluation) call without gradient adds to the counters.
        kernels::softmax_cross_entropy(dx.get(), dl.as<int32_t>(), nullptr, k.n, k.c, t, 1.0f, nullptr, nullptr,
                                       dcounters.as<kernels::LossCounters>(), nullptr);
        const float loss = download(dloss.get(), 1, DType::F32)[0];
        EXPECT_NEAR(loss, loss_ref, 1e-5 * std::max(1.0f, std::fabs(loss_ref)));
        std::vector<float> want = grad.storage();
        for (float& v : want) v *= grad_scale * loss_scale;
        // p - 1 at the label cancels: judge errors against the gradient's scale.
        const std::vector<float> got = download(dg.get(), x.size(), t);
        EXPECT_TRUE(all_close(got, want, t == DType::F32 ? 1e-5 : tolerance(t) / 2, max_abs(want)));
        EXPECT_LE(rel_l2(got, want), t == DType::F32 ? 1e-5 : tolerance(t) / 2);
        const auto counters = download_raw<kernels::LossCounters>(dcounters.get(), 1)[0];
        EXPECT_EQ(counters.correct, static_cast<unsigned long long>(2 * correct_ref));
        EXPECT_EQ(counters.samples, static_cast<unsigned long long>(2 * k.n));
        EXPECT_NEAR(counters.loss_sum, 2.0 * loss_ref * k.n, 1e-5 * std::max(1.0, std::fabs(2.0 * loss_ref * k.n)));
      }
}

TEST(KernelsLoss, LogSoftmaxAndNllMatchCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(22);
  for (const Case& k : kCases)
    for (DType t : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(k.n) + "x" + std::to_string(k.c));
      std::vector<float> x = logits_for(k, rng, false);
      quantize(x, t);
      const std::vector<int32_t> labels = labels_for(k, rng);
      const size_t size = x.size();
      // The CPU path of mnist-cnn: LogSoftmax layer, NLL on its output, LogSoftmax backward.
      cpu::LogSoftmax<float> layer(sb::log_softmax("logp"));
      Tensor<float> xt(Shape{k.n, k.c});
      std::copy(x.begin(), x.end(), xt.data());
      const Tensor<float> logp = layer.forward(xt, cpu::Mode::Train);

      DeviceMem dx = to_device(x, t), dy(size * dtype_size(t)), dl = to_device_raw(labels);
      DeviceMem dg(size * dtype_size(t)), dloss(4), dcounters(sizeof(kernels::LossCounters));
      dy.poison();
      dg.poison();
      cudaMemset(dcounters.get(), 0, sizeof(kernels::LossCounters));
      kernels::log_softmax_forward(dx.get(), dy.get(), k.n, k.c, t, nullptr);
      // y = x - shift cancels for the largest logit: errors against the tensor's scale.
      const std::vector<float> y_dev = download(dy.get(), size, t);
      EXPECT_TRUE(all_close(y_dev, logp.storage(), t == DType::F32 ? 1e-5 : tolerance(t) / 2, max_abs(logp.storage())));

      // NLL on the device's own log-probabilities, so that only the NLL kernel is compared.
      Tensor<float> yt(Shape{k.n, k.c}), dlogp;
      std::copy(y_dev.begin(), y_dev.end(), yt.data());
      const float nll_ref = cpu::nll_loss(yt, labels.data(), dlogp);
      const int64_t correct_ref = cpu::count_correct(yt, labels.data());
      kernels::nll_loss(dy.get(), dl.as<int32_t>(), dg.get(), k.n, k.c, t, 1.0f, nullptr, dloss.as<float>(),
                        dcounters.as<kernels::LossCounters>(), nullptr);
      EXPECT_NEAR(download(dloss.get(), 1, DType::F32)[0], nll_ref, 1e-5 * std::max(1.0f, std::fabs(nll_ref)));
      EXPECT_TRUE(all_close(download(dg.get(), size, t), dlogp.storage(), t == DType::F32 ? 0.0 : tolerance(t) / 4));
      EXPECT_EQ(download_raw<kernels::LossCounters>(dcounters.get(), 1)[0].correct,
                static_cast<unsigned long long>(correct_ref));

      // LogSoftmax backward on a random upstream gradient (reference in double).
      std::vector<float> g = random_values(size, rng);
      quantize(g, t);
      // Both sides use the same y (the device's stored logp), so only backward's arithmetic is compared.
      std::vector<float> want(size);
      for (int64_t r = 0; r < k.n; ++r) {
        double total = 0.0;
        for (int64_t j = 0; j < k.c; ++j) total += g[r * k.c + j];
        for (int64_t j = 0; j < k.c; ++j)
          want[r * k.c + j] = static_cast<float>(g[r * k.c + j] - std::exp(static_cast<double>(yt[r * k.c + j])) * total);
      }
      DeviceMem dgrad = to_device(g, t), ddx(size * dtype_size(t));
      ddx.poison();
      kernels::log_softmax_backward(dy.get(), dgrad.get(), ddx.get(), k.n, k.c, t, nullptr);
      // dy - softmax * sum(dy) cancels: the norm error within the dtype's tolerance, and element-wise
      // errors against the tensor's scale (a float sum over up to 1000 classes, hence 1e-4 there).
      const std::vector<float> got = download(ddx.get(), size, t);
      EXPECT_LE(rel_l2(got, want), t == DType::F32 ? 1e-5 : tolerance(t));
      EXPECT_TRUE(all_close(got, want, t == DType::F32 ? 1e-4 : tolerance(t), max_abs(want)));

      // The fused path gives the same mean loss as LogSoftmax + NLL.
      kernels::softmax_cross_entropy(dx.get(), dl.as<int32_t>(), nullptr, k.n, k.c, t, 1.0f, nullptr,
                                     dloss.as<float>(), nullptr, nullptr);
      EXPECT_NEAR(download(dloss.get(), 1, DType::F32)[0], nll_ref, tolerance(t) * std::max(1.0f, std::fabs(nll_ref)));
    }
}

}  // namespace

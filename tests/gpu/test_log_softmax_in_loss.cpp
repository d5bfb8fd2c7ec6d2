// mnist-cnn's trailing LogSoftmax left to the loss kernel (nn/fusion_plan.h, cuda::NetworkOutput): the
// network built for the loss returns logits and the loss computes softmax cross-entropy, which must give
// the CPU reference's NLL loss, correct predictions and parameter gradients, in every precision and
// layout; a network built for its output still returns log-probabilities.
#include "test_layers_support.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "models/mnist_cnn.h"
#include "nn/cpu/loss.h"
#include "nn/cpu/network.h"
#include "nn/cuda/network.h"
#include "train/engines/cuda/device_loss.h"

namespace sb::layertest {
namespace {

const ModelInput kModelInput{1, 12, 12, 10};
const Shape kInput{16, 1, 12, 12};
constexpr uint64_t kSeed = 31, kStreamKey = 5, kStep = 2;

LayerSpec model() { return mnist_cnn(kModelInput); }

// Room as in test_network_small, and ten times its fp32 room for cuDNN's choice of convolution
// algorithm (a wrong loss path is off by far more). In 16 bits the separate LogSoftmax rounds its output
// before the NLL and the fused loss does not, so the two differ by about that rounding.
double tolerance_for(const Precision& p) {
  if (p.dtype == DType::F32) return p.tf32 ? 3e-3 : 1e-4;
  return p.dtype == DType::BF16 ? 6e-2 : 2e-2;
}

struct GpuRun {
  double loss = 0;
  int64_t correct = 0;
  std::vector<float> output, grads;
  std::string report;
};

// One training forward, the loss and backward on a fresh network built for `output`.
GpuRun run_gpu(const cuda::ContextOptions& o, cuda::NetworkOutput output, const std::vector<float>& params,
               const std::vector<float>& x, const std::vector<int32_t>& labels) {
  cuda::Context ctx(o);
  cuda::Network net(model(), kSeed, ctx, output);
  net.set_params(params);
  net.set_random_stream(kStreamKey, kStep);
  DeviceMem d_x = gputest::to_device(to_device_order(x, kInput, o.layout), o.compute);
  DeviceMem d_labels = gputest::to_device_raw(labels);
  const cuda::DeviceTensor& y = net.forward({d_x.get(), TensorDesc{kInput, o.compute, o.layout}}, cuda::Mode::Train);
  GpuRun r;
  r.output = from_device(y);
  cuda::DeviceLoss loss(!net.log_softmax_in_loss());
  cuda::DeviceLossTotals totals;
  totals.zero(ctx.stream());
  const cuda::DeviceTensor& dy = loss.enqueue(y, d_labels.as<int32_t>(), kInput[0], totals, nullptr, true, ctx.stream());
  net.backward(dy);
  const EvalTotals t = totals.read(ctx.stream());
  r.loss = t.loss_sum / static_cast<double>(t.count);
  r.correct = t.correct;
  r.grads = net.get_grads();
  r.report = net.fusion_report();
  return r;
}

TEST(LogSoftmaxInLoss, FusedLossMatchesTheCpuNllOfLogSoftmax) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      const cuda::ContextOptions o = options_for(p, layout);
      cpu::Network<double> cpu(model(), kSeed);
      std::vector<float> params(cpu.params().begin(), cpu.params().end());
      gputest::quantize(params, p.dtype);
      cpu.params().assign(params.begin(), params.end());
      std::mt19937_64 rng(17);
      const std::vector<float> x = normal_values(static_cast<size_t>(kInput.numel()), rng, p.dtype);
      std::vector<int32_t> labels(static_cast<size_t>(kInput[0]));
      for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7 + 3) % 10);

      cpu.set_random_stream(kStreamKey, kStep);
      const Tensor<double> x_host = host_tensor(x, kInput);  // the CPU layers read their input again in backward
      const Tensor<double>& logp = cpu.forward(x_host, cuda::Mode::Train);
      Tensor<double> dlogp(logp.shape());
      const double want_loss = cpu::nll_loss(logp, labels.data(), dlogp);
      const int64_t want_correct = cpu::count_correct(logp, labels.data());
      const std::vector<double> logp_values = values(logp);
      cpu.backward(dlogp);

      const GpuRun fused = run_gpu(o, cuda::NetworkOutput::LogitsForLoss, params, x, labels);
      const GpuRun layered = run_gpu(o, cuda::NetworkOutput::AsSpecified, params, x, labels);
      const std::string name = label(p, layout, "mnist-cnn loss");
      const double tol = tolerance_for(p);
      const double loss_error = std::fabs(fused.loss - want_loss) / want_loss;
      const double grad_error = rel_error(fused.grads, cpu.grads());
      std::printf("[case] %-40s loss %.3g grads %.3g (separate layer: grads %.3g)\n", name.c_str(), loss_error, grad_error,
                  rel_error(layered.grads, cpu.grads()));
      std::fflush(stdout);
      EXPECT_LE(loss_error, tol) << name << ": " << fused.loss << " vs " << want_loss;
      // Against the CPU the whole network's gradients carry every layer's rounding: a ReLU or pool window
      // near a tie under TF32 or 16 bits moves a whole dy (measured on an H200: 0.8% tf32 NHWC, 8.4% bf16,
      // the separate LogSoftmax alike), so they get test_layers_small_net's room; the two loss paths must
      // agree with each other to the tight tolerance.
      EXPECT_LE(grad_error, p.dtype == DType::F32 && !p.tf32 ? tol : 0.1) << name;
      const std::vector<double> layered_grads(layered.grads.begin(), layered.grads.end());
      EXPECT_LE(rel_error(fused.grads, layered_grads), tol) << name << ": the fused loss against the separate LogSoftmax";
      EXPECT_LE(std::fabs(fused.loss - layered.loss) / want_loss, tol) << name;
      // Arg-max is the same on logits and log-probabilities; TF32's and 16-bit rounding may flip near ties.
      const int64_t flips = p.dtype != DType::F32 ? 2 : p.tf32 ? 1 : 0;
      EXPECT_LE(std::llabs(fused.correct - want_correct), flips) << name;
      EXPECT_NE(fused.report.find("log_softmax: softmax cross-entropy in the loss kernel"), std::string::npos) << fused.report;
      EXPECT_EQ(layered.report.find("loss kernel"), std::string::npos) << layered.report;

      // What each network returns: logits for the loss, log-probabilities for a reader of its output.
      ASSERT_EQ(fused.output.size(), layered.output.size());
      std::vector<float> log_softmax_of_logits(fused.output.size());
      for (int64_t n = 0; n < kInput[0]; ++n) {
        const float* z = fused.output.data() + n * 10;
        double m = z[0], sum = 0;
        for (int c = 1; c < 10; ++c) m = std::max(m, static_cast<double>(z[c]));
        for (int c = 0; c < 10; ++c) sum += std::exp(z[c] - m);
        for (int c = 0; c < 10; ++c) log_softmax_of_logits[static_cast<size_t>(n * 10 + c)] = static_cast<float>(z[c] - m - std::log(sum));
      }
      EXPECT_LE(gputest::rel_l2(layered.output, log_softmax_of_logits), tol) << name;
      EXPECT_LE(rel_error(layered.output, logp_values), tol) << name;
    }
}

}  // namespace
}  // namespace sb::layertest

// Parameter counts, output shapes and whole-model finite-difference gradient checks (double precision).
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "core/error.h"
#include "gradcheck.h"
#include "models/registry.h"
#include "models/wide_resnet.h"
#include "nn/cpu/loss.h"
#include "nn/cpu/network.h"

namespace sb {
namespace {

TEST(Models, MnistCnnHasThePyTorchParameterCount) {
  const LayerSpec spec = build_model("mnist-cnn", ModelInput{1, 28, 28, 10});
  EXPECT_EQ(count_elements(collect_params(spec)), 1199882);
  EXPECT_EQ(output_shape(spec, Shape{64, 1, 28, 28}), (Shape{64, 10}));
}

TEST(Models, MnistCnnParameterNamesFollowPyTorch) {
  const auto params = collect_params(build_model("mnist-cnn", ModelInput{1, 28, 28, 10}));
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                             "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(params[4].shape, (Shape{128, 9216}));
}

TEST(Models, WideResNetHasTheGuidesParameterCount) {
  const LayerSpec spec = build_model("wrn", ModelInput{3, 32, 32, 100});
  EXPECT_EQ(count_elements(collect_params(spec)), 17175444);
  EXPECT_EQ(output_shape(spec, Shape{8, 3, 32, 32}), (Shape{8, 100}));
  // BN running statistics: two per channel for each of the 13 BN layers.
  EXPECT_EQ(count_elements(collect_buffers(spec)), 2 * (16 + 4 * 160 + 4 * 320 + 4 * 640));
}

TEST(Models, WideResNetTakesFashionMnist) {
  const LayerSpec spec = build_model("wrn", ModelInput{1, 28, 28, 10});
  EXPECT_EQ(output_shape(spec, Shape{2, 1, 28, 28}), (Shape{2, 10}));
  EXPECT_EQ(count_elements(collect_params(spec)), 17175444 - 2 * 16 * 9 - 90 * 640 - 90);
}

TEST(Models, EveryCatalogModelBuildsForCifarShapes) {
  for (const auto& info : model_catalog()) {
    const LayerSpec spec = build_model(info.name, ModelInput{3, 32, 32, 10});
    EXPECT_EQ(output_shape(spec, Shape{4, 3, 32, 32}), (Shape{4, 10})) << info.name;
  }
  EXPECT_EQ(count_elements(collect_params(build_model("resnet18-cifar", ModelInput{3, 32, 32, 10}))), 11173962);
}

TEST(Models, UnknownModelNamesTheValidOnes) {
  try {
    build_model("alexnet", ModelInput{});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("alexnet"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("mnist-cnn"), std::string::npos);
    for (const auto& info : model_catalog()) EXPECT_NE(std::string(e.what()).find(info.name), std::string::npos) << info.name;
  }
}

TEST(Models, EachRowHasOneNameABuilderAndBuildsAtItsDocumentedInput) {
  std::set<std::string> names;
  for (const auto& info : model_catalog()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " twice";
    ASSERT_NE(info.build, nullptr) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_EQ(&model_info(info.name), &info);
    const ModelInput& in = info.home_input;
    const LayerSpec spec = build_model(info.name, in);
    EXPECT_EQ(output_shape(spec, Shape{2, in.channels, in.height, in.width}), (Shape{2, in.classes})) << info.name;
    EXPECT_EQ(spec.children.back().kind == LayerKind::LogSoftmax, info.outputs_log_probabilities) << info.name;
  }
  EXPECT_EQ(model_names(), "mnist-cnn, wrn, cifar-cnn, mlp, resnet18, resnet34, resnet50, resnet18-cifar");
}

TEST(Models, InitialisationIsSeededAndFollowsPyTorchBounds) {
  const LayerSpec spec = build_model("mnist-cnn", ModelInput{1, 28, 28, 10});
  cpu::Network<float> a(spec, 7), b(spec, 7), c(spec, 8);
  EXPECT_EQ(a.params(), b.params());
  EXPECT_NE(a.params(), c.params());
  for (const auto& p : a.param_specs()) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));  // kaiming_uniform(a=sqrt(5))
    double max_abs = 0;
    for (int64_t i = 0; i < p.shape.numel(); ++i) max_abs = std::max(max_abs, std::fabs(double(a.params()[p.offset + i])));
    EXPECT_LE(max_abs, bound) << p.name;
    if (p.shape.numel() >= 100) { EXPECT_GT(max_abs, 0.9 * bound) << p.name; }  // the range is actually used
  }
}

// dL/dparam for every tensor of a network with its real loss, against central differences.
void check_network_gradients(cpu::Network<double>& net, const Tensor<double>& x, const std::vector<int32_t>& labels,
                             bool log_probabilities, int checks_per_tensor, std::mt19937_64& rng) {
  net.set_random_stream(1234, 5);  // fixed dropout masks: the loss is a deterministic function
  Tensor<double> grad;
  auto loss = [&](bool with_backward) {
    const Tensor<double>& out = net.forward(x, cpu::Mode::Train);
    const double l = log_probabilities ? cpu::nll_loss(out, labels.data(), grad)
                                       : cpu::cross_entropy_loss(out, labels.data(), grad);
    if (with_backward) net.backward(grad);
    return l;
  };
  loss(true);
  const std::vector<double> analytic = net.grads();
  std::vector<double> buffers = net.buffers();  // BN running stats move on every forward; restore them
  // A ReLU or max-pool kink within h of the point spoils one step size (the difference quotient straddles
  // it), so each element passes when either of two step sizes agrees with the analytic gradient.
  auto numeric_at = [&](int64_t i, double h) {
    double& w = net.params()[i];
    const double saved = w;
    w = saved + h;
    const double up = loss(false);
    w = saved - h;
    const double down = loss(false);
    w = saved;
    net.buffers() = buffers;
    return (up - down) / (2 * h);
  };
  const double noise = testing::rounding_noise(
      [&] {
        const double l = loss(false);
        net.buffers() = buffers;
        return l;
      },
      net.params().data(), analytic.data(), static_cast<int64_t>(analytic.size()));
  for (const auto& p : net.param_specs()) {
    std::uniform_int_distribution<int64_t> pick(0, p.shape.numel() - 1);
    for (int k = 0; k < checks_per_tensor; ++k) {
      const int64_t i = p.offset + pick(rng);
      const double coarse = numeric_at(i, 1e-6);
      const bool agrees = testing::gradient_agrees(analytic[i], coarse, 1e-5, noise, 1e-6) ||
                          testing::gradient_agrees(analytic[i], numeric_at(i, 1e-7), 1e-5, noise, 1e-7);
      EXPECT_TRUE(agrees) << p.name << "[" << i - p.offset << "] analytic " << analytic[i] << " numeric " << coarse
                          << " (loss rounding noise " << noise << ")";
    }
  }
}

TEST(Models, MnistCnnGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(11);
  cpu::Network<double> net(build_model("mnist-cnn", ModelInput{1, 28, 28, 10}), 3);
  const Tensor<double> x = testing::random_tensor(Shape{2, 1, 28, 28}, rng);
  check_network_gradients(net, x, {3, 8}, true, 6, rng);
}

TEST(Models, TinyWideResNetGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(12);
  WideResNetWidths widths;
  widths.channels = {3, 4, 5, 6};
  cpu::Network<double> net(wide_resnet(ModelInput{2, 8, 8, 5}, widths, 0.01), 4);
  const Tensor<double> x = testing::random_tensor(Shape{3, 2, 8, 8}, rng);
  check_network_gradients(net, x, {0, 4, 2}, false, 4, rng);
}

TEST(Models, TinyResNet18ShapeGradientsMatchFiniteDifferences) {
  // resnet18-cifar exercises stride-2 convolutions and BN projection shortcuts with a ReLU after the add.
  std::mt19937_64 rng(13);
  cpu::Network<double> net(build_model("resnet18-cifar", ModelInput{1, 8, 8, 3}), 5);
  const Tensor<double> x = testing::random_tensor(Shape{2, 1, 8, 8}, rng);
  check_network_gradients(net, x, {1, 2}, false, 1, rng);
}

}  // namespace
}  // namespace sb

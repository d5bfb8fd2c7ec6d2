// torchvision's ResNet-18/34/50 (src/models/resnet.h): parameter counts, output shapes, torchvision's
// initialisation, --zero-init-residual, and a small CPU training check.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "models/registry.h"
#include "nn/cpu/loss.h"
#include "nn/cpu/network.h"
#include "train/run_setup.h"
#include "user_error_text.h"

namespace sb {
namespace {

const ModelInput kImageNet{3, 224, 224, 1000};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(ResNetModels, ParameterCountsAreTorchvisions) {
  EXPECT_EQ(count_elements(collect_params(build_model("resnet18", kImageNet))), 11689512);
  EXPECT_EQ(count_elements(collect_params(build_model("resnet34", kImageNet))), 21797672);
  EXPECT_EQ(count_elements(collect_params(build_model("resnet50", kImageNet))), 25557032);
}

TEST(ResNetModels, TheRegistryDocumentsThemOnImageNetShapes) {
  for (const char* name : {"resnet18", "resnet34", "resnet50"}) {
    const ModelInput& in = model_info(name).home_input;
    EXPECT_EQ((std::vector<int64_t>{in.channels, in.height, in.width, in.classes}), (std::vector<int64_t>{3, 224, 224, 1000}))
        << name;
  }
}

TEST(ResNetModels, OutputShapesAt224AndAtSmallInputs) {
  for (const char* name : {"resnet18", "resnet34", "resnet50"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(output_shape(build_model(name, kImageNet), Shape{2, 3, 224, 224}), (Shape{2, 1000}));
    EXPECT_EQ(output_shape(build_model(name, ModelInput{3, 64, 64, 10}), Shape{2, 3, 64, 64}), (Shape{2, 10}));
  }
}

TEST(ResNetModels, TheStemIsASevenBySevenStrideTwoConvThenAPaddedMaxPool) {
  const LayerSpec spec = build_model("resnet18", kImageNet);
  const LayerSpec& conv = spec.children.at(0);
  EXPECT_EQ(conv.kind, LayerKind::Conv2d);
  EXPECT_EQ((std::vector<int64_t>{conv.kernel, conv.stride, conv.pad}), (std::vector<int64_t>{7, 2, 3}));
  EXPECT_FALSE(conv.bias);
  const LayerSpec& pool = spec.children.at(3);
  EXPECT_EQ(pool.kind, LayerKind::MaxPool2d);
  EXPECT_EQ((std::vector<int64_t>{pool.kernel, pool.stride, pool.pad}), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(output_shape(sequential("stem", {spec.children.begin(), spec.children.begin() + 4}), Shape{1, 3, 224, 224}),
            (Shape{1, 64, 56, 56}));
}

// The PyTorch twin is torchvision's module itself: its state_dict names must be scalebench's.
TEST(ResNetModels, ParameterNamesAreTorchvisions) {
  std::set<std::string> names;
  for (const ParamSpec& p : collect_params(build_model("resnet50", kImageNet))) names.insert(p.name);
  for (const ParamSpec& p : collect_buffers(build_model("resnet50", kImageNet))) names.insert(p.name);
  for (const char* name : {"conv1.weight", "bn1.weight", "bn1.running_var", "layer1.0.conv3.weight", "layer1.0.bn3.bias",
                           "layer1.0.downsample.0.weight", "layer1.0.downsample.1.running_mean", "layer2.0.conv2.weight",
                           "layer4.2.bn3.weight", "fc.weight", "fc.bias"})
    EXPECT_TRUE(names.count(name)) << name;
  EXPECT_FALSE(names.count("layer1.1.downsample.0.weight")) << "identity shortcuts have no parameters";
  const std::vector<ParamSpec> params = collect_params(build_model("resnet18", kImageNet));
  EXPECT_EQ(params.size(), 62u);  // torchvision's resnet18 has 62 parameter tensors
}

TEST(ResNetModels, InitialisationFollowsTorchvision) {
  for (const char* name : {"resnet18", "resnet50"}) {
    SCOPED_TRACE(name);
    for (const ParamSpec& p : collect_params(build_model(name, kImageNet))) {
      SCOPED_TRACE(p.name);
      if (p.name == "fc.weight") EXPECT_EQ(p.init, ParamInit::KaimingUniformA5);
      else if (p.name == "fc.bias") EXPECT_EQ(p.init, ParamInit::BiasUniform);
      else if (p.shape.rank() == 4) EXPECT_EQ(p.init, ParamInit::KaimingNormalFanOut);
      else if (ends_with(p.name, ".weight")) EXPECT_EQ(p.init, ParamInit::Ones);
      else EXPECT_EQ(p.init, ParamInit::Zeros);
    }
  }
}

TEST(ResNetModels, KaimingNormalFanOutDrawsTheRightSpread) {
  const std::vector<ParamSpec> specs = collect_params(build_model("resnet18", kImageNet));
  std::vector<float> flat(static_cast<size_t>(count_elements(specs)));
  initialize_flat(specs, 7, flat.data());
  const ParamSpec& conv1 = specs.front();  // 64 x 3 x 7 x 7: fan_out 64 * 49
  ASSERT_EQ(conv1.name, "conv1.weight");
  EXPECT_EQ(conv1.fan_out, 64 * 49);
  double sum = 0, squares = 0;
  const int64_t n = conv1.shape.numel();
  for (int64_t i = 0; i < n; ++i) {
    sum += flat[static_cast<size_t>(i)];
    squares += double(flat[static_cast<size_t>(i)]) * flat[static_cast<size_t>(i)];
  }
  const double mean = sum / n, std_dev = std::sqrt(squares / n - mean * mean), expected = std::sqrt(2.0 / (64 * 49));
  EXPECT_NEAR(mean, 0.0, 4 * expected / std::sqrt(double(n)));
  EXPECT_NEAR(std_dev / expected, 1.0, 0.04);  // 9408 draws: the sample spread lies within ~1.5% of it
}

// The weights of the BNs that --zero-init-residual zeroes: every residual branch's last BN.
std::set<std::string> zeroed_gammas(const std::string& model) {
  LayerSpec spec = build_model(model, kImageNet);
  zero_init_residual(spec);
  const std::vector<ParamSpec> specs = collect_params(spec);
  std::vector<float> flat(static_cast<size_t>(count_elements(specs)));
  initialize_flat(specs, 3, flat.data());
  std::set<std::string> zeroed;
  for (const ParamSpec& p : specs) {
    if (p.shape.rank() != 1 || !ends_with(p.name, ".weight") || p.name == "fc.weight") continue;
    bool all_zero = true;
    for (int64_t i = 0; i < p.shape.numel(); ++i) all_zero = all_zero && flat[static_cast<size_t>(p.offset + i)] == 0.0f;
    if (all_zero) zeroed.insert(p.name);
  }
  return zeroed;
}

TEST(ResNetModels, ZeroInitResidualZeroesExactlyTheLastBnOfEachBranch) {
  std::set<std::string> expected;
  for (const char* block : {"layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0", "layer3.1", "layer4.0", "layer4.1"})
    expected.insert(std::string(block) + ".bn2.weight");
  EXPECT_EQ(zeroed_gammas("resnet18"), expected);

  expected.clear();
  const int blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage)
    for (int b = 0; b < blocks[stage]; ++b)
      expected.insert("layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".bn3.weight");
  EXPECT_EQ(zeroed_gammas("resnet50"), expected);

  LayerSpec plain = build_model("resnet18", kImageNet);
  EXPECT_EQ(zeroed_gammas("resnet18").size(), 8u);
  EXPECT_EQ(zero_init_residual(plain), 8);
  LayerSpec mlp = build_model("mlp", ModelInput{1, 28, 28, 10});
  EXPECT_EQ(zero_init_residual(mlp), 0) << "a model without residual branches has nothing to zero";
}

TEST(ResNetModels, TheRunsModelTakesZeroInitResidualFromTheOption) {
  Dataset train;
  train.channels = 3;
  train.height = train.width = 64;
  train.num_classes = 10;
  TrainConfig config;
  config.model = "resnet18";
  config.zero_init_residual = true;
  int zeroed = 0;
  for (const ParamSpec& p : collect_params(model_spec_for(config, train)))
    zeroed += p.init == ParamInit::Zeros && ends_with(p.name, "bn2.weight");
  EXPECT_EQ(zeroed, 8);
  config.zero_init_residual = false;
  for (const ParamSpec& p : collect_params(model_spec_for(config, train)))
    if (ends_with(p.name, ".weight") && p.shape.rank() == 1) { EXPECT_EQ(p.init, ParamInit::Ones) << p.name; }

  config.model = "mlp";
  config.zero_init_residual = true;
  const std::string message = testing::refusal([&] { model_spec_for(config, train); });
  EXPECT_NE(message.find("--zero-init-residual"), std::string::npos) << message;
  EXPECT_NE(message.find("'mlp'"), std::string::npos) << message;
}

TEST(ResNetModels, WithoutTheOptionNoBnWeightStartsAtZero) {
  const std::vector<ParamSpec> specs = collect_params(build_model("resnet34", kImageNet));
  for (const ParamSpec& p : specs)
    if (ends_with(p.name, "bn2.weight")) { EXPECT_EQ(p.init, ParamInit::Ones) << p.name; }
}

TEST(ResNetModels, Resnet18TrainsOnTheCpuAtASmallSize) {
  cpu::Network<float> net(build_model("resnet18", ModelInput{3, 64, 64, 10}), 17);
  Tensor<float> x(Shape{2, 3, 64, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const int32_t labels[2] = {3, 7};
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    const Tensor<float>& logits = net.forward(x, cpu::Mode::Train);
    ASSERT_EQ(logits.shape(), (Shape{2, 10}));
    Tensor<float> dlogits(logits.shape());
    const float loss = cpu::cross_entropy_loss(logits, labels, dlogits);
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    losses.push_back(loss);
    std::fill(net.grads().begin(), net.grads().end(), 0.0f);
    net.backward(dlogits);
    for (size_t i = 0; i < net.params().size(); ++i) {
      ASSERT_TRUE(std::isfinite(net.grads()[i])) << net.params().size();
      net.params()[i] -= 0.01f * net.grads()[i];
    }
  }
  EXPECT_LT(losses.back(), losses.front()) << "losses " << losses[0] << " ... " << losses.back();
}

}  // namespace
}  // namespace sb

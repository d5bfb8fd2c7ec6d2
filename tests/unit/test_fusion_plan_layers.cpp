// The fusion planner's small-network patterns (nn/fusion_plan.h): mnist-cnn's first convolution, its
// conv + pool block and its fc1 + ReLU + dropout, the conditions each needs, and their plan-report lines in
// the run's summary.
#include <gtest/gtest.h>

#include <vector>

#include "models/cifar_cnn.h"
#include "models/mnist_cnn.h"
#include "models/wide_resnet.h"
#include "nn/fusion_plan.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using P = FusionPath;

std::vector<FusionPath> paths(const FusionPlan& plan) {
  std::vector<FusionPath> out;
  for (const auto& s : plan.steps) out.push_back(s.path);
  return out;
}

TEST(FusionPlanLayers, MnistCnnTakesAllThreePatterns) {
  const LayerSpec net = mnist_cnn(ModelInput{});
  const FusionPlan plan = plan_fusion(net.children, FusionAvailability{}, false, true);
  const std::vector<FusionPath> want = {P::FirstConv, P::FusedMember, P::ConvReluPool, P::FusedMember,
                                        P::FusedMember,   P::FusedMember, P::FusedMember,  P::LinearRelu,
                                        P::FusedMember,   P::FusedMember, P::Separate,     P::Separate};
  EXPECT_EQ(paths(plan), want);
  EXPECT_EQ(plan.steps[0].run, 2u);
  EXPECT_EQ(plan.steps[2].run, 5u);
  EXPECT_EQ(plan.steps[7].run, 3u);
  EXPECT_EQ(plan.record,
            "conv1 + relu1: first-conv kernel (fused layers)\n"
            "conv2 + relu2 + pool + dropout1 + flatten: cudnn conv, bias+relu+pool+dropout kernel (fused layers)\n"
            "fc1 + relu3 + dropout2: gemm epilogue relu, dropout in place (fused layers)\n");
  EXPECT_EQ(fusion_summary(plan.record),
            "fused layers: conv1 + relu1: first-conv kernel; conv2 + relu2 + pool + dropout1 + flatten: cudnn conv, "
            "bias+relu+pool+dropout kernel; fc1 + relu3 + dropout2: gemm epilogue relu, dropout in place");
}

// Only the network's own first layer skips its input gradient: a nested Sequential's first convolution
// runs as its own layer.
TEST(FusionPlanLayers, FirstConvolutionOnlyAtTheNetworkInput) {
  const LayerSpec net = mnist_cnn(ModelInput{});
  EXPECT_EQ(plan_fusion(net.children, FusionAvailability{}, false, false).steps[0].path, P::Separate);
  const LayerSpec rgb = mnist_cnn(ModelInput{3, 28, 28, 10});
  EXPECT_EQ(plan_fusion(rgb.children, FusionAvailability{}, false, true).steps[0].path, P::FirstConv);
}

// The first convolution takes 1 to 4 input channels, 3x3, a power-of-two output count, with or without its
// bias and a ReLU after it: the wrn's stem (3 -> 16, no bias, batch norm next) is one layer of its own.
TEST(FusionPlanLayers, FirstConvolutionWithAndWithoutBiasAndRelu) {
  const LayerSpec wrn = wide_resnet(ModelInput{3, 32, 32, 100}, WideResNetWidths{}, 0.3);
  const FusionPlan plan = plan_fusion(wrn.children, FusionAvailability{}, false, true);
  EXPECT_EQ(plan.steps[0].path, P::FirstConv);
  EXPECT_EQ(plan.steps[0].run, 1u);
  EXPECT_EQ(plan.steps[1].path, P::FusedHead);  // stem.bn + stem.relu
  EXPECT_NE(plan.record.find("stem.conv: first-conv kernel (fused layers)\n"), std::string::npos) << plan.record;

  const auto first = [](int64_t in, int64_t out, int64_t kernel, bool bias, bool with_relu) {
    std::vector<LayerSpec> c{conv2d("c", in, out, kernel, 1, 1, bias)};
    if (with_relu) c.push_back(relu("r"));
    c.push_back(flatten("f"));
    return plan_fusion(c, FusionAvailability{}, false, true).steps[0];
  };
  EXPECT_EQ(first(4, 8, 3, false, true).path, P::FirstConv);
  EXPECT_EQ(first(4, 8, 3, false, true).run, 2u);
  EXPECT_EQ(first(2, 256, 3, true, false).run, 1u);
  EXPECT_EQ(first(5, 8, 3, true, true).path, P::Separate);   // too many input channels
  EXPECT_EQ(first(3, 24, 3, true, true).path, P::Separate);  // not a power of two
  EXPECT_EQ(first(3, 16, 5, true, true).path, P::Separate);  // not 3x3
}

TEST(FusionPlanLayers, ConditionsOfEachPattern) {
  // 6 channels are not a power of two: cifar-cnn's conv1 block stays separate, its conv2 block (16) is fused.
  const LayerSpec cifar = cifar_cnn(ModelInput{3, 32, 32, 10});
  const FusionPlan plan = plan_fusion(cifar.children, FusionAvailability{}, false, true);
  EXPECT_EQ(plan.steps[0].path, P::Separate);
  EXPECT_EQ(plan.steps[3].path, P::ConvReluPool);
  EXPECT_EQ(plan.steps[3].run, 4u);  // no dropout before the flatten
  EXPECT_EQ(plan.steps[7].path, P::LinearRelu);
  EXPECT_EQ(plan.steps[7].run, 2u);
  EXPECT_EQ(plan.steps[11].path, P::Separate);  // fc3 has no ReLU
  // A pool other than 2x2, or no flatten after it, leaves the convolution alone.
  const std::vector<LayerSpec> pool3 = {conv2d("c", 4, 8, 3, 1, 0, true), relu("r"), maxpool2d("p", 3, 3),
                                       flatten("f")};
  EXPECT_EQ(plan_fusion(pool3, FusionAvailability{}, false, false).steps[0].path, P::Separate);
  const std::vector<LayerSpec> no_flatten = {conv2d("c", 4, 8, 3, 1, 0, true), relu("r"), maxpool2d("p", 2, 2)};
  EXPECT_EQ(plan_fusion(no_flatten, FusionAvailability{}, false, false).steps[0].path, P::Separate);
  const std::vector<LayerSpec> no_bias = {conv2d("c", 4, 8, 3, 1, 0, false), relu("r"), maxpool2d("p", 2, 2),
                                          flatten("f")};
  EXPECT_EQ(plan_fusion(no_bias, FusionAvailability{}, false, false).steps[0].path, P::Separate);
}

TEST(FusionPlanLayers, OffLeavesEveryLayerSeparate) {
  FusionAvailability off;
  off.layer_kernels = false;
  const FusionPlan plan = plan_fusion(mnist_cnn(ModelInput{}).children, off, false, true);
  for (const auto& s : plan.steps) EXPECT_EQ(s.path, P::Separate);
  EXPECT_EQ(plan.record, "");
}

TEST(FusionPlanLayers, SummaryKeepsBatchNormRunsFirst) {
  std::string report = "bn1 + relu1: fused kernels\nfc1 + relu: gemm epilogue relu";
  report += kLayerKernelsRecord;
  report += '\n';
  EXPECT_EQ(fusion_summary(report), "batch norm: 1 of 1 runs on the fused kernels; fused layers: fc1 + relu: gemm "
                                    "epilogue relu");
}

}  // namespace

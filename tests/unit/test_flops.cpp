// Model FLOP counts against hand counts and the WRN's published figure (docs/performance.md, MFU).
#include <gtest/gtest.h>

#include "models/registry.h"
#include "nn/flops.h"

namespace sb {
namespace {

TEST(Flops, MnistCnnMatchesAHandCount) {
  const LayerSpec spec = build_model("mnist-cnn", ModelInput{1, 28, 28, 10});
  const double conv1 = 2.0 * 1 * 9 * 32 * 26 * 26;
  const double conv2 = 2.0 * 32 * 9 * 64 * 24 * 24;
  const double fc = 2.0 * 9216 * 128 + 2.0 * 128 * 10;
  EXPECT_DOUBLE_EQ(forward_flops_per_sample(spec, Shape{1, 28, 28}), conv1 + conv2 + fc);
}

TEST(Flops, WideResNetTrainingCostIsDesignsFigure) {
  // 14.47 GFLOP per 32x32x3 image for training (3 x forward).
  const LayerSpec spec = build_model("wrn", ModelInput{3, 32, 32, 100});
  EXPECT_NEAR(training_flops_per_sample(spec, Shape{3, 32, 32}) / 1e9, 14.47, 0.01);
}

}  // namespace
}  // namespace sb

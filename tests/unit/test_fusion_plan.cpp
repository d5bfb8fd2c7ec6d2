// The fusion planner's choice per layer for the Wide ResNet's containers under made-up availabilities:
// which runs take the fused kernels, which fall back to cuDNN's BN+ReLU graph or to separate layers, and
// the record of the plan report.
#include <gtest/gtest.h>

#include <vector>

#include "models/resnet.h"
#include "models/wide_resnet.h"
#include "nn/fusion_plan.h"
#include "nn/spec.h"

namespace {

using namespace sb;

// The main branch of a Wide ResNet block, as src/models/wide_resnet.cpp builds it.
std::vector<LayerSpec> block_main(int64_t channels, double p) {
  return {conv2d("b.conv1", channels, channels, 3, 1, 1, false), batchnorm2d("b.bn1", channels), relu("b.relu1"),
          dropout("b.dropout", p), conv2d("b.conv2", channels, channels, 3, 1, 1, false),
          batchnorm2d("b.bn2", channels), relu("b.relu2")};
}

std::vector<FusionPath> paths(const FusionPlan& plan) {
  std::vector<FusionPath> out;
  for (const auto& s : plan.steps) out.push_back(s.path);
  return out;
}

using P = FusionPath;

TEST(FusionPlan, BlockMainFusesBothRunsAndTakesTheAdd) {
  FusionAvailability all;
  all.layout = Layout::NHWC;
  const FusionPlan plan = plan_fusion(block_main(160, 0.3), all, true);
  EXPECT_EQ(paths(plan), (std::vector<P>{P::Separate, P::FusedHead, P::FusedMember, P::FusedMember, P::Separate,
                                         P::FusedHead, P::FusedMember}));
  EXPECT_EQ(plan.steps[1].run, 3u);
  EXPECT_FALSE(plan.steps[1].adds_residual);
  EXPECT_EQ(plan.steps[5].run, 2u);
  EXPECT_TRUE(plan.steps[5].adds_residual);
  EXPECT_NE(plan.record.find("b.bn1 + b.relu1 + b.dropout: fused kernels"), std::string::npos) << plan.record;
  EXPECT_NE(plan.record.find("b.bn2 + b.relu2 + residual add: fused kernels"), std::string::npos) << plan.record;
}

TEST(FusionPlan, NoAddOutsideAResidualMain) {
  const FusionPlan plan = plan_fusion(block_main(160, 0.3), FusionAvailability{}, false);
  EXPECT_EQ(plan.steps[5].path, P::FusedHead);
  EXPECT_FALSE(plan.steps[5].adds_residual);
}

TEST(FusionPlan, AddOnlyWhenTheRunEndsTheBranch) {
  std::vector<LayerSpec> main = block_main(160, 0.3);
  main.push_back(conv2d("b.conv3", 160, 160, 1, 1, 0, false));  // the branch no longer ends with the run
  const FusionPlan plan = plan_fusion(main, FusionAvailability{}, true);
  EXPECT_EQ(plan.steps[5].path, P::FusedHead);
  EXPECT_FALSE(plan.steps[5].adds_residual);
}

TEST(FusionPlan, FusedKernelsOffFallBackToCudnnPairs) {
  FusionAvailability off;
  off.fused_kernels = false;
  const FusionPlan plan = plan_fusion(block_main(160, 0.3), off, true);
  EXPECT_EQ(paths(plan), (std::vector<P>{P::Separate, P::CudnnBnRelu, P::ReluInPrevious, P::Separate, P::Separate,
                                         P::CudnnBnRelu, P::ReluInPrevious}));
  EXPECT_NE(plan.record.find("b.bn1 + b.relu1: cudnn bn+relu graph (fused kernels off)"), std::string::npos)
      << plan.record;
}

TEST(FusionPlan, NothingAvailableKeepsSeparateLayers) {
  FusionAvailability none;
  none.fused_kernels = false;
  none.cudnn_bn_relu = false;
  const FusionPlan plan = plan_fusion(block_main(160, 0.3), none, true);
  EXPECT_EQ(paths(plan), std::vector<P>(7, P::Separate));
  EXPECT_NE(plan.record.find("b.bn2 + b.relu2: separate layers"), std::string::npos) << plan.record;
}

TEST(FusionPlan, NhwcChannelsNotAMultipleOf8UseCudnn) {
  FusionAvailability nhwc;
  nhwc.layout = Layout::NHWC;
  const FusionPlan plan = plan_fusion(block_main(12, 0.3), nhwc, true);
  EXPECT_EQ(plan.steps[1].path, P::CudnnBnRelu);
  EXPECT_EQ(plan.steps[3].path, P::Separate);  // the dropout keeps its own layer
  EXPECT_NE(plan.record.find("12 channels"), std::string::npos) << plan.record;
  nhwc.layout = Layout::NCHW;  // NCHW has no channel condition
  EXPECT_EQ(plan_fusion(block_main(12, 0.3), nhwc, true).steps[1].path, P::FusedHead);
}

TEST(FusionPlan, PlainBnReluFollowsItsSwitch) {
  const std::vector<LayerSpec> stem = {conv2d("stem.conv", 3, 16, 3, 1, 1, false), batchnorm2d("stem.bn", 16),
                                       relu("stem.relu"), maxpool2d("pool", 2, 2)};
  FusionAvailability a;
  EXPECT_EQ(plan_fusion(stem, a, false).steps[1].path, P::FusedHead);
  a.fuse_plain_bn_relu = false;
  EXPECT_EQ(plan_fusion(stem, a, false).steps[1].path, P::CudnnBnRelu);
  // Runs with a dropout or the add still fuse.
  EXPECT_EQ(plan_fusion(block_main(160, 0.3), a, true).steps[1].path, P::FusedHead);
  EXPECT_EQ(plan_fusion(block_main(160, 0.3), a, true).steps[5].path, P::FusedHead);
}

TEST(FusionPlan, LoneBatchNormsTakeTheFusedKernels) {
  const std::vector<LayerSpec> odd = {batchnorm2d("bn", 16), dropout("drop", 0.5), relu("relu"),
                                      batchnorm2d("last", 16)};
  const FusionPlan plan = plan_fusion(odd, FusionAvailability{}, true);
  EXPECT_EQ(paths(plan), (std::vector<P>{P::FusedHead, P::Separate, P::Separate, P::FusedHead}));
  EXPECT_FALSE(plan.steps[0].adds_residual);
  EXPECT_TRUE(plan.steps[3].adds_residual);  // it ends the branch: it takes the add
  EXPECT_FALSE(plan.steps[3].relu_after_add);
  EXPECT_NE(plan.record.find("bn: fused kernels"), std::string::npos) << plan.record;
  EXPECT_NE(plan.record.find("last + residual add: fused kernels"), std::string::npos) << plan.record;
  FusionAvailability off;
  off.fused_kernels = false;
  const FusionPlan separate = plan_fusion(odd, off, true);
  EXPECT_EQ(paths(separate), std::vector<P>(4, P::Separate));
  EXPECT_NE(separate.record.find("last: separate layer (fused kernels off)"), std::string::npos) << separate.record;
}

// torchvision's bottleneck: relu(bn3(conv3(...)) + downsample(x)). The block's ReLU goes into bn3's run, which
// takes the add; the shortcut's lone batch norm takes the fused kernels too.
TEST(FusionPlan, BottleneckEndTakesTheAddAndTheReluAfterIt) {
  const LayerSpec net = resnet50(ModelInput{3, 224, 224, 1000});
  const LayerSpec& block = net.children.at(4);  // layer1.0: [Residual, ReLU]
  ASSERT_EQ(block.name, "layer1.0");
  FusionAvailability nhwc;
  nhwc.layout = Layout::NHWC;
  const FusionPlan outer = plan_fusion(block.children, nhwc, false);
  EXPECT_EQ(paths(outer), (std::vector<P>{P::ResidualThenRelu, P::ReluInPrevious}));
  const LayerSpec& sum = block.children[0];
  const FusionPlan main = plan_fusion(sum.children[0].children, nhwc, true, false, true);
  const FusionStep& bn3 = main.steps.back();
  EXPECT_EQ(bn3.path, P::FusedHead);
  EXPECT_EQ(bn3.run, 1u);
  EXPECT_TRUE(bn3.adds_residual);
  EXPECT_TRUE(bn3.relu_after_add);
  EXPECT_NE(main.record.find("layer1.0.bn3 + residual add + relu: fused kernels"), std::string::npos) << main.record;
  const FusionPlan shortcut = plan_fusion(sum.children[1].children, nhwc, false);
  EXPECT_EQ(paths(shortcut), (std::vector<P>{P::Separate, P::FusedHead}));
  EXPECT_FALSE(shortcut.steps[1].adds_residual);
  // Without the fused kernels the ReLU stays its own layer.
  FusionAvailability off = nhwc;
  off.fused_kernels = false;
  EXPECT_EQ(paths(plan_fusion(block.children, off, false)), (std::vector<P>{P::Separate, P::Separate}));
}

TEST(FusionPlan, ReluAfterAResidualStaysWhereTheBranchDoesNotEndInABatchNorm) {
  const LayerSpec main = sequential("b.main", block_main(160, 0.0));  // ends with BN + ReLU
  const std::vector<LayerSpec> block = {residual("b.sum", main, {}), relu("b.relu")};
  EXPECT_EQ(paths(plan_fusion(block, FusionAvailability{}, false)), (std::vector<P>{P::Separate, P::Separate}));
  FusionAvailability nhwc;  // a last batch norm of 12 channels under NHWC is not fused: no ReLU for it
  nhwc.layout = Layout::NHWC;
  const LayerSpec narrow = sequential("n.main", {conv2d("n.conv", 12, 12, 3, 1, 1, false), batchnorm2d("n.bn", 12)});
  const std::vector<LayerSpec> narrow_block = {residual("n.sum", narrow, {}), relu("n.relu")};
  EXPECT_EQ(paths(plan_fusion(narrow_block, nhwc, false)), (std::vector<P>{P::Separate, P::Separate}));
}

TEST(FusionPlan, WideResNetTopLevelFusesTheStem) {
  const LayerSpec wrn = wide_resnet(ModelInput{3, 32, 32, 100});
  const FusionPlan plan = plan_fusion(wrn.children, FusionAvailability{}, false);
  ASSERT_GE(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[1].path, P::FusedHead);
  EXPECT_EQ(plan.steps[1].run, 2u);
  EXPECT_FALSE(plan.steps[1].adds_residual);
}

TEST(FusionPlan, ResNetStemRunTakesItsMaxPoolUnderNhwc) {
  const LayerSpec net = resnet50(ModelInput{3, 224, 224, 1000});  // conv1, bn1, relu, maxpool, layer1, ...
  ASSERT_EQ(net.children[3].kind, LayerKind::MaxPool2d);
  FusionAvailability nhwc;
  nhwc.layout = Layout::NHWC;
  const FusionPlan plan = plan_fusion(net.children, nhwc, false, true);
  EXPECT_EQ(plan.steps[1].path, P::FusedHead);
  EXPECT_EQ(plan.steps[1].run, 3u);
  EXPECT_EQ(plan.steps[3].path, P::FusedMember);
  EXPECT_EQ(plan.steps[4].path, P::Separate);
  EXPECT_NE(plan.record.find("bn1 + relu + maxpool: fused kernels"), std::string::npos) << plan.record;

  const auto stem_run = [&](const FusionAvailability& a) { return plan_fusion(net.children, a, false, true).steps[1].run; };
  FusionAvailability nchw = nhwc;  // the pool's positions are kept under NHWC only
  nchw.layout = Layout::NCHW;
  EXPECT_EQ(stem_run(nchw), 2u);
  FusionAvailability off = nhwc;
  off.pool_in_run = false;
  EXPECT_EQ(stem_run(off), 2u);
}

TEST(FusionPlan, PoolJoinsTheRunOnlyWhereItsWindowsOverlapOrPad) {
  FusionAvailability nhwc;
  nhwc.layout = Layout::NHWC;
  const auto run_length = [&](const LayerSpec& pool, bool ends_residual_main, bool more) {
    std::vector<LayerSpec> c = {batchnorm2d("bn", 64), relu("relu"), pool};
    if (more) c.push_back(conv2d("conv", 64, 64, 3, 1, 1, false));
    return plan_fusion(c, nhwc, ends_residual_main).steps[0].run;
  };
  EXPECT_EQ(run_length(maxpool2d("pool", 3, 2, 1), false, false), 3u);
  EXPECT_EQ(run_length(maxpool2d("pool", 3, 2, 0), false, false), 3u);  // overlapping windows
  EXPECT_EQ(run_length(maxpool2d("pool", 2, 2, 0), false, false), 2u);  // tiling windows keep their own kernels
  EXPECT_EQ(run_length(avgpool2d("pool", 3, 2), false, false), 2u);
  EXPECT_EQ(run_length(maxpool2d("pool", 3, 2, 1), true, false), 2u);   // the add follows the pool
  EXPECT_EQ(run_length(maxpool2d("pool", 3, 2, 1), true, true), 3u);
}

TEST(FusionPlan, SummaryCountsFusedRunsAndNamesTheOthers) {
  const std::vector<LayerSpec> block = {batchnorm2d("bn1", 16), relu("relu1"), dropout("drop", 0.3),
                                        batchnorm2d("bn2", 12), relu("relu2")};
  FusionAvailability nhwc;
  nhwc.layout = Layout::NHWC;  // 12 channels: not a multiple of 8, so bn2's run is not fused
  const FusionPlan plan = plan_fusion(block, nhwc, false);
  const std::string summary = fusion_summary(plan.record);
  EXPECT_EQ(summary.rfind("batch norm: 1 of 2 runs on the fused kernels; ", 0), 0u) << summary;
  EXPECT_NE(summary.find("bn2 + relu2: cudnn bn+relu graph (12 channels"), std::string::npos) << summary;
  // A run the fused kernels refused at its first forward adds its own line (FusedBnRun's note).
  const std::string refused =
      fusion_summary(plan.record + "bn1: [2, 16, 3, 3] nhwc not taken by the fused kernels, separate layers\n");
  EXPECT_EQ(refused.rfind("batch norm: 0 of 2 runs on the fused kernels; ", 0), 0u) << refused;
  EXPECT_NE(refused.find("bn1: [2, 16, 3, 3] nhwc not taken"), std::string::npos) << refused;
  EXPECT_EQ(fusion_summary(""), "");
}

// The convolutions that write the next batch norm's sums (ContextOptions::fold_batch_norm) are counted,
// and those with no engine for that graph named.
TEST(FusionPlan, SummaryCountsStatisticsInTheConvolutions) {
  const std::string report = std::string("conv1 -> bn1+relu1") + kStatisticsInConvRecord + "\n" + "conv2 -> bn2+relu2" +
                             kStatisticsInConvRecord + "\n" + "conv3 -> bn3" + kStatisticsPassRecord + "\n";
  EXPECT_EQ(fusion_summary(report), "batch-norm statistics: 2 of 3 in the convolution's epilogue (own pass: conv3 -> bn3)");
  EXPECT_EQ(fusion_summary(std::string("c -> b") + kStatisticsInConvRecord + "\n"),
            "batch-norm statistics: 1 of 1 in the convolution's epilogue");
}

// And the dgrads that take the backward reduction of the run before them.
TEST(FusionPlan, SummaryCountsBackwardReductionsInTheDgrads) {
  const std::string report = std::string("bn1+relu1 <- conv2") + kBackwardInDgradRecord + "\n" + "bn2+relu2 <- conv3" +
                             kBackwardPassRecord + "\n" + "conv3 -> bn3" + kStatisticsInConvRecord + "\n";
  EXPECT_EQ(fusion_summary(report),
            "batch-norm statistics: 1 of 1 in the convolution's epilogue; batch-norm backward reductions: 1 of 2 in "
            "the dgrad (own pass: bn2+relu2 <- conv3)");
  const std::string applies = std::string("bn1+relu1 => conv2") + kApplyInPrologueRecord + "\n" + "bn2+relu2 => conv3" +
                              kApplyPassRecord + "\n";
  EXPECT_EQ(fusion_summary(applies),
            "batch-norm applies: 1 of 2 in the convolution's prologue (own pass: bn2+relu2 => conv3)");
}

}  // namespace

// The prediction's inputs: --network's parsing and refusals, when each bucket is ready (from the layers'
// FLOPs or from recorded times), and the 1-GPU compute between measured batch sizes.
#include <gtest/gtest.h>

#include "models/registry.h"
#include "nn/flops.h"
#include "predict/compute_profile.h"
#include "predict/gradient_ready.h"
#include "predict/network_spec.h"
#include "predict/predict_options.h"
#include "train/engines/bucket_plan.h"
#include "user_error_text.h"

namespace sb::predict {
namespace {

using sb::testing::refusal;

TEST(NetworkSpec, ReadsNodesGpusAndTheLink) {
  const NetworkSpec s = parse_network_spec("nodes=2,gpus-per-node=4,inter=ib:200Gbps,latency=3us");
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.link_name, "ib");
  ASSERT_TRUE(s.inter);
  EXPECT_DOUBLE_EQ(s.inter->beta_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(s.inter->alpha_s, 3e-6);
  const NetworkSpec bytes = parse_network_spec("inter=roce:12.5GB/s");
  EXPECT_DOUBLE_EQ(bytes.inter->beta_bytes_per_s, 12.5e9);
  EXPECT_DOUBLE_EQ(bytes.inter->alpha_s, kDefaultInterLatencySeconds);
}

TEST(NetworkSpec, RefusesMalformedSpecsNamingThePart) {
  EXPECT_NE(refusal([] { parse_network_spec("nodes=two"); }).find("--network 'nodes=two': nodes 'two' is not a positive integer"),
            std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec("inter=ib:200"); }).find("the bandwidth '200' is not a positive number with a unit (Gbps, GB/s)"),
            std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec("inter=200Gbps"); }).find("is not NAME:BANDWIDTH"), std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec("speed=1"); }).find("unknown key 'speed'"), std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec("nodes"); }).find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec("latency=5us"); }).find("latency is given without inter"), std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec("inter=ib:100Gbps,latency=-1us"); }).find("expected the form nodes=2"), std::string::npos);
  EXPECT_NE(refusal([] { parse_network_spec(""); }).find("it is empty"), std::string::npos);
}

TEST(GradientReady, FollowsTheBackwardFlopsFromTheLastLayer) {
  // Two linear layers, 4 -> 3 -> 2: forward FLOPs 24 and 12; backward reaches fc2 first.
  const LayerSpec spec = sequential("", {flatten("flat"), linear("fc1", 4, 3, true), relu("act"), linear("fc2", 3, 2, true)});
  const std::vector<ParamSpec> params = collect_params(spec);
  const std::vector<LayerFlops> layers = forward_flops_per_layer(spec, Shape{4, 1, 1});
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[1].name, "fc1");
  EXPECT_DOUBLE_EQ(layers[0].forward_flops, 0);
  EXPECT_DOUBLE_EQ(layers[1].forward_flops, 24);
  EXPECT_DOUBLE_EQ(layers[2].forward_flops, 0);
  EXPECT_DOUBLE_EQ(layers[3].forward_flops, 12);
  const GradientReadyCurve ready = GradientReadyCurve::from_layer_flops(layers, params);
  // fc2.weight and fc2.bias are final after a third of backward, fc1's at its end.
  EXPECT_DOUBLE_EQ(ready.fraction_at(params[2].offset), 1.0 / 3);  // fc2.weight
  EXPECT_DOUBLE_EQ(ready.fraction_at(params[3].offset), 1.0 / 3);  // fc2.bias
  EXPECT_DOUBLE_EQ(ready.fraction_at(params[1].offset), 1.0);      // fc1.bias
  EXPECT_DOUBLE_EQ(ready.fraction_at(0), 1.0);
  EXPECT_DOUBLE_EQ(ready.fraction_at(count_elements(params)), 0.0);
}

TEST(GradientReady, BucketsOfARealModelBecomeReadyInTheirLaunchOrder) {
  const LayerSpec spec = build_model("wrn", ModelInput{3, 32, 32, 100});
  const std::vector<ParamSpec> params = collect_params(spec);
  const GradientReadyCurve ready = GradientReadyCurve::from_layer_flops(forward_flops_per_layer(spec, Shape{3, 32, 32}), params);
  const int64_t elements = bucket_elements_of_mib(1);
  const std::vector<Bucket> plan = plan_buckets(params, elements, default_tail_elements(elements));
  const std::vector<double> fractions = ready.bucket_ready_fractions(plan);
  ASSERT_GT(fractions.size(), 3u);
  for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]) << i;
  EXPECT_GT(fractions.front(), 0.0);
  EXPECT_LT(fractions.front(), 0.5);  // the last layers' buckets start early in backward
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);  // the first layers' bucket waits for the end
}

TEST(GradientReady, RecordedTimesAreInterpolatedForAnotherPlan) {
  // Recorded: elements [500, 1000) final at 40% of a 2 s backward, [0, 500) at its end.
  const std::vector<Bucket> recorded{{500, 1000}, {0, 500}};
  const GradientReadyCurve ready = GradientReadyCurve::from_recorded(recorded, {0.8, 2.0}, 2.0, 1000);
  EXPECT_DOUBLE_EQ(ready.fraction_at(500), 0.4);
  EXPECT_DOUBLE_EQ(ready.fraction_at(0), 1.0);
  EXPECT_DOUBLE_EQ(ready.fraction_at(750), 0.2);   // halfway between the end (0) and 500 (0.4)
  EXPECT_DOUBLE_EQ(ready.fraction_at(250), 0.7);
  EXPECT_THROW(GradientReadyCurve::from_recorded(recorded, {0.8}, 2.0, 1000), std::invalid_argument);
}

TEST(ComputeProfile, InterpolatesPerSampleBetweenMeasuredBatches) {
  const ComputeProfile profile({{64, {0.064, 0.128, 0.010}}, {16, {0.032, 0.032, 0.010}}});
  EXPECT_EQ(profile.smallest_batch(), 16);
  EXPECT_EQ(profile.largest_batch(), 64);
  const auto at_64 = profile.at(64);
  ASSERT_TRUE(at_64);
  EXPECT_DOUBLE_EQ(at_64->backward_s, 0.128);
  // Batch 32 is a third of the way from 16 to 64: per-sample backward 2e-3 there and 2e-3 at 64, so
  // 2e-3 x 32; the data + forward part goes from 2e-3 to 1e-3 per sample: 5/3e-3 x 32.
  const auto at_32 = profile.at(32);
  ASSERT_TRUE(at_32);
  EXPECT_NEAR(at_32->backward_s, 0.064, 1e-15);
  EXPECT_NEAR(at_32->before_backward_s, 32 * (2e-3 - (1e-3 / 3)), 1e-15);
  EXPECT_FALSE(profile.at(8));
  EXPECT_FALSE(profile.at(65));
  EXPECT_THROW(ComputeProfile({{16, {}}, {16, {}}}), std::invalid_argument);
  EXPECT_THROW(ComputeProfile(std::vector<ComputePoint>{}), std::invalid_argument);
}

TEST(PredictOptions, ReadsTheCommandLine) {
  const PredictOptions o = parse_predict_options({"--study", "s.h5", "--comm=c.h5", "--gpus", "8,16", "--bucket-mibs", "2.5,50",
                                                  "--check", "--batch-size=128"});
  EXPECT_EQ(o.study, "s.h5");
  EXPECT_EQ(o.comm, "c.h5");
  EXPECT_EQ(o.gpus, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(o.bucket_mibs, (std::vector<double>{2.5, 50}));
  EXPECT_EQ(o.batch_size, 128);
  EXPECT_TRUE(o.check);
  EXPECT_TRUE(parse_predict_options({"--help"}).help);  // --help needs no inputs
}

TEST(PredictOptions, RefusesBadValuesNamingTheOption) {
  const std::vector<std::string> inputs{"--study", "s.h5", "--comm", "c.h5"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), inputs.begin(), inputs.end());
    return refusal([&] { parse_predict_options(more); });
  };
  EXPECT_EQ(with({"--gpus", "8,,16"}), "--gpus expects a comma-separated list of positive counts, got ''");
  EXPECT_EQ(with({"--gpus", "0"}), "--gpus expects a comma-separated list of positive counts, got '0'");
  EXPECT_EQ(with({"--batch-size", "x"}), "--batch-size expects a positive integer, got 'x'");
  EXPECT_EQ(with({"--check=yes"}), "--check takes no value");
  EXPECT_EQ(with({"--out"}), "--out needs a value (FILE)");
  EXPECT_NE(with({"--epochs", "3"}).find("unknown option '--epochs' for 'scalebench predict'"), std::string::npos);
  EXPECT_NE(refusal([] { parse_predict_options({"--comm", "c.h5"}); }).find("--study is required"), std::string::npos);
  EXPECT_NE(refusal([] { parse_predict_options({"--study", "s.h5"}); }).find("--comm is required"), std::string::npos);
}

}  // namespace
}  // namespace sb::predict

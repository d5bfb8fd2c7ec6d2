// The optimizer overlap applies only with several ranks, without fp16 loss scaling and with one
// micro-batch per step, and says why otherwise; the last bucket update launched (offset 0) is the one
// that advances the step counter; the bucket plans of every model tile the flat buffer in descending
// offsets, as the per-bucket updates need.
#include <gtest/gtest.h>

#include <string>

#include "models/registry.h"
#include "train/engines/optimizer_overlap.h"

namespace sb {
namespace {

TrainConfig cuda_config() {
  TrainConfig c;
  c.device = Device::Cuda;
  c.precision = Precision::TF32;
  return c;
}

TEST(OptimizerOverlap, AppliesWithSeveralRanksInEveryPrecisionButFp16) {
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::BF16}) {
    TrainConfig c = cuda_config();
    c.precision = p;
    EXPECT_TRUE(optimizer_overlap_applies(c, 2)) << name_of(p);
    EXPECT_EQ(optimizer_overlap_refusal(c, 8), "") << name_of(p);
  }
}

TEST(OptimizerOverlap, EachUnsafeOrUselessCaseKeepsTheOneUpdateAndSaysWhy) {
  TrainConfig c = cuda_config();
  EXPECT_NE(optimizer_overlap_refusal(c, 1).find("one rank"), std::string::npos);

  c = cuda_config();
  c.precision = Precision::FP16;
  EXPECT_NE(optimizer_overlap_refusal(c, 4).find("fp16"), std::string::npos);

  c = cuda_config();
  c.accumulate_steps = 2;
  EXPECT_NE(optimizer_overlap_refusal(c, 4).find("--accumulate-steps"), std::string::npos);
}

TEST(OptimizerOverlap, OnlyTheLastUpdateLaunchedAdvancesTheStepCounter) {
  for (size_t launches : {1u, 2u, 5u}) {
    int advancing = 0;
    for (size_t b = 0; b < launches; ++b) advancing += advances_step_counter(b, launches) ? 1 : 0;
    EXPECT_EQ(advancing, 1) << launches << " buckets";
    EXPECT_TRUE(advances_step_counter(launches - 1, launches)) << launches << " buckets";
  }
  EXPECT_FALSE(advances_step_counter(0, 2));
}

TEST(OptimizerOverlap, BucketsMustTileTheBufferInDescendingOffsets) {
  EXPECT_TRUE(buckets_tile_descending({{40, 100}, {10, 40}, {0, 10}}, 100));
  EXPECT_TRUE(buckets_tile_descending({{0, 100}}, 100));
  EXPECT_FALSE(buckets_tile_descending({}, 100));
  EXPECT_FALSE(buckets_tile_descending({{0, 10}, {10, 100}}, 100)) << "ascending";
  EXPECT_FALSE(buckets_tile_descending({{40, 100}, {0, 30}}, 100)) << "a gap";
  EXPECT_FALSE(buckets_tile_descending({{40, 90}, {0, 40}}, 100)) << "short of the end";
  EXPECT_FALSE(buckets_tile_descending({{40, 100}, {40, 40}, {0, 40}}, 100)) << "an empty bucket";
  EXPECT_FALSE(buckets_tile_descending({{40, 100}, {10, 40}}, 100)) << "the first parameters left out";
}

TEST(OptimizerOverlap, TheModelsBucketPlansTileTheirBuffers) {
  for (const ModelInfo& m : model_catalog()) {
    const std::vector<ParamSpec> params = collect_params(build_model(m.name, m.home_input));
    int64_t n = 0;
    for (const ParamSpec& p : params) n += p.shape.numel();
    for (double mib : {25.0, 1.0, 0.25}) {
      const int64_t elements = bucket_elements_of_mib(mib);
      const std::vector<Bucket> buckets = plan_buckets(params, elements, default_tail_elements(elements));
      EXPECT_TRUE(buckets_tile_descending(buckets, n)) << m.name << " at " << mib << " MiB";
    }
  }
}

}  // namespace
}  // namespace sb

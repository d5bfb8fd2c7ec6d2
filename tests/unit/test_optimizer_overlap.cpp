// --optimizer-overlap: on by default and recorded in the configuration JSON, free across a resume; it
// applies only with several ranks, without fp16 loss scaling and with one micro-batch per step, and says
// why otherwise; the last bucket update launched (offset 0) is the one that advances the step counter; the
// bucket plans of the model zoo tile the flat buffer in descending offsets, as the per-bucket updates need.
#include <gtest/gtest.h>

#include <string>

#include "models/registry.h"
#include "train/checkpoint/resume_check.h"
#include "train/engines/optimizer_overlap.h"
#include "train/train_options.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

const TrainOption& overlap_row() {
  const TrainOption* found = train_option_named("optimizer-overlap");
  if (!found) throw std::runtime_error("no option --optimizer-overlap");
  return *found;
}

TrainConfig cuda_config() {
  TrainConfig c;
  c.device = Device::Cuda;
  c.precision = Precision::TF32;
  return c;
}

TEST(OptimizerOverlapOption, OnByDefaultRecordedAndFreeAcrossAResume) {
  const TrainConfig c;
  EXPECT_TRUE(c.optimizer_overlap);
  EXPECT_NE(c.to_json().find("\"optimizer_overlap\":true"), std::string::npos) << c.to_json();
  EXPECT_EQ(overlap_row().resume, ResumeRule::Free);

  TrainConfig off = cuda_config();
  overlap_row().field.parse(off, "off", "optimizer-overlap");
  EXPECT_FALSE(off.optimizer_overlap);
  EXPECT_FALSE(TrainConfig::from_json(off.to_json(), "test").optimizer_overlap);
  EXPECT_EQ(refusal([&] { check_same_run_options(cuda_config().to_json(), "stored", off.to_json(), "given"); }), "");

  std::string older = cuda_config().to_json();  // written before the option existed: on
  const std::string key = "\"optimizer_overlap\":true,";
  const size_t at = older.find(key);
  ASSERT_NE(at, std::string::npos) << older;
  older.erase(at, key.size());
  EXPECT_TRUE(TrainConfig::from_json(older, "an older checkpoint").optimizer_overlap);
}

TEST(OptimizerOverlapOption, ABadValueIsRefusedNamingTheOption) {
  TrainConfig c;
  const std::string message = refusal([&] { overlap_row().field.parse(c, "early", "optimizer-overlap"); });
  EXPECT_NE(message.find("--optimizer-overlap"), std::string::npos) << message;
  EXPECT_NE(message.find("on or off"), std::string::npos) << message;
  EXPECT_TRUE(c.optimizer_overlap) << "a refused value leaves the setting";
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

  c.optimizer_overlap = false;
  EXPECT_NE(optimizer_overlap_refusal(c, 4).find("--optimizer-overlap off"), std::string::npos);

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
  const struct {
    const char* model;
    ModelInput input;
  } models[] = {{"mnist-cnn", {1, 28, 28, 10}}, {"cifar-cnn", {3, 32, 32, 10}}, {"wrn", {3, 32, 32, 100}}};
  for (const auto& m : models) {
    const std::vector<ParamSpec> params = collect_params(build_model(m.model, m.input));
    int64_t n = 0;
    for (const ParamSpec& p : params) n += p.shape.numel();
    for (double mib : {25.0, 1.0, 0.25}) {
      const int64_t elements = bucket_elements_of_mib(mib);
      const std::vector<Bucket> buckets = plan_buckets(params, elements, default_tail_elements(elements));
      EXPECT_TRUE(buckets_tile_descending(buckets, n)) << m.model << " at " << mib << " MiB";
    }
  }
}

}  // namespace
}  // namespace sb

// The sweeps of a scaling study: parsing the --sweep-* lists, the product of their values, the refusal
// of a value the rest of the configuration cannot run, the /configs names and /study columns, and
// speedup computed within each combination and repeat.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "train/study/scaling_study.h"
#include "train/study/study_sweep.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

const SweepableOption& sweep_named(const std::string& name) {
  for (const SweepableOption& s : sweepable_options())
    if (name == s.sweep_name) return s;
  throw std::logic_error("no sweep " + name);
}

TrainConfig cpu_config() {
  TrainConfig c;
  c.model = "mlp";
  c.device = Device::Cpu;
  c.batch_size = 64;
  return c;
}

TEST(StudySweep, ParsesValuesInCanonicalForm) {
  const SweepAxis axis = parse_sweep(sweep_named("sweep-precision"), "FP32,bf16");
  EXPECT_EQ(axis.option, "precision");
  EXPECT_EQ(axis.values, (std::vector<std::string>{"fp32", "bf16"}));
  EXPECT_EQ(parse_sweep(sweep_named("sweep-batch-size"), "64,128,256").values, (std::vector<std::string>{"64", "128", "256"}));
}

TEST(StudySweep, RefusesBadListsNamingTheSweep) {
  const SweepableOption& batch = sweep_named("sweep-batch-size");
  EXPECT_EQ(refusal([&] { parse_sweep(batch, "64,64"); }), "--sweep-batch-size lists 64 twice");
  EXPECT_EQ(refusal([&] { parse_sweep(batch, "64,,128"); }),
            "--sweep-batch-size expects a comma-separated list of values, got '64,,128'");
  EXPECT_EQ(refusal([&] { parse_sweep(batch, ""); }), "--sweep-batch-size expects a comma-separated list of values, got ''");
  EXPECT_EQ(refusal([&] { parse_sweep(batch, "0"); }), "--sweep-batch-size must be at least 1 (got 0)");
  EXPECT_NE(refusal([&] { parse_sweep(sweep_named("sweep-precision"), "fp8"); }).find("--sweep-precision expects one of"),
            std::string::npos);
}

TEST(StudySweep, TheProductOfTheSweepsNestsInListOrder) {
  TrainConfig base = cpu_config();
  base.device = Device::Cuda;  // any precision is valid on CUDA
  // Given precision first: the combinations still nest batch size outermost.
  const std::vector<SweepAxis> axes{{"precision", {"fp32", "bf16"}}, {"batch-size", {"32", "64", "128"}}};
  const std::vector<SweepCombination> combos = sweep_combinations(base, axes, {1, 2});
  ASSERT_EQ(combos.size(), 6u);
  EXPECT_EQ(combos[0].config.batch_size, 32);
  EXPECT_EQ(combos[0].config.precision, Precision::FP32);
  EXPECT_EQ(combos[1].config.batch_size, 32);
  EXPECT_EQ(combos[1].config.precision, Precision::BF16);
  EXPECT_EQ(combos[5].config.batch_size, 128);
  EXPECT_EQ(combos[5].config.precision, Precision::BF16);
  EXPECT_EQ(config_suffix(combos[5], 1, 1), "_batch_size_128_precision_bf16");
  EXPECT_EQ(config_suffix(combos[5], 2, 3), "_batch_size_128_precision_bf16_repeat_2");
  EXPECT_EQ(swept_columns(axes), (std::vector<std::string>{"batch_size", "precision"}));
}

// A model's fp16 default (the batch norms' statistics in the convolutions for the ResNets) follows each
// point's precision; a given --fold-bn-statistics holds for every point.
TEST(StudySweep, EachPrecisionTakesItsOwnBatchNormFoldDefault) {
  TrainConfig base = cpu_config();
  base.model = "resnet50";
  base.device = Device::Cuda;
  const std::vector<SweepAxis> axes{{"precision", {"bf16", "fp16"}}};
  const std::vector<SweepCombination> combos = sweep_combinations(base, axes, {1});
  ASSERT_EQ(combos.size(), 2u);
  EXPECT_FALSE(combos[0].config.fold_bn_statistics_on()) << "bf16";
  EXPECT_TRUE(combos[1].config.fold_bn_statistics_on()) << "fp16";
  base.fold_bn_statistics = false;
  for (const SweepCombination& c : sweep_combinations(base, axes, {1})) EXPECT_FALSE(c.config.fold_bn_statistics_on());
}

TEST(StudySweep, WithoutSweepsTheStudyIsItsBaseConfiguration) {
  const std::vector<SweepCombination> combos = sweep_combinations(cpu_config(), {}, {1, 2, 4});
  ASSERT_EQ(combos.size(), 1u);
  EXPECT_TRUE(combos[0].values.empty());
  EXPECT_EQ(config_suffix(combos[0], 1, 1), "");
  EXPECT_EQ(config_suffix(combos[0], 3, 3), "_repeat_3");
  TrainConfig strong = cpu_config();
  strong.scaling = Scaling::Strong;
  strong.batch_size = 30;  // the base's own refusal, unchanged
  EXPECT_EQ(refusal([&] { sweep_combinations(strong, {}, {1, 4}); }), refusal([&] { strong.per_rank_batch(4); }));
}

TEST(StudySweep, AValueTheConfigurationCannotRunIsRefusedBeforeAnyRun) {
  const TrainConfig base = cpu_config();
  const std::string fp16 = refusal([&] { sweep_combinations(base, {{"precision", {"fp32", "fp16"}}}, {1}); });
  EXPECT_EQ(fp16.rfind("--sweep-precision fp16 cannot run in this study: ", 0), 0u) << fp16;
  EXPECT_NE(fp16.find("--device cuda"), std::string::npos) << fp16;

  TrainConfig strong = base;
  strong.scaling = Scaling::Strong;
  const std::string batch = refusal([&] { sweep_combinations(strong, {{"batch-size", {"64", "66"}}}, {1, 2, 4}); });
  EXPECT_EQ(batch.rfind("--sweep-batch-size 66 cannot run in this study: ", 0), 0u) << batch;
  EXPECT_EQ(refusal([&] { sweep_combinations(strong, {{"batch-size", {"64", "128"}}}, {1, 2, 4}); }), "");
}

TEST(StudySweep, StudyRowsRecordEverySweepableOption) {
  TrainConfig c = cpu_config();
  c.device = Device::Cuda;
  c.precision = Precision::BF16;
  c.batch_size = 96;
  c.workers = 3;
  c.parallel = Parallel::Dp;
  StudyRow row;
  record_sweep_columns(c, row);
  EXPECT_EQ(row.batch_size, 96);
  EXPECT_EQ(row.workers, 3);
  const auto names = sweep_value_names();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].first, "precision");
  EXPECT_EQ(names[0].second.at(static_cast<size_t>(row.precision)), "bf16");
  EXPECT_EQ(names[1].first, "parallel");
  EXPECT_EQ(names[1].second.at(static_cast<size_t>(row.parallel)), "dp");
}

TEST(StudySweep, PlansRunEachCombinationAndRepeatOverTheCounts) {
  const std::vector<StudyRunPlan> plans = plan_study(2, 2, {1, 4});
  ASSERT_EQ(plans.size(), 8u);
  EXPECT_EQ(plans[0].combination, 0u);
  EXPECT_EQ(plans[0].repeat, 1);
  EXPECT_EQ(plans[1].gpus, 4);
  EXPECT_EQ(plans[2].repeat, 2);
  EXPECT_EQ(plans[4].combination, 1u);
  EXPECT_EQ(plans[7].gpus, 4);
}

StudyPoint point(size_t combination, int repeat, int gpus, double images_per_s) {
  StudyPoint p;
  p.plan = StudyRunPlan{combination, repeat, gpus};
  p.gpus = gpus;
  p.images_per_s = images_per_s;
  p.epoch_time_s = 1000.0 * gpus / images_per_s;  // weak scaling: 1000 images per rank
  return p;
}

TEST(StudySweep, SpeedupIsAgainstTheSmallestCountOfTheSameCombinationAndRepeat) {
  std::vector<StudyPoint> points{point(0, 1, 1, 100), point(0, 1, 2, 180), point(1, 1, 1, 400), point(1, 1, 2, 400),
                                 point(0, 2, 1, 50), point(0, 2, 2, 100)};
  compute_scaling(points);
  EXPECT_DOUBLE_EQ(points[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(points[1].speedup, 1.8);
  EXPECT_DOUBLE_EQ(points[1].efficiency, 0.9);
  EXPECT_DOUBLE_EQ(points[3].speedup, 1.0);  // against combination 1's own 1-GPU point
  EXPECT_DOUBLE_EQ(points[3].efficiency, 0.5);
  EXPECT_DOUBLE_EQ(points[5].speedup, 2.0);  // repeat 2 against repeat 2
}

}  // namespace
}  // namespace sb

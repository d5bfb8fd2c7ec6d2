// What limits one run (train/study/step_split.h), with hand-made steps: the parts as shares of the step,
// the accelerator utilisation, the limit named (compute at the bar, else the largest wait), and the input
// workers a rank would need for a 90% AU, for workers that build in the step (the CPU engine) and ahead
// of it (the CUDA engine's host workers).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "metrics/step_phases.h"
#include "train/study/step_split.h"

namespace sb {
namespace {

// A median rank's mean step, seconds; skew NaN unless given (an engine that does not time arrivals).
StepParts parts(double input, double compute, double optimizer, double exposed_comm, double skew = NAN) {
  StepParts p;
  p.rank = 0;
  p.steps = 8;
  p.input_s = input;
  p.compute_s = compute;
  p.optimizer_s = optimizer;
  p.exposed_comm_s = exposed_comm;
  p.skew_s = skew;
  return p;
}

// 400 images over 4 busy worker-seconds: 100 images/s a worker.
InputTotals hundred_a_worker() {
  InputTotals t;
  t.read_seconds = 1;
  t.decode_seconds = 2;
  t.augment_seconds = 1;
  t.images = 400;
  return t;
}

TEST(StepSplit, InputStarvationIsNamedWithTheSharesOfTheStep) {
  // 40 ms a step: input 14, compute 24.8, optimizer 0.8, communication 0, skew 0, rest 0.4.
  const StepSplit s = split_step(parts(0.014, 0.0248, 0.0008, 0.0, 0.0), 0.040);
  EXPECT_DOUBLE_EQ(s.step_s, 0.040);
  EXPECT_NEAR(s.input, 0.35, 1e-12);
  EXPECT_NEAR(s.compute, 0.62, 1e-12);
  EXPECT_NEAR(s.optimizer, 0.02, 1e-12);
  EXPECT_NEAR(s.comm, 0.0, 1e-12);
  EXPECT_NEAR(s.skew, 0.0, 1e-12);
  EXPECT_NEAR(s.rest, 0.01, 1e-12);
  EXPECT_NEAR(s.utilisation, 0.64, 1e-12);
  EXPECT_EQ(s.limit, StepLimit::input);
}

TEST(StepSplit, ComputeLimitsARunWhoseUtilisationReachesTheBar) {
  // Compute 85%, optimizer 6%: AU 91%, the accelerator's own work, though input waits 8% of the step.
  const StepSplit s = split_step(parts(0.008, 0.085, 0.006, 0.001, 0.0), 0.100);
  EXPECT_NEAR(s.utilisation, 0.91, 1e-12);
  EXPECT_EQ(s.limit, StepLimit::compute);
  const std::string line = step_split_line({s, {}, false, 0});
  EXPECT_NE(line.find("AU 91.0%, limited by compute"), std::string::npos) << line;
}

TEST(StepSplit, BelowTheBarTheLargestWaitIsNamedThoughComputeIsLarger) {
  // Compute 60%, input 30%, communication 8%: AU 62%, limited by input.
  const StepSplit s = split_step(parts(0.030, 0.060, 0.002, 0.008, 0.0), 0.100);
  EXPECT_EQ(s.limit, StepLimit::input);
}

TEST(StepSplit, TheWaitForALateRankNamesThatRank) {
  StepParts p = parts(0.001, 0.030, 0.002, 0.004, 0.050);
  p.late_rank = 3;
  const StepSplit s = split_step(p, 0.090);
  EXPECT_EQ(s.limit, StepLimit::skew);
  EXPECT_EQ(s.late_rank, 3);
  const std::string line = step_split_line({s, {}, false, 0});
  EXPECT_NE(line.find("limited by waiting for rank 3"), std::string::npos) << line;
}

TEST(StepSplit, WithoutArrivalsTheSkewIsNotMeasuredAndLiesInTheCommunication) {
  const StepSplit s = split_step(parts(0.001, 0.020, 0.001, 0.060), 0.082);
  EXPECT_TRUE(std::isnan(s.skew));
  EXPECT_NEAR(s.rest, 0.0, 1e-12);
  EXPECT_EQ(s.limit, StepLimit::communication);
  const std::string line = step_split_line({s, {}, false, 0});
  EXPECT_NE(line.find("skew n/a"), std::string::npos) << line;
  EXPECT_NE(line.find("limited by communication"), std::string::npos) << line;
}

TEST(StepSplit, NoSampledStepsIsNotMeasured) {
  const StepSplit s = split_step(StepParts{}, 0.05);
  EXPECT_EQ(s.limit, StepLimit::none);
  EXPECT_EQ(step_split_line({s, {}, false, 0}).rfind("step split: not measured", 0), 0u);
}

// c = 18 ms of compute and optimizer, 30 ms of input wait, nothing else: a 90% AU allows a 20 ms step.
TEST(StepSplit, WorkersThatBuildInTheStepMustFitInTheTenthOfIt) {
  const StepParts p = parts(0.030, 0.016, 0.002, 0.0, 0.0);
  const WorkersForBar w = workers_for_bar(p, 0.048, 16, hundred_a_worker(), InputBuild::in_step);
  EXPECT_TRUE(w.reachable);
  EXPECT_NEAR(w.au_without_input, 1.0, 1e-12);
  EXPECT_NEAR(w.images_per_s, 16 / (0.018 / 0.9 - 0.018), 1e-6);  // 16 images in 2 ms: 8,000 images/s
  EXPECT_DOUBLE_EQ(w.images_per_worker_s, 100);
  EXPECT_EQ(w.workers, 80);
}

TEST(StepSplit, WorkersThatBuildAheadHaveTheWholeStep) {
  const StepParts p = parts(0.030, 0.016, 0.002, 0.0, 0.0);
  const WorkersForBar w = workers_for_bar(p, 0.048, 16, hundred_a_worker(), InputBuild::ahead);
  EXPECT_TRUE(w.reachable);
  EXPECT_NEAR(w.images_per_s, 0.9 * 16 / 0.018, 1e-6);  // 16 images in 20 ms: 800 images/s
  EXPECT_EQ(w.workers, 8);
}

TEST(StepSplit, NoWorkerCountReachesTheBarWhenTheOtherPartsHoldItBelow) {
  // 18 ms of compute and optimizer beside 5 ms of communication: 78% AU even without an input wait.
  const StepParts p = parts(0.030, 0.016, 0.002, 0.005, 0.0);
  for (InputBuild build : {InputBuild::in_step, InputBuild::ahead}) {
    const WorkersForBar w = workers_for_bar(p, 0.053, 16, hundred_a_worker(), build);
    EXPECT_FALSE(w.reachable);
    EXPECT_NEAR(w.au_without_input, 0.018 / 0.023, 1e-12);
    EXPECT_EQ(w.workers, 0);
  }
}

TEST(StepSplit, TheLineGivesTheWorkersOrSaysWhyNone) {
  const StepParts p = parts(0.030, 0.016, 0.002, 0.0, 0.0);
  RunStepSplit run{split_step(p, 0.048), workers_for_bar(p, 0.048, 16, hundred_a_worker(), InputBuild::ahead), false, 2};
  std::string line = step_split_line(run);
  EXPECT_NE(line.find("limited by input: 90% AU needs 800 images/s a rank: 8 worker(s) (this run: 2)"), std::string::npos)
      << line;
  EXPECT_NE(line.find("scalebench io --emulate-gpus"), std::string::npos) << line;

  const StepParts held = parts(0.030, 0.016, 0.002, 0.005, 0.0);
  run = {split_step(held, 0.053), workers_for_bar(held, 0.053, 16, hundred_a_worker(), InputBuild::ahead), false, 2};
  line = step_split_line(run);
  EXPECT_NE(line.find("no worker count reaches 90% AU: without any input wait the other parts hold it at 78%"),
            std::string::npos)
      << line;
}

TEST(StepSplit, NvJpegDecodingGetsNoWorkerCount) {
  const StepSplit s = split_step(parts(0.030, 0.016, 0.002, 0.0, 0.0), 0.048);
  const std::string line = step_split_line({s, {}, true, 2});
  EXPECT_NE(line.find("limited by input: nvJPEG decodes the images (--decode gpu)"), std::string::npos) << line;
  EXPECT_EQ(line.find("worker(s)"), std::string::npos) << line;
}

// The value of the run's attribute `name`; a failure where it has none.
double attribute(const RunStepSplit& s, const std::string& name) {
  for (const NamedValue& v : step_split_attributes(s))
    if (v.name == name) return v.value;
  ADD_FAILURE() << "no attribute " << name;
  return NAN;
}

// The results file carries the line's verdict: for each limit split_step can name, step_split_limited_by
// holds its code and the line says the words of that code; step_split_late_rank the rank a skew limit names.
TEST(StepSplit, TheStoredLimitIsTheLinesVerdict) {
  StepParts late = parts(0.001, 0.030, 0.002, 0.004, 0.050);
  late.late_rank = 3;
  StepParts nobody_late = late;
  nobody_late.late_rank = -1;
  struct Case {
    StepParts parts;
    double step_s;
    StepLimit limit;
    double code;
    const char* words;
  };
  const Case cases[] = {
      {StepParts{}, 0.05, StepLimit::none, 0, "step split: not measured"},
      {parts(0.008, 0.085, 0.006, 0.001, 0.0), 0.100, StepLimit::compute, 1, "limited by compute"},
      {parts(0.030, 0.060, 0.002, 0.008, 0.0), 0.100, StepLimit::input, 2, "limited by input"},
      {parts(0.001, 0.020, 0.001, 0.060), 0.082, StepLimit::communication, 3, "limited by communication"},
      {late, 0.090, StepLimit::skew, 4, "limited by waiting for rank 3"},
      {nobody_late, 0.090, StepLimit::skew, 4, "limited by waiting for other ranks"},
      {parts(0.001, 0.030, 0.002, 0.004, 0.0), 0.090, StepLimit::rest, 5,
       "limited by time outside the timed phases (the loop between steps)"},
  };
  for (const Case& c : cases) {
    const RunStepSplit run{split_step(c.parts, c.step_s), {}, false, 0};
    EXPECT_EQ(run.split.limit, c.limit) << c.words;
    EXPECT_EQ(attribute(run, "step_split_limited_by"), c.code) << c.words;
    const std::string line = step_split_line(run);
    EXPECT_NE(line.find(c.words), std::string::npos) << line;
    const double late_rank = attribute(run, "step_split_late_rank");
    if (c.parts.late_rank >= 0)
      EXPECT_EQ(late_rank, c.parts.late_rank) << line;
    else
      EXPECT_TRUE(std::isnan(late_rank)) << line;
  }
}

// A run of one rank whose two epochs each sampled 4 steps: 40 ms a step, 24 ms of it input wait.
RunSummary run_of_image_files() {
  RunSummary run;
  for (int e = 0; e < 2; ++e) {
    EpochSummary s;
    s.epoch = e;
    s.steps = 4;
    s.global_samples = 64;
    s.wall_max = 0.160;
    s.images_per_s = 400;  // 16 images a step: 40 ms
    s.rank_wall_times = {0.160};
    s.sampled_steps = 4;
    for (int step = 0; step < 4; ++step) {
      s.arrivals.samples.push_back({0.038, 0.024, 0.014, 0.002, 0.0});
      for (int phase = 0; phase < kPhaseCount; ++phase) s.step_phase_ns.push_back(0);
    }
    s.input = hundred_a_worker();
    run.epochs.push_back(s);
  }
  return run;
}

TEST(StepSplit, ARunsSplitTakesItsSteadyEpochsAndTheirInputWork) {
  const RunSummary run = run_of_image_files();
  TrainConfig config;
  config.device = Device::Cpu;
  config.workers = 1;
  RunStepSplit s = split_run_step(run, config, kTrainSettleEpochs);
  EXPECT_EQ(s.split.steps, 4);  // the second epoch's
  EXPECT_NEAR(s.split.step_s, 0.040, 1e-12);
  EXPECT_NEAR(s.split.input, 0.6, 1e-9);
  EXPECT_EQ(s.split.limit, StepLimit::input);
  ASSERT_TRUE(s.workers.has_value());
  // In the step: 16 images within 16 ms / 0.9 - 16 ms.
  EXPECT_NEAR(s.workers->images_per_s, 16 / (0.016 / 0.9 - 0.016), 1e-6);
  EXPECT_EQ(s.workers->workers, 90);
  EXPECT_DOUBLE_EQ(attribute(s, "step_split_workers_for_bar"), 90);

  config.decode = ImageDecoding::Gpu;
  s = split_run_step(run, config, kTrainSettleEpochs);
  EXPECT_TRUE(s.gpu_decoded);
  EXPECT_FALSE(s.workers.has_value());
}

TEST(StepSplit, AnotherRanksSummaryHasNoSplit) {
  RunSummary run = run_of_image_files();
  for (EpochSummary& e : run.epochs) e.rank_wall_times.clear();  // only the root holds every rank's
  const RunStepSplit s = split_run_step(run, TrainConfig{}, kTrainSettleEpochs);
  EXPECT_EQ(s.split.rank, -1);
  EXPECT_TRUE(std::isnan(step_split_attributes(s).front().value));
}

// docs/results_schema.md documents every attribute of the split with its unit, in the table's order.
TEST(StepSplit, EveryAttributeIsDocumented) {
  const std::filesystem::path readme = std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "docs" / "results_schema.md";
  std::ifstream in(readme);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) GTEST_SKIP() << "docs/results_schema.md is not next to this test's source";
  size_t after = 0;
#define SB_STEP_SPLIT_ROW(name, unit, value)                                                       \
  {                                                                                                \
    const std::string row = std::string("| `") + #name + "` | " + unit + " |";                    \
    const size_t at = text.find(row, after);                                                       \
    EXPECT_NE(at, std::string::npos) << "docs/results_schema.md lacks the row, or has it out of order: " << row; \
    if (at != std::string::npos) after = at;                                                       \
  }
  SB_STEP_SPLIT_ATTRIBUTES(SB_STEP_SPLIT_ROW)
#undef SB_STEP_SPLIT_ROW
}

}  // namespace
}  // namespace sb

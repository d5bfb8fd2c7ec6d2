// Schema 3 of the results file: the backward_overlap phase (an epochs column and the /steps phases
// axis) and each run's bucket_ready list, written and read back; older files read the new phase as
// not measured (NaN), never 0, and have no bucket_ready.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "metrics/results_file.h"
#include "metrics/results_reader.h"
#include "predict/study_inputs.h"
#include "scratch_dir.h"

namespace sb {
namespace {

class ResultsSchemaV3 : public test::ScratchDirTest {
 protected:
  std::string path(const char* name) const { return (dir_ / name).string(); }
};

RunMetadata one_rank() {
  RunMetadata m;
  m.command_line = "scalebench train";
  m.config_json = R"({"model":"mlp"})";
  m.hosts = {"node1"};
  m.gpu_models = {"NVIDIA H200"};
  return m;
}

TEST_F(ResultsSchemaV3, BackwardOverlapColumnAndPhaseRoundTrip) {
  {
    ResultsFile file(path("run.h5"), one_rank());
    RunWriter& run = file.main_run();
    EpochRow row;
    row.epoch = 1;
    row.backward_s = 0.25;
    row.backward_overlap_s = 0.75;
    run.append_epoch(row, std::vector<double>{1.0});
    std::vector<int64_t> ns(kStepPhases.size());
    for (size_t p = 0; p < ns.size(); ++p) ns[p] = static_cast<int64_t>(10 * p);
    run.append_steps(std::vector<int64_t>{0}, ns);
    file.close();
  }
  const ResultsReader reader(path("run.h5"));
  EXPECT_EQ(reader.int_attribute("schema_version"), 3);
  const std::vector<EpochRow> rows = reader.epochs();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].backward_s, 0.25);
  EXPECT_DOUBLE_EQ(rows[0].backward_overlap_s, 0.75);
  const StepSamples steps = reader.steps();
  EXPECT_EQ(steps.phases, (std::vector<std::string>{"data", "forward", "backward", "backward_overlap", "comm", "optimizer"}));
  EXPECT_EQ(steps.phase_ns[kPhaseBackwardOverlap], 30);
  EXPECT_TRUE(reader.bucket_ready().empty());  // none written
}

TEST_F(ResultsSchemaV3, BucketReadyIsReplacedEachTimeAndReadBack) {
  {
    ResultsFile file(path("run.h5"), one_rank());
    RunWriter& run = file.main_run();
    run.write_bucket_ready(std::vector<double>{});  // nothing to record: no dataset
    run.write_bucket_ready(std::vector<double>{0.5, 1.0});
    run.write_bucket_ready(std::vector<double>{0.001, 0.002, 0.004});
    file.close();
  }
  const ResultsReader reader(path("run.h5"));
  EXPECT_EQ(reader.bucket_ready(), (std::vector<double>{0.001, 0.002, 0.004}));
  EXPECT_EQ(reader.string_attribute("units", "/bucket_ready"), "s");
}

// A study whose groups record ready times (`record_one_gpu`: the 1-GPU group too, as the CPU engine's do;
// the CUDA engine's one-rank group has no buckets and records none).
void write_study(const std::string& study, bool record_one_gpu) {
  {
    RunMetadata m = one_rank();
    m.world_size = 2;
    m.hosts = {"node1", "node1"};
    m.gpu_models = {"NVIDIA H200", "NVIDIA H200"};
    m.command_line = "scalebench scale";
    m.config_json = R"({"model":"mlp","data":"synthetic:1x8x8:4:256:64","epochs":1,"batch_size":32,"scaling":"weak"})";
    ResultsFile file(study, m);
    file.begin_study(StudyInfo{"weak"});
    for (int64_t gpus : {1, 2}) {
      RunWriter& run = file.add_config(gpus);
      EpochRow row;
      row.epoch = 1;
      row.wall_time_max_s = 1.0;
      row.images_per_s = 320.0 * static_cast<double>(gpus);
      row.backward_s = 0.25;
      row.backward_overlap_s = gpus == 1 ? 0.0 : 0.5;
      row.optimizer_s = 0.1;
      row.exposed_comm_s = 0.0;
      run.append_epoch(row, std::vector<double>(static_cast<size_t>(gpus), 1.0));
      if (gpus > 1 || record_one_gpu)
        run.write_bucket_ready(std::vector<double>{0.01 * static_cast<double>(gpus), 0.02 * static_cast<double>(gpus)});
    }
    file.close();
  }
}

TEST_F(ResultsSchemaV3, PredictionReadsTheOneGpuGroupsBucketReady) {
  const std::string study = path("study.h5");
  write_study(study, true);
  const predict::StudyInputs in = predict::read_study(study);
  ASSERT_TRUE(in.bucket_ready_s.has_value());
  EXPECT_EQ(*in.bucket_ready_s, (std::vector<double>{0.01, 0.02}));
  EXPECT_EQ(in.bucket_ready_group, "gpus_1");
  EXPECT_NEAR(in.bucket_ready_backward_s, 0.025, 1e-12);
  ASSERT_EQ(in.configs.size(), 2u);
  for (const predict::MeasuredConfig& c : in.configs) {
    // 10 steps per epoch; backward compute includes its overlapped part.
    EXPECT_NEAR(c.phases.backward_s, c.gpus == 1 ? 0.025 : 0.075, 1e-12) << c.group;
  }
}

// Without the 1-GPU group's, the 2-GPU group's ready times serve, with that group's backward (its
// overlapped part included) as the whole they are fractions of.
TEST_F(ResultsSchemaV3, PredictionTakesBucketReadyFromTheSmallestCountThatHasThem) {
  const std::string study = path("study.h5");
  write_study(study, false);
  const predict::StudyInputs in = predict::read_study(study);
  ASSERT_TRUE(in.bucket_ready_s.has_value());
  EXPECT_EQ(*in.bucket_ready_s, (std::vector<double>{0.02, 0.04}));
  EXPECT_EQ(in.bucket_ready_group, "gpus_2");
  EXPECT_NEAR(in.bucket_ready_backward_s, 0.075, 1e-12);
}

TEST(ResultsSchemaOlder, VersionOneReadsTheNewPhaseAsNotMeasured) {
  const ResultsReader file((std::filesystem::path(__FILE__).parent_path() / ".." / "data" / "study-schema-v1.h5").string());
  ASSERT_EQ(file.int_attribute("schema_version"), 1);
  for (const std::string& group : file.config_names()) {
    for (const EpochRow& row : file.epochs("/configs/" + group)) {
      EXPECT_TRUE(std::isnan(row.backward_overlap_s)) << group;
      EXPECT_FALSE(std::isnan(row.backward_s)) << group;
    }
    EXPECT_TRUE(file.bucket_ready("/configs/" + group).empty());
  }
}

}  // namespace
}  // namespace sb

// The results file on its own (one process): attributes and rows round-trip, the --out check, a killed
// writer's file, the study layout, and misuse that must not leave a half-written file.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "metrics/results_file.h"
#include "metrics/results_output_check.h"
#include "metrics/results_reader.h"

namespace sb {
namespace {

namespace fs = std::filesystem;

class ResultsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sb_results_unit_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    return names;
  }
  fs::path dir_;
};

RunMetadata three_rank_metadata() {
  RunMetadata m;
  m.git_sha = "abc1234";
  m.command_line = "scalebench train --model wrn --epochs 2 --out run.h5";
  m.config_json = R"({"model":"wrn","epochs":2,"note":"ünïcode"})";
  m.world_size = 3;
  m.node_count = 2;
  m.hosts = {"gpu01", "gpu01", "gpu02"};
  m.gpu_models = {"NVIDIA H200", "NVIDIA H200", "NVIDIA H100 80GB HBM3"};
  m.cuda_version = "13.0";
  m.cudnn_version = "9.10.0";
  m.nccl_version = "2.28.3";
  m.mpi_version = "Open MPI v4.1.4";
  m.start_time = "2026-11-26T10:22:31Z";
  m.slurm_job_id = "4242";
  m.launcher = "slurm";
  m.node_list = "gpu[01-02]";
  m.ranks_per_node = 2;
  return m;
}

EpochRow row_for(int epoch) {
  EpochRow row;
  row.epoch = epoch;
  row.wall_time_max_s = 12.5 + epoch;
  row.wall_time_mean_s = 12.0 + epoch;
  row.wall_time_min_s = 11.5 + epoch;
  row.images_per_s = 4000.0 / epoch;
  row.train_loss = 2.0 / epoch;
  row.test_loss = epoch == 1 ? kNotMeasured : 1.5;  // no evaluation after epoch 1
  row.test_accuracy = epoch == 1 ? kNotMeasured : 0.625;
  row.learning_rate = 0.1 * epoch;
  row.exposed_comm_s = 0.25;
  row.peak_memory_bytes = int64_t{3} << 33;  // past 32 bits
  row.data_s = 1;
  row.forward_s = 2;
  row.backward_s = 4;
  row.comm_s = 0.5;
  row.optimizer_s = 0.125;
  row.input_decode_s = 3.25 * epoch;  // an image-file run's input pipeline
  row.input_bytes_per_s = 1.5e9;
  row.images_skipped = epoch;
  row.peak_allocated_bytes = (int64_t{5} << 32) + epoch;
  return row;  // energy_j stays NaN: not measured
}

// Equal, with NaN equal to NaN (the "not measured" marker must survive the round trip).
void expect_same(double actual, double expected, const char* what) {
  if (std::isnan(expected)) EXPECT_TRUE(std::isnan(actual)) << what;
  else EXPECT_EQ(actual, expected) << what;
}

void expect_same_row(const EpochRow& a, const EpochRow& b) {
  EXPECT_EQ(a.epoch, b.epoch);
  expect_same(a.wall_time_max_s, b.wall_time_max_s, "wall_time_max_s");
  expect_same(a.wall_time_mean_s, b.wall_time_mean_s, "wall_time_mean_s");
  expect_same(a.wall_time_min_s, b.wall_time_min_s, "wall_time_min_s");
  expect_same(a.images_per_s, b.images_per_s, "images_per_s");
  expect_same(a.train_loss, b.train_loss, "train_loss");
  expect_same(a.test_loss, b.test_loss, "test_loss");
  expect_same(a.test_accuracy, b.test_accuracy, "test_accuracy");
  expect_same(a.learning_rate, b.learning_rate, "learning_rate");
  expect_same(a.exposed_comm_s, b.exposed_comm_s, "exposed_comm_s");
  expect_same(a.energy_j, b.energy_j, "energy_j");
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.peak_allocated_bytes, b.peak_allocated_bytes);
  expect_same(a.data_s, b.data_s, "data_s");
  expect_same(a.forward_s, b.forward_s, "forward_s");
  expect_same(a.backward_s, b.backward_s, "backward_s");
  expect_same(a.comm_s, b.comm_s, "comm_s");
  expect_same(a.optimizer_s, b.optimizer_s, "optimizer_s");
  EXPECT_EQ(a.steps_resumed, b.steps_resumed);
  expect_same(a.input_read_s, b.input_read_s, "input_read_s");
  expect_same(a.input_decode_s, b.input_decode_s, "input_decode_s");
  expect_same(a.input_bytes_per_s, b.input_bytes_per_s, "input_bytes_per_s");
  EXPECT_EQ(a.images_skipped, b.images_skipped);
  EXPECT_EQ(a.gpu_decode_cpu_fallbacks, b.gpu_decode_cpu_fallbacks);
}

TEST_F(ResultsFileTest, AttributesAndRowsRoundTrip) {
  const RunMetadata m = three_rank_metadata();
  {
    ResultsFile file(path("run.h5"), m);
    RunWriter& run = file.main_run();
    EXPECT_EQ(run.ranks(), 3);
    run.append_epoch(row_for(1), std::vector<double>{12.5, 11.5, 12.0});
    run.append_epoch(row_for(2), std::vector<double>{13.5, 12.5, 13.0});
    EXPECT_EQ(run.epochs_written(), 2);
    file.close();
  }
  ResultsReader reader(path("run.h5"));
  EXPECT_EQ(reader.int_attribute("schema_version"), kResultsSchemaVersion);
  EXPECT_EQ(reader.string_attribute("tool_version"), SCALEBENCH_VERSION);
  EXPECT_EQ(reader.string_attribute("git_sha"), m.git_sha);
  EXPECT_EQ(reader.string_attribute("command_line"), m.command_line);
  EXPECT_EQ(reader.string_attribute("config_json"), m.config_json);
  EXPECT_EQ(reader.int_attribute("world_size"), 3);
  EXPECT_EQ(reader.int_attribute("node_count"), 2);
  EXPECT_EQ(reader.string_list_attribute("hosts"), m.hosts);
  EXPECT_EQ(reader.string_list_attribute("gpu_models"), m.gpu_models);
  EXPECT_EQ(reader.string_attribute("cuda_version"), "13.0");
  EXPECT_EQ(reader.string_attribute("cudnn_version"), "9.10.0");
  EXPECT_EQ(reader.string_attribute("nccl_version"), "2.28.3");
  EXPECT_EQ(reader.string_attribute("mpi_version"), m.mpi_version);
  EXPECT_EQ(reader.string_attribute("hdf5_version").substr(0, 2), "1.");
  EXPECT_EQ(reader.string_attribute("start_time"), m.start_time);
  EXPECT_TRUE(std::regex_match(reader.string_attribute("end_time"),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_EQ(reader.int_attribute("complete"), 1);
  EXPECT_EQ(reader.string_attribute("slurm_job_id"), "4242");
  EXPECT_EQ(reader.string_attribute("launcher"), "slurm");
  EXPECT_EQ(reader.string_attribute("node_list"), "gpu[01-02]");
  EXPECT_EQ(reader.int_attribute("ranks_per_node"), 2);

  const std::vector<EpochRow> rows = reader.epochs();
  ASSERT_EQ(rows.size(), 2u);
  expect_same_row(rows[0], row_for(1));
  expect_same_row(rows[1], row_for(2));
  EXPECT_EQ(reader.epoch_times_per_rank(), (std::vector<std::vector<double>>{{12.5, 11.5, 12.0}, {13.5, 12.5, 13.0}}));
  const std::vector<std::string> units = reader.string_list_attribute("units", "/epochs");
  ASSERT_EQ(units.size(), 34u);
  EXPECT_EQ(units[18], "1");      // steps_resumed, a count
  EXPECT_EQ(units[19], "MHz");    // sm_clock_min_mhz
  EXPECT_EQ(units[24], "1");      // thermal_limited_fraction, a share
  EXPECT_EQ(units[25], "s");      // input_read_s
  EXPECT_EQ(units[29], "bytes/s");  // input_bytes_per_s
  EXPECT_EQ(units[32], "1");      // gpu_decode_cpu_fallbacks, a count
  EXPECT_EQ(units.back(), "bytes");  // peak_allocated_bytes
  EXPECT_EQ(reader.string_attribute("units", "/epoch_times_per_rank"), "s");
  EXPECT_TRUE(reader.steps().step_numbers.empty());  // optional, and not written
  EXPECT_FALSE(reader.has("/study"));
}

// Root attributes written together are published together; those handed to close() arrive with it.
TEST_F(ResultsFileTest, RootAttributesAtOnceAndAtClose) {
  ResultsFile file(path("run.h5"), three_rank_metadata());
  const NamedValue figures[] = {{"training_flops_per_sample", 1.5e6}, {"peak_tflops_per_device", 400.0}};
  file.write_root_attributes(figures);
  {
    const ResultsReader published(path("run.h5"));
    EXPECT_EQ(published.double_attribute("training_flops_per_sample"), 1.5e6);
    EXPECT_EQ(published.double_attribute("peak_tflops_per_device"), 400.0);
    EXPECT_FALSE(published.has_attribute("total_time_s"));
  }
  const NamedValue totals[] = {{"total_time_s", 12.25}, {"shutdown_engine_s", 0.125}};
  file.close(false, totals);
  const ResultsReader closed(path("run.h5"));
  EXPECT_EQ(closed.double_attribute("total_time_s"), 12.25);
  EXPECT_EQ(closed.double_attribute("shutdown_engine_s"), 0.125);
  EXPECT_EQ(closed.double_attribute("peak_tflops_per_device"), 400.0);
  EXPECT_EQ(closed.int_attribute("complete"), 0);
}

// An epoch's writes under one PublishOnce reach the published file together, when it ends.
TEST_F(ResultsFileTest, APublishOnceScopePublishesItsWritesTogetherAtItsEnd) {
  ResultsFile file(path("run.h5"), three_rank_metadata());
  RunWriter& run = file.main_run();
  run.append_epoch(row_for(1), std::vector<double>{1, 2, 3});
  {
    const RunWriter::PublishOnce once(run);
    run.append_epoch(row_for(2), std::vector<double>{1, 2, 3});
    run.write_attribute("startup_warm_up_s", 0.5);
    const ResultsReader published(path("run.h5"));
    EXPECT_EQ(published.epochs().size(), 1u);
    EXPECT_FALSE(published.has_attribute("startup_warm_up_s"));
  }
  const ResultsReader published(path("run.h5"));
  EXPECT_EQ(published.epochs().size(), 2u);
  EXPECT_EQ(published.double_attribute("startup_warm_up_s"), 0.5);
  file.close();
}

TEST_F(ResultsFileTest, DefaultsAndAStartTimeOfNow) {
  RunMetadata m;
  m.hosts = {"localhost"};
  m.gpu_models = {"cpu"};
  {
    ResultsFile file(path("defaults.h5"), m);
    file.close();
  }
  ResultsReader reader(path("defaults.h5"));
  EXPECT_EQ(reader.string_attribute("cuda_version"), "n/a");
  EXPECT_EQ(reader.string_attribute("slurm_job_id"), "");
  EXPECT_EQ(reader.string_attribute("launcher"), "none");
  EXPECT_TRUE(std::regex_match(reader.string_attribute("start_time"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_FALSE(reader.has("/epochs"));  // main_run() was never asked for
}

TEST_F(ResultsFileTest, PerRankListsOfAThousandsOfRanks) {
  // Past HDF5's 64 KiB limit for attributes kept in the object header.
  RunMetadata m;
  m.world_size = 8192;
  for (int r = 0; r < m.world_size; ++r) {
    m.hosts.push_back("node" + std::to_string(r / 4) + ".cluster.example.org");
    m.gpu_models.push_back("NVIDIA H200");
  }
  {
    ResultsFile file(path("big.h5"), m);
    std::vector<double> times(8192, 1.0);
    file.main_run().append_epoch(row_for(1), times);
    file.close();
  }
  ResultsReader reader(path("big.h5"));
  EXPECT_EQ(reader.string_list_attribute("hosts"), m.hosts);
  EXPECT_EQ(reader.epoch_times_per_rank()[0].size(), 8192u);
}

TEST_F(ResultsFileTest, KilledWriterLeavesEveryFinishedEpoch) {
  const std::string file_path = path("killed.h5");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the writer: two epochs, then killed as by a time limit, without closing
    ResultsFile file(file_path, three_rank_metadata());
    RunWriter& run = file.main_run();
    run.append_epoch(row_for(1), std::vector<double>{1, 2, 3});
    run.append_epoch(row_for(2), std::vector<double>{4, 5, 6});
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  ResultsReader reader(file_path);
  EXPECT_EQ(reader.int_attribute("complete"), 0);
  EXPECT_EQ(reader.string_attribute("end_time"), "");
  const std::vector<EpochRow> rows = reader.epochs();
  ASSERT_EQ(rows.size(), 2u);
  expect_same_row(rows[1], row_for(2));
  EXPECT_EQ(reader.epoch_times_per_rank()[1], (std::vector<double>{4, 5, 6}));
}

TEST_F(ResultsFileTest, StoppedRunEndsUnfinishedWithItsEndTime) {
  {
    ResultsFile file(path("stopped.h5"), three_rank_metadata());
    file.main_run().append_epoch(row_for(1), std::vector<double>{1, 2, 3});
    file.close(false);  // a stop signal ended the run
  }
  ResultsReader reader(path("stopped.h5"));
  EXPECT_EQ(reader.int_attribute("complete"), 0);
  EXPECT_TRUE(std::regex_match(reader.string_attribute("end_time"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_EQ(reader.epochs().size(), 1u);
  EXPECT_EQ(entries(), std::vector<std::string>{"stopped.h5"}) << "the working file is moved into place";
}

TEST_F(ResultsFileTest, ReadableWhileStillOpenForWriting) {
  ResultsFile file(path("live.h5"), three_rank_metadata());
  RunWriter& run = file.main_run();
  for (int epoch = 1; epoch <= 3; ++epoch) {
    run.append_epoch(row_for(epoch), std::vector<double>{1.0 * epoch, 2, 3});
    const std::string snapshot = path("snapshot.h5");
    fs::copy_file(path("live.h5"), snapshot, fs::copy_options::overwrite_existing);
    ResultsReader reader(snapshot);
    EXPECT_EQ(static_cast<int>(reader.epochs().size()), epoch);
    EXPECT_EQ(reader.epoch_times_per_rank().back()[0], 1.0 * epoch);
  }
  file.close();
}

TEST_F(ResultsFileTest, StepsRoundTrip) {
  RunMetadata m;
  m.world_size = 2;
  m.hosts = {"a", "b"};
  m.gpu_models = {"cpu", "cpu"};
  const size_t phases = kStepPhases.size();
  {
    ResultsFile file(path("steps.h5"), m);
    RunWriter& run = file.main_run();
    // [rank][step][phase]: rank r, step s (of this call), phase p -> 100000 r + 100 step_number + p.
    auto block = [&](std::vector<int64_t> numbers) {
      std::vector<int64_t> ns;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t number : numbers)
          for (size_t p = 0; p < phases; ++p) ns.push_back(100000 * r + 100 * number + static_cast<int64_t>(p));
      run.append_steps(numbers, ns);
    };
    block({0, 10});
    block({20, 30, 40});
    EXPECT_THROW(run.append_steps(std::vector<int64_t>{50}, std::vector<int64_t>(3)), std::invalid_argument);
    file.close();
  }
  ResultsReader reader(path("steps.h5"));
  const StepSamples steps = reader.steps();
  EXPECT_EQ(steps.step_numbers, (std::vector<int64_t>{0, 10, 20, 30, 40}));
  EXPECT_EQ(steps.ranks, 2);
  ASSERT_EQ(steps.phase_ns.size(), 2 * 5 * phases);
  for (int64_t r = 0; r < 2; ++r)
    for (size_t s = 0; s < 5; ++s)
      for (size_t p = 0; p < phases; ++p)
        EXPECT_EQ(steps.phase_ns[(static_cast<size_t>(r) * 5 + s) * phases + p],
                  100000 * r + 100 * steps.step_numbers[s] + static_cast<int64_t>(p));
  EXPECT_EQ(reader.string_list_attribute("phases", "/steps"),
            (std::vector<std::string>{"data", "forward", "backward", "backward_overlap", "comm", "optimizer"}));
  EXPECT_EQ(reader.string_attribute("units", "/steps"), "ns");
}

// A file as a resumed run finds it: two epochs of three ranks and their sampled steps, closed.
void write_two_epochs(const std::string& file_path) {
  ResultsFile file(file_path, three_rank_metadata());
  RunWriter& run = file.main_run();
  run.append_epoch(row_for(1), std::vector<double>{1, 2, 3});
  run.append_steps(std::vector<int64_t>{0, 1}, std::vector<int64_t>(3 * 2 * kStepPhases.size(), 7));
  run.append_epoch(row_for(2), std::vector<double>{4, 5, 6});
  file.close(false);
}

std::string bytes_of(const std::string& file_path) {
  std::ifstream in(file_path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

RunMetadata resumed_metadata() {
  RunMetadata m = three_rank_metadata();
  m.command_line = "scalebench train --model wrn --epochs 3 --out run.h5 --resume run.h5.ckpt.h5";
  m.config_json = R"({"model":"wrn","epochs":3})";
  m.start_time = "2026-11-27T08:00:00Z";
  return m;
}

TEST_F(ResultsFileTest, ContinuedFileKeepsItsRowsAndAppends) {
  const std::string file_path = path("run.h5");
  write_two_epochs(file_path);
  const std::string before = bytes_of(file_path);
  {
    ResultsFile file(file_path, resumed_metadata(), ResultsOpen::Continue);
    RunWriter& run = file.main_run();
    EXPECT_EQ(run.epochs_written(), 2);
    file.write_root_attribute("training_flops_per_sample", 1.5);
    EXPECT_EQ(bytes_of(file_path), before) << "nothing is published before the first new row";

    EpochRow partial = row_for(3);
    partial.steps_resumed = 5;
    run.append_epoch(partial, std::vector<double>{7, 8, 9});
    ResultsReader live(file_path);  // published: the old rows and the new one, not complete
    EXPECT_EQ(live.epochs().size(), 3u);
    EXPECT_EQ(live.int_attribute("complete"), 0);
    EXPECT_EQ(live.string_attribute("end_time"), "");
    run.append_steps(std::vector<int64_t>{69, 70}, std::vector<int64_t>(3 * 2 * kStepPhases.size(), 9));
    file.close();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"run.h5"}) << "no working file is left";
  ResultsReader reader(file_path);
  EXPECT_EQ(reader.int_attribute("complete"), 1);
  EXPECT_EQ(reader.string_attribute("start_time"), "2026-11-26T10:22:31Z") << "the first run's start stays";
  EXPECT_EQ(reader.string_attribute("command_line"), three_rank_metadata().command_line);
  EXPECT_EQ(reader.string_list_attribute("resume_command_lines"), std::vector<std::string>{resumed_metadata().command_line});
  EXPECT_EQ(reader.string_attribute("config_json"), resumed_metadata().config_json);
  EXPECT_EQ(reader.double_attribute("training_flops_per_sample"), 1.5);
  const std::vector<EpochRow> rows = reader.epochs();
  ASSERT_EQ(rows.size(), 3u);
  expect_same_row(rows[0], row_for(1));
  expect_same_row(rows[1], row_for(2));
  EXPECT_EQ(rows[2].steps_resumed, 5);
  EXPECT_EQ(reader.epoch_times_per_rank()[2], (std::vector<double>{7, 8, 9}));
  const StepSamples steps = reader.steps();
  EXPECT_EQ(steps.step_numbers, (std::vector<int64_t>{0, 1, 69, 70}));
  EXPECT_EQ(steps.phase_ns.back(), 9);
  EXPECT_EQ(steps.phase_ns.front(), 7);
}

TEST_F(ResultsFileTest, ContinuedFileLeftWithoutARowStaysByteIdentical) {
  const std::string file_path = path("run.h5");
  write_two_epochs(file_path);
  const std::string before = bytes_of(file_path);
  {
    ResultsFile file(file_path, resumed_metadata(), ResultsOpen::Continue);
    file.main_run();  // then an exception unwinds past it, as a failed check would
  }
  EXPECT_EQ(bytes_of(file_path), before);
  EXPECT_EQ(entries(), std::vector<std::string>{"run.h5"});

  RunMetadata other_ranks = resumed_metadata();
  other_ranks.world_size = 2;
  other_ranks.hosts.resize(2);
  other_ranks.gpu_models.resize(2);
  EXPECT_THROW(ResultsFile(file_path, other_ranks, ResultsOpen::Continue), std::invalid_argument);
  EXPECT_EQ(bytes_of(file_path), before);
  EXPECT_EQ(entries(), std::vector<std::string>{"run.h5"});
}

TEST_F(ResultsFileTest, FileDestroyedAfterRowsKeepsThemAndLeavesNoWorkingFile) {
  {
    ResultsFile file(path("unwound.h5"), three_rank_metadata());
    file.main_run().append_epoch(row_for(1), std::vector<double>{1, 2, 3});
  }  // no close(): an exception unwound past it
  EXPECT_EQ(entries(), std::vector<std::string>{"unwound.h5"});
  ResultsReader reader(path("unwound.h5"));
  EXPECT_EQ(reader.int_attribute("complete"), 0);
  EXPECT_EQ(reader.epochs().size(), 1u);
}

TEST_F(ResultsFileTest, StudyRoundTrip) {
  RunMetadata m;
  m.world_size = 4;
  m.hosts = {"n", "n", "n", "n"};
  m.gpu_models = {"cpu", "cpu", "cpu", "cpu"};
  std::vector<StudyRow> written;
  {
    ResultsFile file(path("study.h5"), m);
    file.begin_study({.mode = "strong", .baseline_gpus = 1, .target_accuracy = 0.91, .settle_epochs = 2});
    for (int64_t gpus : {1, 2, 4}) {
      RunWriter& config = file.add_config(gpus, R"({"batch_size":)" + std::to_string(256 / gpus) + "}");
      EXPECT_EQ(config.ranks(), gpus);
      config.append_epoch(row_for(1), std::vector<double>(static_cast<size_t>(gpus), 8.0 / gpus));
      StudyRow row;
      row.gpus = gpus;
      row.images_per_s = 1000.0 * gpus;
      row.epoch_time_s = 8.0 / gpus;
      row.speedup = gpus;
      row.efficiency = 1.0;
      row.exposed_comm_fraction = 0.01 * gpus;
      row.time_to_accuracy_s = gpus == 4 ? kNotMeasured : 30.0 / gpus;  // 4 GPUs never reached the target
      file.append_study_row(row);
      written.push_back(row);
    }
    EXPECT_THROW(file.add_config(2), std::invalid_argument);  // one group per GPU count
    EXPECT_THROW(file.add_config(8), std::invalid_argument);  // more GPUs than the job has
    EXPECT_THROW(file.begin_study({.mode = "weak"}), std::logic_error);
    file.close();
  }
  ResultsReader reader(path("study.h5"));
  const StudyInfo info = reader.study_info();
  EXPECT_EQ(info.mode, "strong");
  EXPECT_EQ(info.baseline_gpus, 1);
  EXPECT_EQ(info.target_accuracy, 0.91);
  EXPECT_EQ(info.settle_epochs, 2);  // the epochs each configuration left out of its figures
  const std::vector<StudyRow> rows = reader.study();
  ASSERT_EQ(rows.size(), written.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].gpus, written[i].gpus);
    expect_same(rows[i].images_per_s, written[i].images_per_s, "images_per_s");
    expect_same(rows[i].epoch_time_s, written[i].epoch_time_s, "epoch_time_s");
    expect_same(rows[i].speedup, written[i].speedup, "speedup");
    expect_same(rows[i].efficiency, written[i].efficiency, "efficiency");
    expect_same(rows[i].exposed_comm_fraction, written[i].exposed_comm_fraction, "exposed_comm_fraction");
    expect_same(rows[i].time_to_accuracy_s, written[i].time_to_accuracy_s, "time_to_accuracy_s");
  }
  EXPECT_EQ(reader.config_gpus(), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(reader.string_attribute("config_json", "/configs/gpus_2"), R"({"batch_size":128})");
  EXPECT_EQ(reader.epoch_times_per_rank("/configs/gpus_4"), (std::vector<std::vector<double>>{{2.0, 2.0, 2.0, 2.0}}));
  EXPECT_FALSE(reader.has("/epochs"));
}

TEST_F(ResultsFileTest, MisuseThrowsAndBadMetadataCreatesNothing) {
  RunMetadata m = three_rank_metadata();
  m.hosts.pop_back();  // 2 hosts for 3 ranks
  EXPECT_THROW(ResultsFile(path("bad.h5"), m), std::invalid_argument);
  EXPECT_TRUE(entries().empty());

  ResultsFile file(path("ok.h5"), three_rank_metadata());
  EXPECT_THROW(file.main_run().append_epoch(row_for(1), std::vector<double>{1.0}), std::invalid_argument);
  EXPECT_EQ(file.main_run().epochs_written(), 0);
  EXPECT_THROW(file.begin_study({.mode = "linear"}), std::invalid_argument);
  EXPECT_THROW(file.append_study_row(StudyRow{}), std::logic_error);
  file.close();
  EXPECT_THROW(file.main_run(), std::logic_error);
  EXPECT_THROW(file.close(), std::logic_error);
}

// ---------------------------------------------------------------------------------- check_output_writable

// The UserError's message, or "" when none was thrown.
std::string output_error(const std::string& path) {
  try {
    check_output_writable(path);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST_F(ResultsFileTest, OutputCheckAcceptsAWritablePathAndLeavesNothing) {
  EXPECT_EQ(output_error(path("new.h5")), "");
  EXPECT_TRUE(entries().empty());

  std::ofstream(path("existing.h5")) << "old results";
  EXPECT_EQ(output_error(path("existing.h5")), "");
  std::ifstream in(path("existing.h5"));
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "old results");  // checked, not touched
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(ResultsFileTest, OutputCheckNamesPathAndReason) {
  const std::string missing = path("no/such/dir/run.h5");
  std::string message = output_error(missing);
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_NE(message.find("does not exist"), std::string::npos) << message;

  message = output_error(dir_.string());  // a directory (root can't be kept out by permission bits)
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("is a directory"), std::string::npos) << message;

  message = output_error(dir_.string() + "/");
  EXPECT_NE(message.find("directory"), std::string::npos) << message;

  std::ofstream(path("plain.txt")) << "x";
  message = output_error(path("plain.txt") + "/run.h5");  // a file where a directory should be
  EXPECT_NE(message.find("is not a directory"), std::string::npos) << message;

  message = output_error("");
  EXPECT_NE(message.find("empty"), std::string::npos) << message;

  if (fs::exists("/proc/version")) {  // a read-only file system, whoever runs the test
    message = output_error("/proc/sb_results.h5");
    EXPECT_NE(message.find("/proc/sb_results.h5"), std::string::npos) << message;
    EXPECT_NE(message, "");
  }
}

TEST_F(ResultsFileTest, BadOutputPathFailsBeforeCreatingAnything) {
  EXPECT_THROW(ResultsFile(path("missing/run.h5"), three_rank_metadata()), UserError);
  EXPECT_THROW(ResultsFile(dir_.string(), three_rank_metadata()), UserError);
  EXPECT_TRUE(entries().empty());
}

TEST_F(ResultsFileTest, ReaderRejectsMissingAndForeignFiles) {
  EXPECT_THROW(ResultsReader(path("absent.h5")), UserError);
  std::ofstream(path("text.h5")) << "not hdf5";
  EXPECT_THROW(ResultsReader(path("text.h5")), UserError);
}

}  // namespace
}  // namespace sb

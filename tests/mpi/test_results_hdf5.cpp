// The HDF5 file written by rank 0 holds every rank's times. Every rank contributes its own epoch time,
// rank 0 gathers them through the Communicator and appends a row per epoch; after each append the file
// on disk is complete and readable, both as a snapshot (what a job killed now would leave) and live, by
// another process, while rank 0 still holds it open for writing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "comm/mpi_session.h"
#include "comm/root_check.h"
#include "comm/string_collectives.h"
#include "metrics/results_file.h"
#include "metrics/results_output_check.h"
#include "metrics/results_reader.h"

namespace sb {
namespace {

namespace fs = std::filesystem;

// A distinct, exactly representable time for every (epoch, rank).
double epoch_time(int epoch, int rank) { return 10.0 + epoch + 0.125 * rank; }

// Rank 0 makes a fresh directory; every rank learns its name.
std::string shared_temp_dir(Communicator& comm) {
  std::string dir;
  if (comm.rank() == 0) {
    std::string pattern = (fs::temp_directory_path() / "sb_results_mpi_XXXXXX").string();
    dir = mkdtemp(pattern.data());
  }
  return broadcast_string(comm, dir, 0);
}

RunMetadata metadata_for(Communicator& comm) {
  RunMetadata metadata;
  metadata.git_sha = "test";
  metadata.command_line = "test_results_hdf5";
  metadata.config_json = R"({"test":true})";
  metadata.world_size = comm.size();
  metadata.hosts = allgather_strings(comm, processor_name());
  metadata.gpu_models = allgather_strings(comm, "cpu");
  metadata.mpi_version = mpi_library_version();
  return metadata;
}

// Rank 0's row from the gathered times, as the trainer computes it.
EpochRow summarise(int epoch, const std::vector<double>& times) {
  EpochRow row;
  row.epoch = epoch;
  row.wall_time_max_s = *std::max_element(times.begin(), times.end());
  row.wall_time_min_s = *std::min_element(times.begin(), times.end());
  row.wall_time_mean_s = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
  row.images_per_s = 50000.0 / row.wall_time_max_s;
  return row;
}

// What the file must hold after `epochs` epochs of a run of `ranks` ranks.
void expect_epochs(const ResultsReader& reader, const std::string& run, int epochs, int ranks) {
  const std::vector<EpochRow> rows = reader.epochs(run);
  const std::vector<std::vector<double>> times = reader.epoch_times_per_rank(run);
  ASSERT_EQ(static_cast<int>(rows.size()), epochs);
  ASSERT_EQ(static_cast<int>(times.size()), epochs);
  for (int e = 0; e < epochs; ++e) {
    EXPECT_EQ(rows[static_cast<size_t>(e)].epoch, e + 1);
    EXPECT_EQ(rows[static_cast<size_t>(e)].wall_time_max_s, epoch_time(e + 1, ranks - 1));
    EXPECT_EQ(rows[static_cast<size_t>(e)].wall_time_min_s, epoch_time(e + 1, 0));
    ASSERT_EQ(static_cast<int>(times[static_cast<size_t>(e)].size()), ranks);
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(times[static_cast<size_t>(e)][static_cast<size_t>(r)], epoch_time(e + 1, r))
          << "epoch " << e + 1 << ", rank " << r;
  }
}

// Runs one rank's checks of a file. An exception (an unreadable file) becomes a failure here instead of
// leaving the test early, so that this rank still reaches the collectives the other ranks wait in.
template <typename Checks> void on_this_rank(const Checks& checks) {
  try {
    checks();
  } catch (const std::exception& error) {
    ADD_FAILURE() << error.what();
  }
}

TEST(ResultsHdf5, Rank0WritesEveryRanksEpochTimes) {
  auto world = MpiCommunicator::world();
  Communicator& comm = *world;
  const int last = comm.size() - 1;
  const std::string dir = shared_temp_dir(comm);
  const std::string path = dir + "/run.h5";
  check_on_root(comm, 0, [&] { check_output_writable(path); });
  const RunMetadata metadata = metadata_for(comm);

  std::unique_ptr<ResultsFile> file;
  if (comm.rank() == 0) file = std::make_unique<ResultsFile>(path, metadata);
  RunWriter* writer = file ? &file->main_run() : nullptr;

  constexpr int kEpochs = 3;
  for (int epoch = 1; epoch <= kEpochs; ++epoch) {
    const std::vector<double> times = comm.gather(epoch_time(epoch, comm.rank()), 0);
    if (writer) {
      writer->append_epoch(summarise(epoch, times), times);
      on_this_rank([&] {
        // What a job killed now would leave: a copy of the bytes on disk, read as a file of its own.
        const std::string snapshot = dir + "/snapshot-" + std::to_string(epoch) + ".h5";
        fs::copy_file(path, snapshot);
        ResultsReader reader(snapshot);
        EXPECT_EQ(reader.int_attribute("complete"), 0);
        EXPECT_EQ(reader.string_attribute("end_time"), "");
        expect_epochs(reader, "/", epoch, comm.size());
      });
    }
    comm.barrier();
    if (comm.rank() == last) {  // another process reads the live file (rank 0 itself when alone)
      on_this_rank([&] { expect_epochs(ResultsReader(path), "/", epoch, comm.size()); });
    }
    comm.barrier();
  }
  if (file) file->close();
  comm.barrier();

  if (comm.rank() == last) {
    on_this_rank([&] {
      ResultsReader reader(path);
      EXPECT_EQ(reader.int_attribute("complete"), 1);
      EXPECT_EQ(reader.int_attribute("world_size"), comm.size());
      EXPECT_EQ(reader.string_list_attribute("hosts"), metadata.hosts);
      EXPECT_EQ(reader.string_list_attribute("gpu_models"),
                std::vector<std::string>(static_cast<size_t>(comm.size()), "cpu"));
      expect_epochs(reader, "/", kEpochs, comm.size());
    });
  }
  comm.barrier();
  if (comm.rank() == 0) fs::remove_all(dir);
}

TEST(ResultsHdf5, ScaleStyleConfigsOnSubCommunicators) {
  auto world = MpiCommunicator::world();
  Communicator& comm = *world;
  const std::string dir = shared_temp_dir(comm);
  const std::string path = dir + "/study.h5";
  const RunMetadata metadata = metadata_for(comm);

  std::unique_ptr<ResultsFile> file;
  if (comm.rank() == 0) {
    file = std::make_unique<ResultsFile>(path, metadata);
    file->begin_study({.mode = "weak", .baseline_gpus = 1});
  }
  std::vector<int> counts;
  for (int gpus = 1; gpus <= comm.size(); gpus *= 2) counts.push_back(gpus);

  for (int gpus : counts) {
    // The first `gpus` ranks train; world rank 0 is rank 0 of every configuration, and owns the file.
    std::unique_ptr<Communicator> sub = comm.split(comm.rank() < gpus ? 0 : -1, comm.rank());
    if (sub) {
      RunWriter* writer = file ? &file->add_config(gpus) : nullptr;
      for (int epoch = 1; epoch <= 2; ++epoch) {
        const std::vector<double> times = sub->gather(epoch_time(epoch, sub->rank()), 0);
        if (writer) writer->append_epoch(summarise(epoch, times), times);
      }
      // Sampled step phases: rank r's step s phase p takes 1000 r + 10 s + p ns.
      std::vector<int64_t> mine;
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t p = 0; p < static_cast<int64_t>(kStepPhases.size()); ++p) mine.push_back(1000 * sub->rank() + 10 * s + p);
      const std::vector<int64_t> all = sub->gather(std::span<const int64_t>(mine), 0);
      if (writer) writer->append_steps(std::vector<int64_t>{0, 5, 10}, all);
    }
    if (file) {
      StudyRow row;
      row.gpus = gpus;
      row.epoch_time_s = epoch_time(2, gpus - 1);
      row.images_per_s = 50000.0 * gpus / row.epoch_time_s;
      row.speedup = row.images_per_s / (50000.0 / epoch_time(2, 0));
      row.efficiency = row.speedup / gpus;
      file->append_study_row(row);
    }
    comm.barrier();
  }
  if (file) {
    file->close();
    on_this_rank([&] {
      ResultsReader reader(path);
      EXPECT_EQ(reader.config_gpus(), std::vector<int64_t>(counts.begin(), counts.end()));
      const std::vector<StudyRow> study = reader.study();
      ASSERT_EQ(study.size(), counts.size());
      EXPECT_EQ(reader.study_info().mode, "weak");
      for (size_t i = 0; i < counts.size(); ++i) {
        const int gpus = counts[i];
        const std::string run = "/configs/gpus_" + std::to_string(gpus);
        EXPECT_EQ(study[i].gpus, gpus);
        EXPECT_EQ(reader.int_attribute("gpus", run), gpus);
        expect_epochs(reader, run, 2, gpus);
        const StepSamples steps = reader.steps(run);
        EXPECT_EQ(steps.ranks, gpus);
        EXPECT_EQ(steps.step_numbers, (std::vector<int64_t>{0, 5, 10}));
        ASSERT_EQ(steps.phase_ns.size(), static_cast<size_t>(gpus) * 3 * kStepPhases.size());
        EXPECT_EQ(steps.phase_ns.back(), 1000 * (gpus - 1) + 10 * 2 + static_cast<int64_t>(kStepPhases.size()) - 1);
      }
      EXPECT_FALSE(reader.has("/epochs"));  // a study file has no root run
    });
    fs::remove_all(dir);
  }
  comm.barrier();
}

}  // namespace
}  // namespace sb

// One rank's emulated training (scalebench io --emulate-gpus) on a small image folder: the emulated GPUs
// consume whole batches, their compute is batch / rate per step, and the pipeline's counters count the
// files it read, with and without dropping their cached pages.
#include <gtest/gtest.h>

#include "data/emulated_training.h"
#include "data/image_data_sets.h"
#include "image_folder_files.h"
#include "scratch_dir.h"

namespace sb {
namespace {

class IoEmulationRun : public test::ScratchDirTest {
 protected:
  EmulationSettings settings(int gpus, bool drop_pages) const {
    EmulationSettings s;
    s.gpus = gpus;
    s.workers = 2;
    s.batch = 3;
    s.warm_up_steps = 1;
    s.steps = 4;
    s.rate = 3000;
    s.drop_pages = drop_pages;
    return s;
  }
};

TEST_F(IoEmulationRun, TheEmulatedGpusConsumeWholeBatchesAndComputeBatchOverRate) {
  test::make_image_folder(dir_, 2, 6, 1);
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, 16, 20);
  for (bool drop : {false, true}) {
    const EmulationRun run = run_emulated_training(data.train, settings(2, drop));
    EXPECT_EQ(run.images, 4 * 2 * 3);
    EXPECT_DOUBLE_EQ(run.compute_s, 4 * 3 / 3000.0);
    EXPECT_GE(run.wall_s, run.compute_s);
    EXPECT_GT(run.totals.bytes, 0);
    EXPECT_GT(run.totals.images, 0);  // the workers built batches during the timed steps
  }
}

// A target that builds on the CPU, as --decode cpu, and counts the slots it was given and the batches
// taken for steps; with `in_place`, its steps read their batches where they were built, as --decode gpu's.
class CountingTarget final : public EmulatedTarget {
 public:
  CountingTarget(const Dataset& data, InputCounters& counters, bool in_place, int& slots, int64_t& uploaded_rows)
      : source_(make_batch_source(data, true, BatchOptions{}, BatchFormat{}, BadImages::Fail, 0, counters)),
        in_place_(in_place),
        slots_(slots),
        uploaded_rows_(uploaded_rows) {}
  const BatchSource& source() const override { return *source_; }
  void add_slot(const std::byte*) override { ++slots_; }
  void upload(const HostBatch& batch) override { uploaded_rows_ += batch.rows; }
  bool reads_in_place() const override { return in_place_; }

 private:
  std::unique_ptr<BatchSource> source_;
  bool in_place_;
  int& slots_;
  int64_t& uploaded_rows_;
};

TEST_F(IoEmulationRun, EveryBatchAnEmulatedGpuTakesGoesToTheTargetOnce) {
  test::make_image_folder(dir_, 2, 6, 1);
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, 16, 20);
  for (const bool in_place : {false, true}) {
    SCOPED_TRACE(in_place ? "read in place" : "uploaded");
    int slots = 0;
    int64_t uploaded_rows = 0;
    const EmulationRun run = run_emulated_training(data.train, settings(2, false), [&](InputCounters& counters) {
      return std::make_unique<CountingTarget>(data.train, counters, in_place, slots, uploaded_rows);
    });
    // 4 ring slots per emulated GPU; read in place, 2 more, as the steps hold theirs while they compute.
    EXPECT_EQ(slots, (in_place ? 6 : 4) * 2);
    EXPECT_EQ(uploaded_rows, (1 + 4) * 2 * 3);  // the warm-up step and the timed ones, each GPU a batch
    EXPECT_EQ(run.images, 4 * 2 * 3);
  }
}

TEST_F(IoEmulationRun, ARankWithoutAnEmulatedGpuReturnsAtOnce) {
  test::make_image_folder(dir_, 2, 3, 1);
  const TrainTest data = load_image_folder(dir_.string(), 0);
  const EmulationRun run = run_emulated_training(data.train, settings(0, false));
  EXPECT_EQ(run.images, 0);
  EXPECT_EQ(run.wall_s, 0);
}

}  // namespace
}  // namespace sb

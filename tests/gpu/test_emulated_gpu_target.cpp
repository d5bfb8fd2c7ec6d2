// scalebench io --emulate-gpus --decode gpu: one rank's emulated GPUs fed by nvJPEG-decoded batches
// consume whole batches, and the pipeline counts the reads, nvJPEG's decode and crop, and the upload of each
// taken batch's labels (the step reads the images in place), with and without dropping the files' cached
// pages. Skips without nvJPEG or a GPU.
#include <gtest/gtest.h>

#include "data/cuda/emulated_gpu_target.h"
#include "data/emulated_training.h"
#include "data/image_data_sets.h"
#include "gpu_test_util.h"
#include "unit/image_folder_files.h"
#include "unit/scratch_dir.h"

namespace sb::cuda {
namespace {

class EmulatedGpuTarget : public test::ScratchDirTest {};

TEST_F(EmulatedGpuTarget, TheEmulatedGpusConsumeNvjpegBatchesAndTheCopyIsCounted) {
#ifndef SCALEBENCH_HAVE_NVJPEG
  GTEST_SKIP() << "built without nvJPEG";
#endif
  SKIP_WITHOUT_GPU();
  test::make_image_folder(dir_, 2, 6, 1);
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, 16, 20);
  for (bool drop : {false, true}) {
    const EmulationSettings s{.gpus = 2, .workers = 2, .batch = 3, .warm_up_steps = 1, .steps = 4, .rate = 3000,
                              .format = BatchFormat{}, .seed = 1, .ranks = 1, .rank = 0, .drop_pages = drop};
    const EmulationRun run = run_emulated_training(data.train, s, gpu_decode_target(data.train, s.format, s.batch, 0));
    EXPECT_EQ(run.images, 4 * 2 * 3);
    EXPECT_DOUBLE_EQ(run.compute_s, 4 * 3 / 3000.0);
    EXPECT_GE(run.wall_s, run.compute_s);
    EXPECT_GT(run.totals.bytes, 0);
    EXPECT_GT(run.totals.images, 0);
    EXPECT_GT(run.totals.decode_seconds, 0);  // nvJPEG's decode, which the worker waits for
    EXPECT_GT(run.totals.copy_seconds, 0);    // each taken batch's labels uploaded (the images stay in place)
    // Every third training file is a PNG, which nvJPEG leaves to the CPU; the JPEGs are nvJPEG's.
    EXPECT_GT(run.totals.cpu_fallbacks, 0);
    EXPECT_LT(run.totals.cpu_fallbacks, run.totals.images);
  }
}

}  // namespace
}  // namespace sb::cuda

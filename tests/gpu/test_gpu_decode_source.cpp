// --decode gpu against --decode cpu: the same files give the same crops, flips and labels, the pixels
// equal to within the two JPEG decoders' rounding (nvJPEG against libjpeg-turbo), for training's random
// crops and evaluation's centre crop. Built only with nvJPEG; skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "core/cuda_check.h"
#include "data/image/decoded_image.h"
#include "data/image_batch.h"
#include "data/image_data_sets.h"
#include "gpu_test_util.h"
#include "nn/cuda/device_buffer.h"
#include "data/cuda/gpu_decode_source.h"
#include "unit/image_folder_files.h"
#include "unit/scratch_dir.h"

namespace sb::cuda {
namespace {

constexpr int kSize = 32;

class GpuDecodeSourceTest : public test::ScratchDirTest {};

// The batch of `data` built by `source` into host memory (fp32 NCHW), and its labels.
std::vector<float> cpu_batch(const Dataset& data, bool training, const std::vector<int64_t>& indices, const AugmentKey& key,
                             std::vector<int32_t>& labels) {
  InputCounters counters;
  const ImageBatchBuilder builder(data, training, BatchFormat{}, BadImages::Fail, 0, counters);
  std::vector<float> out(indices.size() * 3 * kSize * kSize);
  labels.assign(indices.size(), -1);
  builder.fill(indices, key, 0, 0, static_cast<int64_t>(indices.size()), reinterpret_cast<std::byte*>(out.data()), labels.data());
  return out;
}

std::vector<float> gpu_batch(const Dataset& data, bool training, const std::vector<int64_t>& indices, const AugmentKey& key,
                             std::vector<int32_t>& labels, InputCounters& counters) {
  const auto n = static_cast<int64_t>(indices.size());
  GpuDecoders decoders(n, BadImages::Fail, 0, counters);
  DeviceBuffer device;
  std::vector<std::byte> host_rows(static_cast<size_t>(n));
  const size_t bytes = static_cast<size_t>(n) * 3 * kSize * kSize * sizeof(float);
  decoders.add_slot(host_rows.data(), device.ensure(bytes));
  const GpuDecodeSource source(data, training, BatchFormat{}, decoders);
  labels.assign(indices.size(), -1);
  // Two workers' parts, as the pipeline splits a batch.
  source.fill(indices, key, 0, 0, n / 2, host_rows.data(), labels.data());
  source.fill(indices, key, 0, n / 2, n, host_rows.data(), labels.data());
  std::vector<float> out(indices.size() * 3 * kSize * kSize);
  CHECK_CUDA(cudaMemcpy(out.data(), device.data(), bytes, cudaMemcpyDeviceToHost));
  return out;
}

TEST_F(GpuDecodeSourceTest, BothDecodersTakeTheSameCropsToWithinDecoderRounding) {
  SKIP_WITHOUT_GPU();
  test::make_image_folder(dir_, 3, 4, 2);  // 16-52 pixels wide: decoded at full size by both
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, kSize, 36);
  for (bool training : {true, false}) {
    const Dataset& d = training ? data.train : data.test;
    std::vector<int64_t> indices(static_cast<size_t>(d.size()));
    std::iota(indices.begin(), indices.end(), int64_t{0});
    const AugmentKey key{9, 1, 0};
    std::vector<int32_t> cpu_labels, gpu_labels;
    InputCounters counters;
    const std::vector<float> cpu = cpu_batch(d, training, indices, key, cpu_labels);
    const std::vector<float> gpu = gpu_batch(d, training, indices, key, gpu_labels, counters);
    EXPECT_EQ(cpu_labels, gpu_labels);
    double sum = 0, worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      const size_t c = (i / (kSize * kSize)) % 3;
      const double levels = std::abs(cpu[i] - gpu[i]) * d.std[c] * 255;  // back in pixel levels
      sum += levels;
      worst = std::max(worst, levels);
    }
    // PNGs decode on the CPU either way (counted); JPEGs differ by the decoders' IDCT and chroma upsampling.
    EXPECT_LT(sum / static_cast<double>(cpu.size()), 4.0) << (training ? "training" : "evaluation");
    EXPECT_LT(worst, 48.0) << (training ? "training" : "evaluation");
    EXPECT_EQ(counters.totals().images, d.size());
    EXPECT_EQ(counters.totals().cpu_fallbacks, training ? 3 * 1 : 0);  // one PNG per class in train/
  }
}

TEST_F(GpuDecodeSourceTest, ABadFileEndsTheBatchNamingItOrIsSkipped) {
  SKIP_WITHOUT_GPU();
  test::make_image_folder(dir_, 2, 3, 1);
  const std::filesystem::path bad = dir_ / "train" / "class1" / "99.jpg";
  test::write_file(bad, test::Bytes{'n', 'o', 't'});
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, kSize, 36);
  std::vector<int64_t> indices(static_cast<size_t>(data.train.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::vector<int32_t> labels;
  InputCounters counters;
  try {
    gpu_batch(data.train, true, indices, AugmentKey{}, labels, counters);
    FAIL() << "a text file decoded";
  } catch (const ImageDecodeError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sb::cuda

// The batch-assembly kernel against the CPU batch assembly (src/data/batch.*): the same crops, flips,
// normalisation and labels for CIFAR-like, MNIST-like and larger samples, with and without augmentation, in
// NCHW and NHWC, fp32 (bit-exact) and fp16/bf16 (the fp32 value rounded once), through both kernels.
#include <gtest/gtest.h>

#include <utility>

#include "data/batch.h"
#include "gpu_test_util.h"
#include "kernels/augment.h"

namespace {

using namespace sb;
using namespace sb::gputest;

Dataset random_dataset(int channels, int size, int64_t count, std::mt19937_64& rng) {
  Dataset d;
  d.name = "random";
  d.channels = channels;
  d.height = size;
  d.width = size;
  d.num_classes = 10;
  d.images.resize(static_cast<size_t>(count * channels * size * size));
  std::uniform_int_distribution<int> byte(0, 255), label(0, 9);
  for (uint8_t& b : d.images) b = static_cast<uint8_t>(byte(rng));
  d.labels.resize(static_cast<size_t>(count));
  for (int32_t& l : d.labels) l = label(rng);
  const float means[] = {0.4914f, 0.4822f, 0.4465f}, stds[] = {0.2470f, 0.2435f, 0.2616f};
  for (int c = 0; c < channels; ++c) {
    d.mean.push_back(means[c]);
    d.std.push_back(stds[c]);
  }
  return d;
}

TEST(KernelsAugment, GatherBatchMatchesCpuAssembly) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(61);
  // Rows of whole groups of 4 pixels (32, 28, 224) take the 4-pixel kernel, 3x224x224 in several parts;
  // 3x97x97 takes the per-element kernel, split into several parts, the last one short.
  for (const auto& [channels, size] : {std::pair{3, 32}, std::pair{1, 28}, std::pair{3, 97}, std::pair{3, 224}}) {
    const int64_t count = size > 100 ? 20 : 300, batch = size > 100 ? 9 : 67;
    const Dataset data = random_dataset(channels, size, count, rng);
    std::uniform_int_distribution<int64_t> pick(0, count - 1);
    std::vector<int64_t> indices(static_cast<size_t>(batch));
    for (int64_t& i : indices) i = pick(rng);

    DeviceMem dimages = to_device_raw(data.images), dlabels = to_device_raw(data.labels),
              dindices = to_device_raw(indices);
    for (BatchOptions options : {BatchOptions{}, cifar_augmentation(), BatchOptions{true, 2, false},
                                 BatchOptions{false, 4, true}})
      for (DType t : {DType::F32, DType::BF16, DType::F16})
        for (Layout l : {Layout::NCHW, Layout::NHWC}) {
          SCOPED_TRACE(case_name(t, l) + " channels " + std::to_string(channels) + " crop " +
                       std::to_string(options.random_crop) + " pad " + std::to_string(options.crop_padding) +
                       " flip " + std::to_string(options.horizontal_flip));
          const AugmentKey key{0xC1FA5EEDull, 7, 3};
          const uint64_t first_position = 1024;
          Tensor<float> want;
          std::vector<int32_t> want_labels;
          assemble_batch(data, std::span<const int64_t>(indices), options, key, first_position, want, want_labels);

          const size_t total = static_cast<size_t>(want.numel());
          DeviceMem out(total * dtype_size(t)), labels_out(static_cast<size_t>(batch) * 4);
          out.poison();
          labels_out.poison();
          kernels::GatherBatchArgs a;
          a.images = dimages.as<uint8_t>();
          a.labels = dlabels.as<int32_t>();
          a.indices = dindices.as<int64_t>();
          a.batch = batch;
          a.channels = channels;
          a.height = size;
          a.width = size;
          for (int c = 0; c < channels; ++c) {
            a.mean[c] = data.mean[c];
            a.std[c] = data.std[c];
          }
          a.random_crop = options.random_crop;
          a.crop_padding = options.crop_padding;
          a.horizontal_flip = options.horizontal_flip;
          a.key = kernels::AugmentDrawKey{key.seed, key.epoch, key.rank};
          a.first_position = first_position;
          a.out = out.get();
          a.dtype = t;
          a.layout = l;
          a.labels_out = labels_out.as<int32_t>();
          kernels::gather_batch(a, nullptr);

          std::vector<float> want_q = want.storage();
          quantize(want_q, t);
          EXPECT_TRUE(all_close(from_layout(download(out.get(), total, t), l, batch, channels, size, size), want_q, 0.0));
          EXPECT_EQ(download_raw<int32_t>(labels_out.get(), static_cast<size_t>(batch)), want_labels);

          // The same with epoch and first position read from device memory (the CUDA-graph mode).
          DeviceMem depoch = to_device_raw(std::vector<int64_t>{key.epoch});
          DeviceMem dfirst = to_device_raw(std::vector<uint64_t>{first_position});
          a.key.epoch = -5;
          a.first_position = 99999;
          a.epoch_device = depoch.as<int64_t>();
          a.first_position_device = dfirst.as<uint64_t>();
          out.poison();
          kernels::gather_batch(a, nullptr);
          EXPECT_TRUE(all_close(from_layout(download(out.get(), total, t), l, batch, channels, size, size), want_q, 0.0));
        }
  }
}

}  // namespace

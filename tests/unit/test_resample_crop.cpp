// The CPU resampler of the ImageNet augmentation (src/data/image/resample.h) against the filter's
// definition computed in double, on the cases whose answer is known exactly, and the normalised batch
// writer (src/data/image/normalize_batch.h) against HostBatchBuilder's values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "data/host_batch.h"
#include "data/image/normalize_batch.h"
#include "data/image/resample.h"
#include "unit/resample_reference.h"

namespace sb {
namespace {

using testing::ReferenceImage;

std::vector<uint8_t> resample(const ReferenceImage& image, const ResizedCropBox& box, int out_width, int out_height) {
  std::vector<uint8_t> out(static_cast<size_t>(out_width) * out_height * image.channels, 0xAB);
  resample_crop(image.pixels.data(), image.width, image.height, image.channels, box, out_width, out_height, out.data());
  return out;
}

TEST(ResampleCrop, MatchesTheDoubleDefinition) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> size(1, 300), out_size(1, 64), channel_pick(0, 1);
  size_t values = 0, exact = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int channels = channel_pick(rng) ? 3 : 1;
    const int W = trial % 10 == 0 ? 1 : size(rng), H = trial % 15 == 0 ? 1 : size(rng);
    const ReferenceImage image = testing::random_image(W, H, channels, rng);
    ResizedCropBox box;
    box.width = static_cast<float>(W * (0.05 + 0.95 * unit(rng)));
    box.height = static_cast<float>(H * (0.05 + 0.95 * unit(rng)));
    box.x = static_cast<float>((W - box.width) * unit(rng));
    box.y = static_cast<float>((H - box.height) * unit(rng));
    const int OW = out_size(rng), OH = out_size(rng);
    SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H) + "x" + std::to_string(channels) + " to " +
                 std::to_string(OW) + "x" + std::to_string(OH));
    const std::vector<uint8_t> got = resample(image, box, OW, OH);
    const std::vector<double> want = testing::reference_resample(image, box.x, box.y, box.width, box.height, OW, OH);
    for (size_t i = 0; i < got.size(); ++i) {
      const int w = testing::reference_byte(want[i]);
      ASSERT_LE(std::abs(got[i] - w), 1) << "value " << i << ": " << want[i];
      exact += got[i] == w ? 1 : 0;
    }
    values += got.size();
  }
  EXPECT_GT(static_cast<double>(exact) / values, 0.99);
}

TEST(ResampleCrop, KeepsAConstantImageConstant) {
  std::mt19937_64 rng(4);
  for (int channels : {1, 3}) {
    ReferenceImage image{97, 61, channels, std::vector<uint8_t>(97 * 61 * channels, 173)};
    for (const ResizedCropBox& box : {ResizedCropBox{0, 0, 97, 61}, ResizedCropBox{10.3f, 4.7f, 50.2f, 33.1f, true},
                                      ResizedCropBox{96, 60, 1, 1}, ResizedCropBox{1.5f, 2.5f, 3, 2}})
      for (auto [OW, OH] : {std::pair{224, 224}, std::pair{7, 5}, std::pair{1, 1}})
        for (uint8_t v : resample(image, box, OW, OH)) ASSERT_EQ(v, 173);
  }
}

TEST(ResampleCrop, IdentityBoxReproducesTheImage) {
  std::mt19937_64 rng(5);
  for (int channels : {1, 3})
    for (auto [W, H] : {std::pair{1, 1}, std::pair{1, 9}, std::pair{13, 1}, std::pair{37, 29}}) {
      const ReferenceImage image = testing::random_image(W, H, channels, rng);
      const ResizedCropBox whole{0, 0, static_cast<float>(W), static_cast<float>(H)};
      EXPECT_EQ(resample(image, whole, W, H), image.pixels);
    }
}

TEST(ResampleCrop, FlipMirrorsTheColumns) {
  std::mt19937_64 rng(6);
  const ReferenceImage image = testing::random_image(80, 50, 3, rng);
  ResizedCropBox box{5.5f, 3.25f, 60.0f, 41.0f};
  const std::vector<uint8_t> plain = resample(image, box, 31, 17);
  box.flip = true;
  const std::vector<uint8_t> mirrored = resample(image, box, 31, 17);
  for (int y = 0; y < 17; ++y)
    for (int x = 0; x < 31; ++x)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(mirrored[(y * 31 + x) * 3 + c], plain[(y * 31 + 30 - x) * 3 + c]);
}

TEST(ResampleCrop, HalvesABlockImageWithTheTriangleFilter) {
  // Each 2x2 block one value, columns of blocks 8, 64, 16, 240, 0 (the same on every row of blocks). At
  // scale 2 the triangle spans 4 source pixels with weights 1/8, 3/8, 3/8, 1/8: an output is 3/4 of its
  // block and 1/8 of each neighbour; at the borders the clipped weights are renormalised (3/4 + 1/8 of
  // 7/8 -> 6/7 own, 1/7 neighbour). The rows see one value, so their filter leaves it alone.
  const int blocks[] = {8, 64, 16, 240, 0};
  ReferenceImage image{10, 6, 1, {}};
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 10; ++x) image.pixels.push_back(static_cast<uint8_t>(blocks[x / 2]));
  const std::vector<uint8_t> got = resample(image, ResizedCropBox{0, 0, 10, 6}, 5, 3);
  const double want[] = {(6 * 8 + 64) / 7.0, (8 + 6 * 64 + 16) / 8.0, (64 + 6 * 16 + 240) / 8.0,
                         (16 + 6 * 240 + 0) / 8.0, (240 + 6 * 0) / 7.0};
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) EXPECT_EQ(got[static_cast<size_t>(y * 5 + x)], testing::reference_byte(want[x])) << x;
  // The exact 2x2 average where the blocks are interior and their neighbours equal: all 100.
  ReferenceImage flat{8, 8, 1, std::vector<uint8_t>(64, 100)};
  for (uint8_t v : resample(flat, ResizedCropBox{0, 0, 8, 8}, 4, 4)) EXPECT_EQ(v, 100);
}

TEST(ResampleCrop, RefusesBadShapesWithTheirValues) {
  const std::vector<uint8_t> pixels(12, 0);
  std::vector<uint8_t> out(12);
  try {
    resample_crop(pixels.data(), 2, 2, 2, ResizedCropBox{0, 0, 2, 2}, 2, 2, out.data());
    FAIL() << "2 channels accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 channels"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resample_crop(pixels.data(), 2, 2, 3, ResizedCropBox{0, 0, 0, 2}, 2, 2, out.data()), std::invalid_argument);
  EXPECT_THROW(resample_crop(pixels.data(), 2, 2, 3, ResizedCropBox{0, 0, 2, 2}, 0, 2, out.data()), std::invalid_argument);
}

// The batch of HostBatchBuilder (no augmentation) from CHW samples, and the writer's batch from the same
// samples moved to HWC and resampled with the identity box: the same bytes.
TEST(NormalizedBatchWriter, MatchesHostBatchBuilderForAnIdentityResize) {
  std::mt19937_64 rng(8);
  for (int channels : {3, 1}) {
    Dataset data;
    data.name = "fixture";
    data.channels = channels;
    data.height = 6;
    data.width = 9;
    data.num_classes = 2;
    const int64_t n = 3;
    const ReferenceImage noise = testing::random_image(9, 6 * static_cast<int>(n), channels, rng);
    data.images = noise.pixels;  // any bytes: read as N x C x H x W
    data.labels = {0, 1, 0};
    for (int c = 0; c < channels; ++c) {
      data.mean.push_back(0.45f + 0.01f * c);
      data.std.push_back(0.22f + 0.005f * c);
    }
    const std::vector<int64_t> indices{2, 0, 1};
    for (DType dtype : {DType::F32, DType::F16, DType::BF16})
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        const BatchFormat format{dtype, layout};
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + layout_name(layout) + " channels " + std::to_string(channels));
        const HostBatchBuilder builder(data, BatchOptions{}, format);
        std::vector<std::byte> want(static_cast<size_t>(builder.sample_bytes()) * indices.size());
        std::vector<int32_t> labels(indices.size());
        builder.fill(indices, AugmentKey{}, 0, 0, static_cast<int64_t>(indices.size()), want.data(), labels.data());

        const NormalizedBatchWriter writer(data.mean, data.std, format, data.height, data.width);
        ASSERT_EQ(writer.sample_bytes(), builder.sample_bytes());
        std::vector<std::byte> got(want.size(), std::byte{0xEE});
        for (size_t j = 0; j < indices.size(); ++j) {
          ReferenceImage hwc{data.width, data.height, channels, {}};
          const uint8_t* chw = data.image(indices[j]);
          for (int y = 0; y < data.height; ++y)
            for (int x = 0; x < data.width; ++x)
              for (int c = 0; c < channels; ++c) hwc.pixels.push_back(chw[(c * data.height + y) * data.width + x]);
          const std::vector<uint8_t> resampled =
              resample(hwc, ResizedCropBox{0, 0, static_cast<float>(data.width), static_cast<float>(data.height)},
                       data.width, data.height);
          writer.write(resampled.data(), static_cast<int64_t>(j), got.data());
        }
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0);
      }
  }
}

TEST(NormalizedBatchWriter, RefusesMismatchedStatistics) {
  const std::vector<float> mean{0.5f, 0.5f, 0.5f}, std{0.2f, 0.2f};
  EXPECT_THROW(NormalizedBatchWriter(mean, std, BatchFormat{}, 4, 4), std::invalid_argument);
  EXPECT_THROW(NormalizedBatchWriter(mean, mean, BatchFormat{}, 0, 4), std::invalid_argument);
}

}  // namespace
}  // namespace sb

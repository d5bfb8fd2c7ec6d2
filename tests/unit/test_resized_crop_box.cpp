// The ImageNet augmentation's boxes (src/maths/resized_crop.h): RandomResizedCrop's draws keep
// torchvision's properties (inside the image, area and aspect ratio in range, its central fallback),
// are a pure function of (seed, epoch, rank, position), and flip half the samples; the Resize +
// CenterCrop box resamples to what resizing the whole image and cropping gives.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include "data/image/resample.h"
#include "maths/resized_crop.h"
#include "unit/resample_reference.h"

namespace sb {
namespace {

using testing::ReferenceImage;

bool same(const ResizedCropBox& a, const ResizedCropBox& b) {
  return a.x == b.x && a.y == b.y && a.width == b.width && a.height == b.height && a.flip == b.flip;
}

bool is_integral(float v) { return v == std::floor(v); }

TEST(RandomResizedCrop, BoxesHaveTorchvisionsRanges) {
  const RandomResizedCropParams p;
  for (auto [W, H] : {std::pair{500, 375}, std::pair{64, 64}, std::pair{1000, 200}, std::pair{3, 7}}) {
    SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H));
    ResizedCropBox fallback = central_fallback_box(W, H, p);
    int fallbacks = 0;
    for (uint64_t position = 0; position < 3000; ++position) {
      const ResizedCropBox b = draw_random_resized_crop(42, 3, 1, position, W, H, p);
      ASSERT_TRUE(is_integral(b.x) && is_integral(b.y) && is_integral(b.width) && is_integral(b.height));
      ASSERT_GE(b.x, 0);
      ASSERT_GE(b.y, 0);
      ASSERT_GT(b.width, 0);
      ASSERT_GT(b.height, 0);
      ASSERT_LE(b.x + b.width, W);
      ASSERT_LE(b.y + b.height, H);
      fallback.flip = b.flip;
      if (same(b, fallback)) {
        ++fallbacks;
        continue;
      }
      // w and h are rounded from sqrt(area * ratio) and sqrt(area / ratio): half a pixel each way.
      const double area = static_cast<double>(W) * H;
      EXPECT_GE((b.width + 0.5) * (b.height + 0.5), p.scale_min * area);
      EXPECT_LE((b.width - 0.5) * (b.height - 0.5), p.scale_max * area);
      EXPECT_GE((b.width + 0.5) / (b.height - 0.5), p.ratio_min);
      EXPECT_LE((b.width - 0.5) / (b.height + 0.5), p.ratio_max);
    }
    // Ten failed attempts are rare unless the image's shape rules most boxes out.
    if (W == 500 || W == 64) {
      EXPECT_LT(fallbacks, 30);
    }
  }
}

TEST(RandomResizedCrop, DrawsArePerSampleAndReproducible) {
  const RandomResizedCropParams p;
  std::set<std::tuple<float, float, float, float>> boxes;
  for (uint64_t position = 0; position < 1000; ++position) {
    const ResizedCropBox b = draw_random_resized_crop(7, 2, 0, position, 640, 480, p);
    EXPECT_TRUE(same(b, draw_random_resized_crop(7, 2, 0, position, 640, 480, p)));
    boxes.insert({b.x, b.y, b.width, b.height});
  }
  EXPECT_GT(boxes.size(), 990u);
  const ResizedCropBox b = draw_random_resized_crop(7, 2, 0, 5, 640, 480, p);
  int differ = 0;
  for (const ResizedCropBox& other :
       {draw_random_resized_crop(8, 2, 0, 5, 640, 480, p), draw_random_resized_crop(7, 3, 0, 5, 640, 480, p),
        draw_random_resized_crop(7, 2, 1, 5, 640, 480, p), draw_random_resized_crop(7, 2, 0, 6, 640, 480, p)})
    differ += same(b, other) ? 0 : 1;
  EXPECT_EQ(differ, 4);
}

TEST(RandomResizedCrop, FlipsHalfTheSamples) {
  int flips = 0;
  const int n = 20000;
  for (int position = 0; position < n; ++position)
    flips += draw_random_resized_crop(11, 0, 0, static_cast<uint64_t>(position), 300, 200, {}).flip ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(flips) / n, 0.5, 0.015);
}

TEST(RandomResizedCrop, FallsBackToTheCentralCropInTheRatioRange) {
  // The whole area at ratios 3..4 never fits a square image: the fallback keeps the full width and
  // cuts the height to width / 3, centred.
  RandomResizedCropParams wide{1.0f, 1.0f, 3.0f, 4.0f};
  for (uint64_t position = 0; position < 50; ++position) {
    const ResizedCropBox b = draw_random_resized_crop(1, 0, 0, position, 100, 100, wide);
    EXPECT_EQ(b.x, 0);
    EXPECT_EQ(b.width, 100);
    EXPECT_EQ(b.height, 33);  // rint(100 / 3)
    EXPECT_EQ(b.y, 33);       // (100 - 33) / 2
  }
  // Ratios 0.2..0.3 on a 200x100 image: the full height, the width height * 0.3, centred.
  RandomResizedCropParams tall{1.0f, 1.0f, 0.2f, 0.3f};
  const ResizedCropBox b = draw_random_resized_crop(1, 0, 0, 9, 200, 100, tall);
  EXPECT_EQ(b.y, 0);
  EXPECT_EQ(b.height, 100);
  EXPECT_EQ(b.width, 30);
  EXPECT_EQ(b.x, 85);
  // An image already within the ratio range: the whole image.
  const ResizedCropBox whole = central_fallback_box(120, 100, {});
  EXPECT_EQ(whole.x, 0);
  EXPECT_EQ(whole.y, 0);
  EXPECT_EQ(whole.width, 120);
  EXPECT_EQ(whole.height, 100);
}

TEST(CenterCropBox, FollowsTorchvisionsSizesAndRounding) {
  // 500x375: shorter side 375 -> 256, longer int(256 * 500 / 375) = 341; left round(58.5) = 58 (half
  // to even, as Python), top 16.
  const ResizedCropBox b = center_crop_box(500, 375, 256, 224);
  EXPECT_FLOAT_EQ(b.x, 58 * (500.0f / 341));
  EXPECT_FLOAT_EQ(b.y, 16 * (375.0f / 256));
  EXPECT_FLOAT_EQ(b.width, 224 * (500.0f / 341));
  EXPECT_FLOAT_EQ(b.height, 224 * (375.0f / 256));
  EXPECT_FALSE(b.flip);
}

// Resize(resize_shorter) of the whole image, then CenterCrop(crop), in double.
std::vector<int> resize_then_crop(const ReferenceImage& image, int resize_shorter, int crop) {
  int new_width = resize_shorter, new_height = resize_shorter;
  if (image.width <= image.height)
    new_height = static_cast<int>(static_cast<int64_t>(resize_shorter) * image.height / image.width);
  else
    new_width = static_cast<int>(static_cast<int64_t>(resize_shorter) * image.width / image.height);
  const std::vector<double> resized =
      testing::reference_resample(image, 0, 0, image.width, image.height, new_width, new_height);
  const int top = static_cast<int>(std::nearbyint((new_height - crop) / 2.0));
  const int left = static_cast<int>(std::nearbyint((new_width - crop) / 2.0));
  std::vector<int> out;
  for (int y = 0; y < crop; ++y)
    for (int x = 0; x < crop; ++x)
      for (int c = 0; c < image.channels; ++c)
        out.push_back(testing::reference_byte(
            resized[(static_cast<size_t>(top + y) * new_width + left + x) * image.channels + c]));
  return out;
}

TEST(CenterCropBox, ResamplesToResizeThenCrop) {
  std::mt19937_64 rng(5);
  for (auto [W, H, resize, crop] : {std::tuple{500, 375, 256, 224}, std::tuple{375, 500, 256, 224},
                                    std::tuple{300, 300, 256, 224}, std::tuple{257, 999, 64, 56},
                                    std::tuple{90, 60, 160, 128}}) {
    SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H) + " resize " + std::to_string(resize));
    const ReferenceImage image = testing::random_image(W, H, 3, rng);
    const std::vector<int> want = resize_then_crop(image, resize, crop);
    std::vector<uint8_t> got(static_cast<size_t>(crop) * crop * 3);
    resample_crop(image.pixels.data(), W, H, 3, center_crop_box(W, H, resize, crop), crop, crop, got.data());
    size_t exact = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_LE(std::abs(got[i] - want[i]), 1) << "value " << i;
      exact += got[i] == want[i] ? 1 : 0;
    }
    EXPECT_GT(static_cast<double>(exact) / got.size(), 0.99);
  }
}

}  // namespace
}  // namespace sb

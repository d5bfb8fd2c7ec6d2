// The ImageNet augmentation's boxes (src/maths/resized_crop.h): RandomResizedCrop's draws keep
// torchvision's properties (inside the image, area and aspect ratio in range, its central fallback),
// are a pure function of (seed, epoch, rank, position), and flip half the samples; the Resize +
// CenterCrop box resamples to what resizing the whole image and cropping gives; the region a region
// decode keeps holds every tap, and resampling from it gives the whole image's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

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

// Boxes of every kind on a width x height image: RandomResizedCrop draws, the centre crop's, small ones at
// each corner and edge, the whole image, fractional ones, and ones reaching past the image or outside it.
std::vector<ResizedCropBox> boxes_on(int width, int height, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto W = static_cast<float>(width), H = static_cast<float>(height);
  std::vector<ResizedCropBox> boxes;
  for (uint64_t position = 0; position < 20; ++position)
    boxes.push_back(draw_random_resized_crop(3, 1, 0, position, width, height, {}));
  if (std::min(width, height) >= 8) boxes.push_back(center_crop_box(width, height, std::min(width, height), std::min(width, height) * 7 / 8));
  const float w = std::max(1.0f, W / 9), h = std::max(1.0f, H / 7);
  for (float x : {0.0f, (W - w) / 2, W - w})
    for (float y : {0.0f, (H - h) / 2, H - h}) boxes.push_back(ResizedCropBox{x, y, w, h, false});
  boxes.push_back(ResizedCropBox{0, 0, W, H, false});
  for (int k = 0; k < 10; ++k) {
    const auto bw = static_cast<float>(W * (0.01 + unit(rng))), bh = static_cast<float>(H * (0.01 + unit(rng)));
    boxes.push_back(ResizedCropBox{static_cast<float>((W - bw) * unit(rng)), static_cast<float>((H - bh) * unit(rng)), bw, bh, false});
  }
  boxes.push_back(ResizedCropBox{-W / 3, H / 2, W, H, false});  // past the left and bottom edges
  boxes.push_back(ResizedCropBox{W + 5, -H - 5, W / 2, H / 2, false});  // wholly outside
  return boxes;
}

// The source indices every output's taps read along one axis, output by output.
SourceSpan every_tap(const ResampleAxis& axis, int out_size) {
  SourceSpan span{axis.in_size, 0};
  for (int o = 0; o < out_size; ++o) {
    const AxisTaps t = resample_taps(axis, o);
    span.first = std::min(span.first, t.first);
    span.end = std::max(span.end, t.first + t.count);
  }
  return span;
}

TEST(ResampleSourceRegion, IsExactlyThePixelsTheTapsRead) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> side(1, 700);
  for (int image = 0; image < 60; ++image) {
    const int width = image % 9 == 0 ? 1 : side(rng), height = image % 13 == 0 ? 1 : side(rng);
    for (const ResizedCropBox& box : boxes_on(width, height, rng))
      for (auto [out_w, out_h] : {std::pair{224, 224}, std::pair{1, 1}, std::pair{31, 900}}) {
        SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " box " + std::to_string(box.x) + "," +
                     std::to_string(box.y) + " " + std::to_string(box.width) + "x" + std::to_string(box.height) +
                     " to " + std::to_string(out_w) + "x" + std::to_string(out_h));
        const SourceSpan xs = every_tap(resample_axis(box.x, box.width, out_w, width), out_w);
        const SourceSpan ys = every_tap(resample_axis(box.y, box.height, out_h, height), out_h);
        const SourceRegion r = resample_source_region(box, out_w, out_h, width, height, 0);
        ASSERT_EQ(r.x, xs.first);
        ASSERT_EQ(r.x + r.width, xs.end);
        ASSERT_EQ(r.y, ys.first);
        ASSERT_EQ(r.y + r.height, ys.end);
        const SourceRegion wide = resample_source_region(box, out_w, out_h, width, height, 1);
        ASSERT_EQ(wide.x, std::max(0, xs.first - 1));
        ASSERT_EQ(wide.x + wide.width, std::min(width, xs.end + 1));
        ASSERT_EQ(wide.y, std::max(0, ys.first - 1));
        ASSERT_EQ(wide.y + wide.height, std::min(height, ys.end + 1));
      }
  }
}

// The crop kernel's arithmetic (kernels/resized_crop.cu) on the host: taps in the whole image's
// coordinates, the pixels those of `region` (its corner subtracted only to address one), sums in tap
// order, the columns mirrored under the box's flip.
std::vector<uint8_t> resample_from_region(const std::vector<uint8_t>& pixels, const SourceRegion& region, int width,
                                          int height, const ResizedCropBox& box, int out_w, int out_h) {
  const ResampleAxis ax = resample_axis(box.x, box.width, out_w, width), ay = resample_axis(box.y, box.height, out_h, height);
  std::vector<uint8_t> out(static_cast<size_t>(out_w) * out_h * 3);
  for (int y = 0; y < out_h; ++y) {
    const AxisTaps ty = resample_taps(ay, y);
    for (int x = 0; x < out_w; ++x) {
      const AxisTaps tx = resample_taps(ax, x);
      float acc[3] = {0, 0, 0};
      for (int j = 0; j < ty.count; ++j) {
        const float wy = resample_weight(ay, ty, j);
        float h[3] = {0, 0, 0};
        for (int i = 0; i < tx.count; ++i) {
          const float wx = resample_weight(ax, tx, i);
          const int px = tx.first + i - region.x, py = ty.first + j - region.y;
          EXPECT_TRUE(px >= 0 && px < region.width && py >= 0 && py < region.height) << "a tap outside the region";
          for (int c = 0; c < 3; ++c)
            h[c] = resample_add(h[c], resample_mul(wx, static_cast<float>(pixels[(static_cast<size_t>(py) * region.width + px) * 3 + c])));
        }
        for (int c = 0; c < 3; ++c) acc[c] = resample_add(acc[c], resample_mul(wy, h[c]));
      }
      const int xo = box.flip ? out_w - 1 - x : x;
      for (int c = 0; c < 3; ++c) out[(static_cast<size_t>(y) * out_w + xo) * 3 + c] = static_cast<uint8_t>(resampled_byte(acc[c]));
    }
  }
  return out;
}

std::vector<uint8_t> cut(const testing::ReferenceImage& image, const SourceRegion& r) {
  std::vector<uint8_t> pixels;
  for (int y = r.y; y < r.y + r.height; ++y)
    for (int x = r.x; x < r.x + r.width; ++x)
      for (int c = 0; c < 3; ++c) pixels.push_back(image.at(x, y, c));
  return pixels;
}

TEST(ResampleSourceRegion, ResamplingTheRegionGivesTheWholeImagesBytes) {
  std::mt19937_64 rng(29);
  std::uniform_int_distribution<int> side(1, 300);
  for (int n = 0; n < 12; ++n) {
    const int width = n == 0 ? 1 : side(rng), height = n == 1 ? 1 : side(rng);
    const ReferenceImage image = testing::random_image(width, height, 3, rng);
    const SourceRegion whole{0, 0, width, height};
    for (const ResizedCropBox& box : boxes_on(width, height, rng)) {
      SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " box " + std::to_string(box.x) + "," +
                   std::to_string(box.y) + " " + std::to_string(box.width) + "x" + std::to_string(box.height));
      const int out_w = 24, out_h = 20;
      const std::vector<uint8_t> want = resample_from_region(image.pixels, whole, width, height, box, out_w, out_h);
      for (int margin : {0, 1}) {
        const SourceRegion r = resample_source_region(box, out_w, out_h, width, height, margin);
        ASSERT_EQ(resample_from_region(cut(image, r), r, width, height, box, out_w, out_h), want) << "margin " << margin;
      }
      // The host resampler on the whole image: the same bytes.
      std::vector<uint8_t> cpu(want.size());
      resample_crop(image.pixels.data(), width, height, 3, box, out_w, out_h, cpu.data());
      EXPECT_EQ(cpu, want);
    }
  }
}

}  // namespace
}  // namespace sb

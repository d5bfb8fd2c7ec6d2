// Batch assembly: gathering, normalisation and the CIFAR crop/flip augmentation.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "core/philox.h"
#include "data/batch.h"
#include "maths/augment.h"

namespace sb {
namespace {

using Indices = std::vector<int64_t>;

// n samples of C x H x W with distinct pixels; label i%classes.
Dataset make_dataset(int64_t n, int C, int H, int W) {
  Dataset d;
  d.name = "fixture";
  d.channels = C;
  d.height = H;
  d.width = W;
  d.num_classes = 10;
  d.images.resize(static_cast<size_t>(n * C * H * W));
  for (size_t k = 0; k < d.images.size(); ++k) d.images[k] = static_cast<uint8_t>(1 + (k * 7) % 254);  // never 0
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<int32_t>(i % 10));
  for (int c = 0; c < C; ++c) {
    d.mean.push_back(0.4f + 0.05f * c);
    d.std.push_back(0.2f + 0.03f * c);
  }
  return d;
}

int raw(const Dataset& d, int64_t i, int c, int y, int x) { return d.image(i)[(c * d.height + y) * d.width + x]; }

float expected(const Dataset& d, int raw_value, int c) { return (raw_value / 255.0f - d.mean[c]) / d.std[c]; }

TEST(BatchAssembly, GathersAndNormalises) {
  const Dataset d = make_dataset(6, 3, 4, 5);
  const Indices idx{4, 0, 4, 2};
  Tensor<float> images;
  std::vector<int32_t> labels;
  assemble_batch(d, idx, images, labels);
  EXPECT_EQ(images.shape(), (Shape{4, 3, 4, 5}));
  EXPECT_EQ(labels, (std::vector<int32_t>{4, 0, 4, 2}));
  for (int64_t j = 0; j < 4; ++j)
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 5; ++x)
          ASSERT_NEAR(images[((j * 3 + c) * 4 + y) * 5 + x], expected(d, raw(d, idx[j], c, y, x), c), 1e-6);
  // A hand-computed value: raw 0 and 255 map to -mean/std and (1-mean)/std.
  EXPECT_NEAR(normalize_pixel<float>(0, 0.5f, 0.25f), -2.0f, 1e-7);
  EXPECT_NEAR(normalize_pixel<float>(255, 0.5f, 0.25f), 2.0f, 1e-7);
  EXPECT_NEAR(normalize_pixel<double>(51, 0.1307f, 0.3081f), (0.2 - 0.1307f) / 0.3081f, 1e-12);
}

TEST(BatchAssembly, DoubleMatchesFloat) {
  const Dataset d = make_dataset(3, 3, 8, 8);
  Tensor<float> f;
  Tensor<double> g;
  std::vector<int32_t> labels;
  const AugmentKey key{1, 2, 3};
  assemble_batch(d, Indices{0, 1, 2}, cifar_augmentation(), key, 17, f, labels);
  assemble_batch(d, Indices{0, 1, 2}, cifar_augmentation(), key, 17, g, labels);
  for (int64_t k = 0; k < f.numel(); ++k) ASSERT_NEAR(f[k], g[k], 1e-5);
}

TEST(Augment, DrawsFollowTheDocumentedPhiloxMapping) {
  for (uint64_t position : {0, 1, 99}) {
    const CropFlip t = draw_crop_flip(77, 3, 2, position, 4);
    const Philox4 b = philox4x32((uint64_t{3} << 32) | 2u, position, 77);
    EXPECT_EQ(t.dy, static_cast<int>(b.v[0] % 9) - 4);
    EXPECT_EQ(t.dx, static_cast<int>(b.v[1] % 9) - 4);
    EXPECT_EQ(t.flip, (b.v[2] >> 31) != 0);
  }
  const CropFlip none = draw_crop_flip(77, 3, 2, 5, 0);
  EXPECT_EQ(none.dy, 0);
  EXPECT_EQ(none.dx, 0);
}

TEST(Augment, ShiftsCoverTheRangeAndFlipIsFair) {
  std::set<int> dys, dxs;
  int flips = 0;
  const int draws = 4000;
  for (int p = 0; p < draws; ++p) {
    const CropFlip t = draw_crop_flip(5, 0, 0, static_cast<uint64_t>(p), 4);
    ASSERT_GE(t.dy, -4);
    ASSERT_LE(t.dy, 4);
    ASSERT_GE(t.dx, -4);
    ASSERT_LE(t.dx, 4);
    dys.insert(t.dy);
    dxs.insert(t.dx);
    flips += t.flip;
  }
  EXPECT_EQ(dys.size(), 9u);
  EXPECT_EQ(dxs.size(), 9u);
  EXPECT_NEAR(flips, draws / 2, 150);
}

TEST(Augment, DeterministicForTheSameKeysAndDifferentAcrossEpochsRanksPositions) {
  const Dataset d = make_dataset(16, 3, 8, 8);
  Indices idx(16);
  for (int64_t i = 0; i < 16; ++i) idx[i] = i;
  auto batch = [&](AugmentKey key, uint64_t first) {
    Tensor<float> images;
    std::vector<int32_t> labels;
    assemble_batch(d, idx, cifar_augmentation(), key, first, images, labels);
    return images.storage();
  };
  const auto a = batch({9, 0, 0}, 0);
  EXPECT_EQ(a, batch({9, 0, 0}, 0));
  EXPECT_NE(a, batch({9, 1, 0}, 0));   // epoch
  EXPECT_NE(a, batch({9, 0, 1}, 0));   // rank
  EXPECT_NE(a, batch({10, 0, 0}, 0));  // seed
  EXPECT_NE(a, batch({9, 0, 0}, 16));  // position
  // Batch row j uses position first + j: a batch of one at position 5 equals row 5 above.
  Tensor<float> one;
  std::vector<int32_t> labels;
  assemble_batch(d, Indices{5}, cifar_augmentation(), AugmentKey{9, 0, 0}, 5, one, labels);
  const int64_t per = 3 * 8 * 8;
  EXPECT_TRUE(std::equal(one.storage().begin(), one.storage().end(), a.begin() + 5 * per));
}

TEST(Augment, ZeroOffsetsWithoutFlipIsTheIdentity) {
  const Dataset d = make_dataset(1, 3, 6, 7);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 7; ++x) ASSERT_EQ(crop_flip_pixel(d.image(0), 6, 7, c, y, x, CropFlip{}), raw(d, 0, c, y, x));
  // Through assemble_batch: find positions whose draw is (0, 0, no flip) and compare with no augmentation.
  Tensor<float> plain, augmented;
  std::vector<int32_t> labels;
  assemble_batch(d, Indices{0}, plain, labels);
  int found = 0;
  for (uint64_t p = 0; p < 2000 && found < 3; ++p) {
    const CropFlip t = draw_crop_flip(3, 1, 0, p, 4);
    if (t.dy != 0 || t.dx != 0 || t.flip) continue;
    ++found;
    assemble_batch(d, Indices{0}, cifar_augmentation(), AugmentKey{3, 1, 0}, p, augmented, labels);
    EXPECT_EQ(augmented.storage(), plain.storage());
  }
  EXPECT_EQ(found, 3);
}

TEST(Augment, FlipMirrorsEachRow) {
  const Dataset d = make_dataset(1, 2, 3, 5);
  const CropFlip flip{0, 0, true};
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 5; ++x) ASSERT_EQ(crop_flip_pixel(d.image(0), 3, 5, c, y, x, flip), raw(d, 0, c, y, 4 - x));
  // Flip only (no crop): every output is the image or its mirror, and both occur.
  BatchOptions flip_only;
  flip_only.horizontal_flip = true;
  int mirrored = 0;
  for (uint64_t p = 0; p < 64; ++p) {
    Tensor<float> out;
    std::vector<int32_t> labels;
    assemble_batch(d, Indices{0}, flip_only, AugmentKey{1, 0, 0}, p, out, labels);
    const bool expect_flip = draw_crop_flip(1, 0, 0, p, 0).flip;
    mirrored += expect_flip;
    for (int c = 0; c < 2; ++c)
      for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 5; ++x)
          ASSERT_NEAR(out[(c * 3 + y) * 5 + x], expected(d, raw(d, 0, c, y, expect_flip ? 4 - x : x), c), 1e-6);
  }
  EXPECT_GT(mirrored, 10);
  EXPECT_LT(mirrored, 54);
}

TEST(Augment, ShiftedCropPadsWithRawZero) {
  const Dataset d = make_dataset(1, 3, 8, 8);
  const CropFlip t{2, -3, false};  // window moved down 2 and left 3
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) {
        const int sy = y + 2, sx = x - 3;
        const int want = (sy < 8 && sx >= 0) ? raw(d, 0, c, sy, sx) : 0;
        ASSERT_EQ(crop_flip_pixel(d.image(0), 8, 8, c, y, x, t), want);
      }
  // Crop then flip, as torchvision: output x reads source (W-1-x) + dx.
  const CropFlip tf{0, 1, true};
  EXPECT_EQ(crop_flip_pixel(d.image(0), 8, 8, 0, 0, 0, tf), 0);  // source x = 7 + 1 is padding
  EXPECT_EQ(crop_flip_pixel(d.image(0), 8, 8, 0, 0, 7, tf), raw(d, 0, 0, 0, 1));
  // In a real batch, a padded pixel normalises to -mean/std.
  for (uint64_t p = 0;; ++p) {
    const CropFlip draw = draw_crop_flip(4, 0, 0, p, 4);
    if (draw.dy != 4) continue;  // bottom 4 rows are padding
    Tensor<float> out;
    std::vector<int32_t> labels;
    assemble_batch(d, Indices{0}, cifar_augmentation(), AugmentKey{4, 0, 0}, p, out, labels);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(out[(c * 8 + 7) * 8 + 3], -d.mean[c] / d.std[c], 1e-6);
    break;
  }
}

TEST(Augment, BadIndicesAndPaddingThrow) {
  const Dataset d = make_dataset(3, 1, 4, 4);
  Tensor<float> out;
  std::vector<int32_t> labels;
  EXPECT_THROW(assemble_batch(d, Indices{0, 3}, out, labels), std::out_of_range);
  EXPECT_THROW(assemble_batch(d, Indices{-1}, out, labels), std::out_of_range);
  BatchOptions bad = cifar_augmentation();
  bad.crop_padding = -1;
  EXPECT_THROW(assemble_batch(d, Indices{0}, bad, AugmentKey{}, 0, out, labels), std::invalid_argument);
  assemble_batch(d, Indices{}, out, labels);
  EXPECT_EQ(out.numel(), 0);
  EXPECT_TRUE(labels.empty());
}

}  // namespace
}  // namespace sb

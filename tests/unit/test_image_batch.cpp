// Batches of image files decoded on the CPU (--decode cpu): the rows are the decoded image's crop,
// resampled and normalised as the definition says, the crops are the run's draws, evaluation takes the
// centre crop, and every kind of bad file ends the batch naming the file and the rank, or is skipped and
// counted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "data/image/decoded_image.h"
#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"
#include "data/image/resample.h"
#include "data/image_batch.h"
#include "data/image_data_sets.h"
#include "image_folder_files.h"
#include "scratch_dir.h"
#include "user_error_text.h"

namespace sb {
namespace {

namespace fs = std::filesystem;
constexpr int kSize = 32;

class ImageBatch : public test::ScratchDirTest {
 protected:
  TrainTest load() {
    TrainTest data = load_image_folder(dir_.string(), 0);
    set_image_sizes(data, kSize, 40);
    return data;
  }
  // The batch of `indices` as fp32 NCHW, and its labels.
  std::vector<float> build(const Dataset& data, bool training, const std::vector<int64_t>& indices, const AugmentKey& key,
                           std::vector<int32_t>& labels, BadImages bad = BadImages::Fail) {
    ImageBatchBuilder builder(data, training, BatchFormat{}, bad, 3, counters_);
    std::vector<float> out(indices.size() * 3 * kSize * kSize);
    labels.assign(indices.size(), -1);
    builder.fill(indices, key, 0, 0, static_cast<int64_t>(indices.size()), reinterpret_cast<std::byte*>(out.data()),
                 labels.data());
    return out;
  }
  // Row j of a batch back in raw pixel values (0..255), HWC.
  static std::vector<int> raw_row(const Dataset& data, const std::vector<float>& batch, size_t j) {
    std::vector<int> raw(static_cast<size_t>(3 * kSize * kSize));
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < kSize * kSize; ++p) {
        const float v = batch[j * 3 * kSize * kSize + static_cast<size_t>(c * kSize * kSize + p)];
        raw[static_cast<size_t>(p * 3 + c)] = static_cast<int>(std::lround((v * data.std[static_cast<size_t>(c)] + data.mean[static_cast<size_t>(c)]) * 255));
      }
    return raw;
  }
  // The row the definition gives: the whole image decoded, the sample's box resampled.
  static std::vector<int> expected_row(const Dataset& data, int64_t index, bool training, const AugmentKey& key, uint64_t position) {
    std::vector<uint8_t> buffer;
    std::vector<std::span<const uint8_t>> bytes;
    std::vector<std::string> errors;
    data.encoded->read(std::span<const int64_t>(&index, 1), buffer, bytes, errors);
    const DecodedImage image = decode_image(bytes[0]);
    const ResizedCropBox box = image_crop_box(data, training, key, position, image.width, image.height);
    std::vector<uint8_t> out(static_cast<size_t>(3 * kSize * kSize));
    resample_crop(image.pixels.data(), image.width, image.height, 3, box, kSize, kSize, out.data());
    return std::vector<int>(out.begin(), out.end());
  }

  InputCounters counters_;
};

TEST_F(ImageBatch, TrainingRowsAreTheDrawnCropsOfTheirImagesWithTheirLabels) {
  test::make_image_folder(dir_, 3, 3, 1);
  const TrainTest data = load();
  const std::vector<int64_t> indices = {4, 0, 8, 2, 7};
  const AugmentKey key{11, 2, 3};
  std::vector<int32_t> labels;
  const std::vector<float> batch = build(data.train, true, indices, key, labels);
  for (size_t j = 0; j < indices.size(); ++j) {
    EXPECT_EQ(labels[j], data.train.labels[static_cast<size_t>(indices[j])]);
    const std::vector<int> got = raw_row(data.train, batch, j), want = expected_row(data.train, indices[j], true, key, j);
    int worst = 0;
    for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::abs(got[k] - want[k]));
    EXPECT_LE(worst, 1) << "row " << j;  // small images: no DCT scaling, the crop decode is exact
  }
  const InputTotals t = counters_.totals();
  EXPECT_EQ(t.images, 5);
  EXPECT_GT(t.bytes, 0);
  EXPECT_EQ(t.skipped, 0);
}

TEST_F(ImageBatch, TheSameDrawsGiveTheSameBatchAndAnotherEpochOthers) {
  test::make_image_folder(dir_, 2, 3, 1);
  const TrainTest data = load();
  const std::vector<int64_t> indices = {0, 1, 2, 3, 4, 5};
  std::vector<int32_t> labels;
  const std::vector<float> a = build(data.train, true, indices, AugmentKey{1, 0, 0}, labels);
  EXPECT_EQ(build(data.train, true, indices, AugmentKey{1, 0, 0}, labels), a);
  EXPECT_NE(build(data.train, true, indices, AugmentKey{1, 1, 0}, labels), a);
}

TEST_F(ImageBatch, LargeJpegsDecodedAtAReducedScaleStayCloseToTheFullDecode) {
  test::write_file(dir_ / "train" / "a" / "big.jpg", test::encode_rgb_jpeg(400, 300));
  test::write_file(dir_ / "val" / "a" / "big.jpg", test::encode_rgb_jpeg(400, 300));
  const TrainTest data = load();
  for (bool training : {true, false}) {
    for (uint64_t epoch = 0; epoch < 4; ++epoch) {
      const std::vector<int64_t> indices = {0};
      std::vector<int32_t> labels;
      const AugmentKey key{5, static_cast<int64_t>(epoch), 0};
      const Dataset& d = training ? data.train : data.test;
      const std::vector<int> got = raw_row(d, build(d, training, indices, key, labels), 0), want = expected_row(d, 0, training, key, 0);
      double sum = 0;
      for (size_t k = 0; k < got.size(); ++k) sum += std::abs(got[k] - want[k]);
      EXPECT_LT(sum / static_cast<double>(got.size()), 2.0) << "training " << training << " epoch " << epoch;
    }
  }
}

TEST_F(ImageBatch, EvaluationTakesTheCentreCropOfAFlatImageAsItsColour) {
  test::Bytes flat(64 * 48 * 3);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<uint8_t>(i % 3 == 0 ? 200 : i % 3 == 1 ? 50 : 120);
  test::write_file(dir_ / "train" / "a" / "x.png", test::encode_png(test::PngSpec{64, 48, PNG_COLOR_TYPE_RGB, 8, false, {}, {}}, flat));
  test::write_file(dir_ / "val" / "a" / "x.png", test::encode_png(test::PngSpec{64, 48, PNG_COLOR_TYPE_RGB, 8, false, {}, {}}, flat));
  const TrainTest data = load();
  std::vector<int32_t> labels;
  const std::vector<int> raw = raw_row(data.test, build(data.test, false, {0}, AugmentKey{}, labels), 0);
  for (size_t p = 0; p < raw.size(); p += 3) {
    ASSERT_EQ(raw[p], 200);
    ASSERT_EQ(raw[p + 1], 50);
    ASSERT_EQ(raw[p + 2], 120);
  }
}

// One bad file among good ones, under both --bad-images settings.
class BadImageFiles : public ImageBatch, public ::testing::WithParamInterface<const char*> {
 protected:
  test::Bytes bad_bytes() const {
    const std::string kind = GetParam();
    if (kind == "truncated") {
      test::Bytes jpeg = test::encode_rgb_jpeg(40, 24);
      jpeg.resize(jpeg.size() / 2);
      return jpeg;
    }
    if (kind == "empty") return {};
    if (kind == "text") return test::Bytes{'h', 'e', 'l', 'l', 'o', '\n'};
    if (kind == "png16") return test::png_header_only(40, 24, 16, 2);
    return test::png_header_only(100000, 100000);  // a decompression bomb
  }
};

TEST_P(BadImageFiles, FailNamesTheFileAndTheRank) {
  test::make_image_folder(dir_, 2, 2, 1);
  const fs::path bad = dir_ / "train" / "class1" / "99.jpg";
  test::write_file(bad, bad_bytes());
  const TrainTest data = load();
  std::vector<int64_t> indices(static_cast<size_t>(data.train.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::vector<int32_t> labels;
  const std::string message = sb::testing::refusal([&] { build(data.train, true, indices, AugmentKey{}, labels); });
  EXPECT_NE(message.find(bad.string()), std::string::npos) << message;
  EXPECT_NE(message.find("rank 3"), std::string::npos) << message;
  EXPECT_NE(message.find("--bad-images skip"), std::string::npos) << message;
}

TEST_P(BadImageFiles, SkipFillsTheRowWithAnotherImageAndCountsIt) {
  test::make_image_folder(dir_, 2, 2, 1);
  test::write_file(dir_ / "train" / "class1" / "99.jpg", bad_bytes());
  const TrainTest data = load();
  std::vector<int64_t> indices(static_cast<size_t>(data.train.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::vector<int32_t> labels;
  build(data.train, true, indices, AugmentKey{}, labels, BadImages::Skip);
  EXPECT_EQ(counters_.totals().skipped, 1);
  EXPECT_EQ(counters_.totals().images, static_cast<int64_t>(indices.size()));
  for (int32_t label : labels) EXPECT_TRUE(label == 0 || label == 1);
}

INSTANTIATE_TEST_SUITE_P(Kinds, BadImageFiles, ::testing::Values("truncated", "empty", "text", "png16", "bomb"));

TEST_F(ImageBatch, SkipTakesTheNextImageOfTheListingThatDecodesEvenInABatchOfOne) {
  test::make_image_folder(dir_, 2, 2, 1);
  test::write_file(dir_ / "train" / "class0" / "10a.jpg", test::Bytes{});  // listed between class0's 10.jpg and 11.jpg
  test::write_file(dir_ / "train" / "class0" / "10b.jpg", test::Bytes{'x'});
  const TrainTest data = load();
  const auto listed = [&](const std::string& file) {
    for (int64_t i = 0; i < data.train.size(); ++i)
      if (data.train.encoded->name(i) == (dir_ / "train" / "class0" / file).string()) return i;
    return int64_t{-1};
  };
  const int64_t bad = listed("10a.jpg"), next_good = listed("11.jpg");
  ASSERT_EQ(listed("10b.jpg"), bad + 1);
  ASSERT_EQ(next_good, bad + 2);
  const AugmentKey key{5, 1, 0};
  std::vector<int32_t> labels;
  const std::vector<float> batch = build(data.train, true, {bad}, key, labels, BadImages::Skip);
  EXPECT_EQ(labels[0], data.train.labels[static_cast<size_t>(next_good)]);
  const std::vector<int> got = raw_row(data.train, batch, 0), want = expected_row(data.train, next_good, true, key, 0);
  int worst = 0;
  for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::abs(got[k] - want[k]));
  EXPECT_LE(worst, 1);
  const InputTotals t = counters_.totals();
  EXPECT_EQ(t.skipped, 1);
  EXPECT_EQ(t.last_skipped, std::vector<std::string>{(dir_ / "train" / "class0" / "10a.jpg").string()});
}

TEST_F(ImageBatch, SkipFailsWhenNoImageOfTheSplitDecodes) {
  test::write_file(dir_ / "train" / "a" / "1.jpg", test::Bytes{'x'});
  test::write_file(dir_ / "train" / "a" / "2.jpg", test::Bytes{});
  test::write_file(dir_ / "val" / "a" / "1.jpg", test::encode_rgb_jpeg(40, 24));
  const TrainTest data = load();
  std::vector<int32_t> labels;
  const std::string message =
      sb::testing::refusal([&] { build(data.train, true, {0}, AugmentKey{}, labels, BadImages::Skip); });
  EXPECT_NE(message.find("no other image of the 2 of 'imagefolder/train' decodes either"), std::string::npos) << message;
}

}  // namespace
}  // namespace sb

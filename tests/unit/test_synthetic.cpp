// Synthetic datasets and the --data spec parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/philox.h"
#include "data/dataset_spec.h"
#include "data/synthetic.h"
#include "unit/data_fixtures.h"

namespace sb {
namespace {

using testing::user_error_of;

TEST(SyntheticShape, ParsesAndPrints) {
  const SyntheticShape s = parse_synthetic_shape("3x32x32:100");
  EXPECT_EQ(s.channels, 3);
  EXPECT_EQ(s.height, 32);
  EXPECT_EQ(s.width, 32);
  EXPECT_EQ(s.num_classes, 100);
  EXPECT_EQ(to_string(s), "3x32x32:100");
  const SyntheticShape t = parse_synthetic_shape("1x28x20:10");
  EXPECT_EQ(t.height, 28);
  EXPECT_EQ(t.width, 20);
}

TEST(SyntheticShape, MalformedSpecsNameTheValue) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c :
       {Case{"3x32x32", "the ':classes' part is missing"}, Case{"3x32:10", "3x32 is not three sizes"},
        Case{"3x32x32x3:10", "is not three sizes"}, Case{"3xax32:10", "height 'a' is not a whole number"},
        Case{"3x32x32:", "class count '' is not a whole number"},
        Case{"3x32x32:1", "class count 1 is outside 2..1000000"},
        Case{"0x32x32:10", "channel count 0 is outside 1..4096"},
        Case{"3x32x32:10:5", "class count '10:5' is not a whole number"},
        Case{"3x-2x32:10", "height -2 is outside 1..65536"},
        Case{"3x99999999999999999999x32:10", "height '99999999999999999999' is too large"},
        Case{"3x32 x32:10", "height '32 ' is not a whole number"}}) {
    const std::string message = user_error_of([&] { parse_synthetic_shape(c.text); });
    EXPECT_CONTAINS(message, std::string("synthetic shape '") + c.text + "' is malformed");
    EXPECT_CONTAINS(message, c.says);
  }
}

TEST(Synthetic, ShapeStatisticsAndLabels) {
  const TrainTest data = make_synthetic(parse_synthetic_shape("3x8x5:7"), 40, 11);
  EXPECT_EQ(data.train.size(), 40);
  EXPECT_EQ(data.test.size(), 11);
  EXPECT_EQ(data.train.images.size(), 40u * 3 * 8 * 5);
  EXPECT_EQ(data.train.channels, 3);
  EXPECT_EQ(data.train.height, 8);
  EXPECT_EQ(data.train.width, 5);
  EXPECT_EQ(data.train.num_classes, 7);
  EXPECT_EQ(data.train.name, "synthetic/train");
  EXPECT_EQ(data.test.name, "synthetic/test");
  ASSERT_EQ(data.train.mean.size(), 3u);
  EXPECT_FLOAT_EQ(data.train.mean[2], 0.5f);
  EXPECT_NEAR(data.train.std[0], 0.2898f, 1e-4);
  std::vector<int> seen(7, 0);
  for (int32_t label : data.train.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 7);
    ++seen[label];
  }
  for (int count : seen) EXPECT_GT(count, 0) << "40 draws should hit each of 7 classes";
}

TEST(Synthetic, PixelsLookUniform) {
  const Dataset d = make_synthetic_split(parse_synthetic_shape("3x32x32:10"), 200, 0);
  double sum = 0, sum_sq = 0;
  for (uint8_t p : d.images) {
    sum += p / 255.0;
    sum_sq += (p / 255.0) * (p / 255.0);
  }
  const double n = static_cast<double>(d.images.size());
  EXPECT_NEAR(sum / n, d.mean[0], 2e-3);
  EXPECT_NEAR(std::sqrt(sum_sq / n - (sum / n) * (sum / n)), d.std[0], 2e-3);
}

TEST(Synthetic, DeterministicAndSplitsDiffer) {
  const SyntheticShape shape = parse_synthetic_shape("1x6x6:10");
  const TrainTest a = make_synthetic(shape, 30, 30), b = make_synthetic(shape, 30, 30);
  EXPECT_EQ(a.train.images, b.train.images);
  EXPECT_EQ(a.train.labels, b.train.labels);
  EXPECT_EQ(a.test.images, b.test.images);
  EXPECT_NE(a.train.images, a.test.images);
  EXPECT_NE(a.train.labels, a.test.labels);
  const TrainTest other_seed = make_synthetic(shape, 30, 30, kSyntheticSeed + 1);
  EXPECT_NE(a.train.images, other_seed.train.images);
  // Sample k does not depend on how many are generated, so a train limit keeps the same samples.
  const Dataset fewer = make_synthetic_split(shape, 7, 0);
  EXPECT_TRUE(std::equal(fewer.images.begin(), fewer.images.end(), a.train.images.begin()));
  EXPECT_TRUE(std::equal(fewer.labels.begin(), fewer.labels.end(), a.train.labels.begin()));
}

TEST(Synthetic, PixelMappingIsTheDocumentedPhilox) {
  const Dataset d = make_synthetic_split(parse_synthetic_shape("1x3x3:5"), 4, 1, 42);
  for (uint64_t k : {0, 5, 16, 35}) {
    const Philox4 block = philox4x32(0x53594E5448000000ULL + 2, k / 16, 42);
    EXPECT_EQ(d.images[k], static_cast<uint8_t>(block.v[(k % 16) / 4] >> (8 * (k % 4))));
  }
  EXPECT_EQ(d.labels[3], static_cast<int32_t>(philox4x32(0x53594E5448000000ULL + 3, 3, 42).v[0] % 5));
}

TEST(Synthetic, RefusesHugeOrEmpty) {
  EXPECT_CONTAINS(user_error_of([] { make_synthetic_split(parse_synthetic_shape("3x1024x1024:10"), 100000, 0); }),
                  "would need more than 8 GiB");
  EXPECT_CONTAINS(user_error_of([] { make_synthetic_split(parse_synthetic_shape("3x4x4:10"), 0, 0); }),
                  "at least one sample");
}

TEST(DatasetSpec, ParsesEveryForm) {
  DatasetSpec s = parse_dataset_spec("fashion-mnist");
  EXPECT_EQ(s.kind, DatasetKind::FashionMnist);
  EXPECT_EQ(s.path, "");
  s = parse_dataset_spec("fashion-mnist:/data/fm");
  EXPECT_EQ(s.kind, DatasetKind::FashionMnist);
  EXPECT_EQ(s.path, "/data/fm");
  s = parse_dataset_spec("mnist:/data/m");
  EXPECT_EQ(s.kind, DatasetKind::Mnist);
  EXPECT_EQ(s.path, "/data/m");
  s = parse_dataset_spec("cifar10:/a:b");
  EXPECT_EQ(s.kind, DatasetKind::Cifar10);
  EXPECT_EQ(s.path, "/a:b");
  s = parse_dataset_spec("cifar100:rel/dir");
  EXPECT_EQ(s.kind, DatasetKind::Cifar100);
  EXPECT_EQ(s.path, "rel/dir");
  s = parse_dataset_spec("synthetic");
  EXPECT_EQ(s.kind, DatasetKind::Synthetic);
  EXPECT_EQ(to_string(s), "synthetic:3x32x32:100:50000:10000");
  s = parse_dataset_spec("synthetic:1x28x28:10");
  EXPECT_EQ(s.synthetic.channels, 1);
  EXPECT_EQ(s.synthetic_train, 50000);
  EXPECT_EQ(s.synthetic_test, 10000);
  s = parse_dataset_spec("synthetic:3x32x32:100:640:128");
  EXPECT_EQ(s.synthetic.num_classes, 100);
  EXPECT_EQ(s.synthetic_train, 640);
  EXPECT_EQ(s.synthetic_test, 128);
}

TEST(DatasetSpec, CanonicalTextRoundTrips) {
  for (const char* text : {"fashion-mnist", "fashion-mnist:/x", "mnist:/m", "cifar10:/c", "cifar100:/d",
                           "synthetic:3x32x32:100:50000:10000", "synthetic:1x2x3:4:5:6"}) {
    EXPECT_EQ(to_string(parse_dataset_spec(text)), text);
  }
  EXPECT_EQ(to_string(parse_dataset_spec("synthetic:1x2x3:4")), "synthetic:1x2x3:4:50000:10000");
}

TEST(DatasetSpec, ErrorsListTheValidForms) {
  for (const char* text : {"imagenet:/x", "", "cifar", "Synthetic", "fashion_mnist"}) {
    const std::string message = user_error_of([&] { parse_dataset_spec(text); });
    EXPECT_CONTAINS(message, std::string("--data '") + text + "'");
    EXPECT_CONTAINS(message, "valid forms are fashion-mnist, fashion-mnist:/path, mnist:/path, cifar10:/path");
    EXPECT_CONTAINS(message, "synthetic:CxHxW:classes:TRAIN:TEST");
  }
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("cifar10"); }), "needs the dataset's directory");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("mnist:"); }), "needs the dataset's directory");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("synthetic:"); }), "ends in ':'");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("synthetic:3x32x32:10:5"); }), "TRAIN:TEST");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("synthetic:3x32x32:10:5:0"); }),
                  "the test sample count '0' is not a positive whole number");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("synthetic:3x32x32:10:x:5"); }),
                  "the training sample count 'x'");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("synthetic:3x32x32:10:5:5:5"); }), "TRAIN:TEST");
  EXPECT_CONTAINS(user_error_of([] { parse_dataset_spec("synthetic:3x32:10"); }), "synthetic shape '3x32:10'");
}

TEST(DatasetSpec, LoadsSyntheticWithTrainLimit) {
  const TrainTest data = load_dataset(parse_dataset_spec("synthetic:3x4x4:10:100:20"), 30);
  EXPECT_EQ(data.train.size(), 30);
  EXPECT_EQ(data.test.size(), 20);
  const TrainTest all = load_dataset(parse_dataset_spec("synthetic:3x4x4:10:100:20"));
  EXPECT_EQ(all.train.size(), 100);
  EXPECT_TRUE(std::equal(data.train.images.begin(), data.train.images.end(), all.train.images.begin()));
}

}  // namespace
}  // namespace sb

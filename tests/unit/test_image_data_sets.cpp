// The data sets of image files: the folder's and the shards' listings, reading their bytes (a shard's
// neighbours in one read), --train-limit, the labels' checks, and the sampler's whole-shard order.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"
#include "data/image_data_sets.h"
#include "data/sampler.h"
#include "image_folder_files.h"
#include "scratch_dir.h"
#include "user_error_text.h"

namespace sb {
namespace {

namespace fs = std::filesystem;
using sb::testing::refusal;

using ImageDataSets = test::ScratchDirTest;

// The width of each image of `data`'s samples, decoded from what EncodedImages reads.
std::vector<int> widths(const Dataset& data, std::span<const int64_t> samples) {
  std::vector<uint8_t> buffer;
  std::vector<std::span<const uint8_t>> images;
  std::vector<std::string> errors;
  data.encoded->read(samples, buffer, images, errors);
  std::vector<int> out;
  for (size_t j = 0; j < samples.size(); ++j) {
    EXPECT_EQ(errors[j], "");
    out.push_back(read_image_size(images[j]).width);
  }
  return out;
}

std::vector<int64_t> all_samples(const Dataset& d) {
  std::vector<int64_t> v(static_cast<size_t>(d.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  return v;
}

TEST_F(ImageDataSets, AFolderListsItsFilesWithTheirLabelsAndReadsThem) {
  test::make_image_folder(dir_, 3, 4, 2);
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, 32, 40);
  ASSERT_EQ(data.train.size(), 12);
  ASSERT_EQ(data.test.size(), 6);
  EXPECT_TRUE(data.train.streamed());
  EXPECT_EQ(data.train.num_classes, 3);
  EXPECT_EQ(data.train.height, 32);
  EXPECT_EQ(data.train.width, 32);
  EXPECT_EQ(data.test.resize_shorter, 40);
  EXPECT_TRUE(data.train.encoded->shard_sizes().empty());
  const std::vector<int64_t> samples = all_samples(data.train);
  const std::vector<int> w = widths(data.train, samples);
  for (size_t i = 0; i < samples.size(); ++i)
    EXPECT_EQ(w[i], test::image_width(data.train.labels[i], static_cast<int>(i % 4))) << i;
  check_dataset(data.train);
  check_dataset(data.test);
}

TEST_F(ImageDataSets, ATrainLimitKeepsImagesOfEveryClass) {
  test::make_image_folder(dir_, 4, 5, 1);
  const TrainTest data = load_image_folder(dir_.string(), 8);
  ASSERT_EQ(data.train.size(), 8);
  EXPECT_EQ(std::set<int32_t>(data.train.labels.begin(), data.train.labels.end()).size(), 4u);
  EXPECT_EQ(data.test.size(), 4);
}

TEST_F(ImageDataSets, ShardsIndexTheirSamplesInOrderAndReadThemInRuns) {
  test::make_image_shards(dir_ / "folder", dir_ / "shards", 3, 5, 2, 4);
  const TrainTest data = load_tar_shards((dir_ / "shards").string(), 0);
  ASSERT_EQ(data.train.size(), 15);
  EXPECT_EQ(data.train.num_classes, 3);
  EXPECT_EQ(data.train.encoded->shard_sizes(), (std::vector<int64_t>{4, 4, 4, 3}));
  EXPECT_EQ(data.test.size(), 6);
  // Every image is that of its label, read in one run or one at a time alike.
  const std::vector<int64_t> samples = all_samples(data.train);
  const std::vector<int> together = widths(data.train, samples);
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(widths(data.train, std::span<const int64_t>(&samples[i], 1))[0], together[i]);
    EXPECT_EQ((together[i] - 8 * (data.train.labels[i] + 1)) >= 0, true);
    EXPECT_LT(together[i] - 8 * (data.train.labels[i] + 1), 5);
  }
  EXPECT_NE(data.train.encoded->name(5).find("train-000001.tar, member '"), std::string::npos);
}

TEST_F(ImageDataSets, AShardTrainLimitKeepsTheFirstSamplesAndCutsTheShards) {
  test::make_image_shards(dir_ / "folder", dir_ / "shards", 2, 5, 1, 4);
  const TrainTest data = load_tar_shards((dir_ / "shards").string(), 6);
  EXPECT_EQ(data.train.size(), 6);
  EXPECT_EQ(data.train.encoded->shard_sizes(), (std::vector<int64_t>{4, 2}));
  check_dataset(data.train);
}

TEST_F(ImageDataSets, AMissingFileIsAReadErrorNamingIt) {
  test::make_image_folder(dir_, 2, 2, 1);
  const TrainTest data = load_image_folder(dir_.string(), 0);
  const std::string gone = data.train.encoded->name(1);
  fs::remove(gone);
  std::vector<uint8_t> buffer;
  std::vector<std::span<const uint8_t>> images;
  std::vector<std::string> errors;
  const std::vector<int64_t> samples = {0, 1, 2};
  data.train.encoded->read(samples, buffer, images, errors);
  EXPECT_EQ(errors[0], "");
  EXPECT_NE(errors[1].find(gone), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("No such file"), std::string::npos) << errors[1];
  EXPECT_EQ(errors[2], "");
  EXPECT_FALSE(images[2].empty());
}

TEST_F(ImageDataSets, AnUnreadableFileIsAReadErrorNamingIt) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  test::make_image_folder(dir_, 2, 2, 1);
  const TrainTest data = load_image_folder(dir_.string(), 0);
  const std::string locked = data.train.encoded->name(0);
  ::chmod(locked.c_str(), 0);
  std::vector<uint8_t> buffer;
  std::vector<std::span<const uint8_t>> images;
  std::vector<std::string> errors;
  const std::vector<int64_t> samples = {0};
  data.train.encoded->read(samples, buffer, images, errors);
  EXPECT_NE(errors[0].find(locked), std::string::npos);
  EXPECT_NE(errors[0].find("Permission denied"), std::string::npos) << errors[0];
}

TEST_F(ImageDataSets, ShardsWithoutTheirFolderOrSplitAreRefused) {
  EXPECT_NE(refusal([&] { load_tar_shards((dir_ / "absent").string(), 0); }).find("cannot open the folder"), std::string::npos);
  test::make_image_shards(dir_ / "folder", dir_ / "shards", 2, 2, 1, 4);
  for (const auto& entry : fs::directory_iterator(dir_ / "shards"))
    if (entry.path().filename().string().rfind("val-", 0) == 0) fs::remove(entry.path());
  const std::string message = refusal([&] { load_tar_shards((dir_ / "shards").string(), 0); });
  EXPECT_NE(message.find("no val-*.tar shards"), std::string::npos) << message;
}

TEST_F(ImageDataSets, AShardCutShortIsRefusedNamingIt) {
  test::make_image_shards(dir_ / "folder", dir_ / "shards", 2, 4, 1, 8);
  const fs::path shard = dir_ / "shards" / "train-000000.tar";
  fs::resize_file(shard, fs::file_size(shard) / 2);
  const std::string message = refusal([&] { load_tar_shards((dir_ / "shards").string(), 0); });
  EXPECT_NE(message.find(shard.string()), std::string::npos) << message;
  EXPECT_NE(message.find("cut short"), std::string::npos) << message;
}

TEST_F(ImageDataSets, ALabelOutsideClassesTxtIsRefusedNamingTheMember) {
  test::make_image_shards(dir_ / "folder", dir_ / "shards", 3, 2, 1, 8);
  std::ofstream(dir_ / "shards" / "classes.txt") << "class0\nclass1\n";
  const std::string message = refusal([&] { load_tar_shards((dir_ / "shards").string(), 0); });
  EXPECT_NE(message.find("class label 2"), std::string::npos) << message;
  EXPECT_NE(message.find("lists 2 classes"), std::string::npos) << message;
}

TEST(ShardSampler, EachRankReadsWholeShardsInFileOrderAndTheOrderChangesPerEpoch) {
  const std::vector<int64_t> sizes = {3, 3, 3, 2};  // samples 0-2, 3-5, 6-8, 9-10
  std::set<int64_t> seen;
  for (int rank = 0; rank < 2; ++rank) {
    const DistributedSampler sampler(11, 2, rank, true, 7, false, sizes);
    EXPECT_EQ(sampler.num_samples(), 6);
    const std::vector<int64_t> mine = sampler.indices(0);
    ASSERT_EQ(mine.size(), 6u);
    // Runs of consecutive samples: whole shards, in file order.
    int breaks = 0;
    for (size_t i = 1; i < mine.size(); ++i) breaks += mine[i] != mine[i - 1] + 1;
    EXPECT_LE(breaks, 2);
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_GE(seen.size(), 10u);  // the ranks' shards cover all but what the padding repeats
  const DistributedSampler sampler(11, 2, 0, true, 7, false, sizes);
  bool differs = false;
  for (int epoch = 1; epoch < 6; ++epoch) differs |= sampler.indices(epoch) != sampler.indices(0);
  EXPECT_TRUE(differs);
}

TEST(ShardSampler, FewerShardsThanRanksIsRefused) {
  const std::string message = refusal([] { DistributedSampler(10, 4, 0, true, 1, false, {5, 5}); });
  EXPECT_NE(message.find("2 tar shard(s) for 4 ranks"), std::string::npos) << message;
  EXPECT_NE(message.find("--shard-size"), std::string::npos) << message;
}

}  // namespace
}  // namespace sb

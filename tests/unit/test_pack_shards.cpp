// `scalebench pack`'s packing: shards that the shard reader reads back with the right labels, the fixed
// shuffle, and the checks before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "data/image/image_decoder.h"
#include "data/image/pack_shards.h"
#include "data/image/shard_samples.h"
#include "image_test_files.h"
#include "scratch_dir.h"
#include "user_error_text.h"

namespace sb {
namespace {

namespace fs = std::filesystem;
using sb::testing::refusal;
using test::Bytes;

void write_file(const fs::path& path, const Bytes& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class PackShards : public test::ScratchDirTest {
 protected:
  // Class c's images are c+1 pixels wide, so a decoded sample tells its class.
  void make_folder(int classes, int train_per_class, int val_per_class) {
    for (int c = 0; c < classes; ++c) {
      const std::string name = "class" + std::to_string(c);
      for (int i = 0; i < train_per_class; ++i) {
        const bool png = i % 3 == 2;
        const Bytes bytes = png ? test::encode_png(test::PngSpec{c + 1, 4, PNG_COLOR_TYPE_RGB, 8, false, {}, {}},
                                                   test::gradient_rgb(c + 1, 4))
                                : test::encode_rgb_jpeg(c + 1, 4);
        write_file(src_ / "train" / name / (std::to_string(i) + (png ? ".png" : ".JPEG")), bytes);
      }
      for (int i = 0; i < val_per_class; ++i)
        write_file(src_ / "val" / name / (std::to_string(i) + ".jpg"), test::encode_rgb_jpeg(c + 1, 4));
    }
  }
  std::vector<ShardSample> read_split(const std::string& split, int64_t shards) {
    std::vector<ShardSample> out;
    for (int64_t i = 0; i < shards; ++i) {
      ShardSampleReader reader((dst_ / shard_file_name(split, i)).string());
      ShardSample s;
      while (reader.next(s)) out.push_back(s);
    }
    EXPECT_FALSE(fs::exists(dst_ / shard_file_name(split, shards)));
    return out;
  }
  PackOptions options(int64_t shard_size) const { return PackOptions{src_.string(), dst_.string(), shard_size, 0}; }

  fs::path src_;
  fs::path dst_;
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    src_ = dir_ / "src";
    dst_ = dir_ / "dst";
  }
};

TEST_F(PackShards, ShardsReadBackWithTheRightLabelsAndMixedClasses) {
  make_folder(3, 5, 2);
  const PackSummary s = pack_image_folder(options(4));
  EXPECT_EQ(s.classes, 3);
  EXPECT_EQ(s.train_samples, 15);
  EXPECT_EQ(s.train_shards, 4);  // 4 + 4 + 4 + 3
  EXPECT_EQ(s.val_samples, 6);
  EXPECT_EQ(s.val_shards, 2);
  std::ifstream classes(dst_ / "classes.txt");
  std::string text((std::istreambuf_iterator<char>(classes)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "class0\nclass1\nclass2\n");

  const std::vector<ShardSample> train = read_split("train", 4);
  ASSERT_EQ(train.size(), 15u);
  std::map<int, int> per_class;
  bool first_shard_mixes = false;
  for (size_t i = 0; i < train.size(); ++i) {
    EXPECT_EQ(train[i].key, std::string(8 - std::to_string(i).size(), '0') + std::to_string(i));
    EXPECT_EQ(decode_image(train[i].image).width, train[i].label + 1);  // the label is the image's class
    const bool png = train[i].image_member.ends_with(".png");
    EXPECT_EQ(png, train[i].image[0] == 0x89) << train[i].image_member;  // the extension follows the content
    ++per_class[train[i].label];
    if (i > 0 && i < 4 && train[i].label != train[0].label) first_shard_mixes = true;
  }
  EXPECT_EQ(per_class, (std::map<int, int>{{0, 5}, {1, 5}, {2, 5}}));
  EXPECT_TRUE(first_shard_mixes);
  EXPECT_EQ(read_split("val", 2).size(), 6u);
}

TEST_F(PackShards, TheSameSeedPacksTheSameBytes) {
  make_folder(2, 3, 1);
  pack_image_folder(options(2));
  const fs::path first = dir_ / "first";
  fs::rename(dst_, first);
  pack_image_folder(options(2));
  for (const char* name : {"train-000000.tar", "train-000001.tar", "train-000002.tar", "val-000000.tar"})
    EXPECT_EQ(fs::file_size(first / name), fs::file_size(dst_ / name)) << name;
  std::ifstream a(first / "train-000000.tar", std::ios::binary), b(dst_ / "train-000000.tar", std::ios::binary);
  EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b)));
}

TEST_F(PackShards, RefusesAnExistingDestinationAndABadShardSize) {
  make_folder(2, 1, 1);
  write_file(dst_ / "keep.txt", Bytes{'k'});
  EXPECT_EQ(refusal([&] { pack_image_folder(options(10)); }),
            "the destination '" + dst_.string() + "' is not empty; pack never overwrites: give a new path or an empty folder");
  EXPECT_EQ(refusal([&] { pack_image_folder(PackOptions{src_.string(), (dst_ / "keep.txt").string(), 10, 0}); }),
            "the destination '" + (dst_ / "keep.txt").string() + "' exists and is not a folder; give a new path or an empty folder");
  EXPECT_EQ(refusal([&] { pack_image_folder(options(0)); }), "--shard-size 0: a shard holds at least 1 sample");
  EXPECT_EQ(fs::file_size(dst_ / "keep.txt"), 1u);
  fs::remove(dst_ / "keep.txt");
  EXPECT_EQ(pack_image_folder(options(10)).train_shards, 1);  // an empty folder is accepted
}

TEST_F(PackShards, AFileThatDoesNotDecodeIsRefusedBeforeAnythingIsWritten) {
  make_folder(1, 2, 1);
  write_file(src_ / "val" / "class0" / "z.bmp", Bytes{'B', 'M', 0, 0});
  const std::string message = refusal([&] { pack_image_folder(options(1)); });
  EXPECT_EQ(message.rfind("'" + (src_ / "val" / "class0" / "z.bmp").string() + "': not a JPEG or PNG image: the content is a BMP image", 0),
            0u) << message;
  EXPECT_NE(message.find("; nothing was written: remove or repair it, or give --bad-images skip"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dst_));
}

TEST_F(PackShards, SkipLeavesOutAndNamesTheFilesThatDoNotDecode) {
  make_folder(1, 2, 1);
  write_file(src_ / "train" / "class0" / "empty.jpg", Bytes{});
  PackOptions o = options(10);
  o.bad_images = BadImages::Skip;
  o.workers = 3;
  const PackSummary s = pack_image_folder(o);
  EXPECT_EQ(s.train_samples, 2);
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].find((src_ / "train" / "class0" / "empty.jpg").string()), std::string::npos) << s.skipped[0];
}

}  // namespace
}  // namespace sb

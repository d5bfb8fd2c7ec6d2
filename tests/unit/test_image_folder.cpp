// Listing torchvision's ImageFolder layout: class numbering, file order, and each refused layout.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/image/image_folder.h"
#include "scratch_dir.h"
#include "user_error_text.h"

namespace sb {
namespace {

namespace fs = std::filesystem;
using sb::testing::refusal;

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x";
}

using ImageFolderTest = test::ScratchDirTest;

TEST(ImageExtensions, AreTorchvisionsCaseInsensitive) {
  for (const char* name : {"a.jpg", "a.JPEG", "b.png", "c.ppm", "d.bmp", "e.pgm", "f.tif", "g.TIFF", "h.webp"})
    EXPECT_TRUE(has_image_extension(name)) << name;
  for (const char* name : {"a.gif", "notes.txt", "jpg", "a.jpg.bak"}) EXPECT_FALSE(has_image_extension(name)) << name;
}

TEST_F(ImageFolderTest, ClassesAreSortedInByteOrderAndNumberedFromTrain) {
  for (const char* cls : {"b", "a", "B", "a_1", "\xC3\xA9t\xC3\xA9"}) touch(dir_ / "train" / cls / "1.jpg");
  touch(dir_ / "train" / "b" / "0.png");
  touch(dir_ / "train" / "b" / "sub" / "2.JPEG");
  touch(dir_ / "train" / "b" / "notes.txt");  // not an image: not counted
  touch(dir_ / "train" / "stray.jpg");        // not in a class folder: not counted
  touch(dir_ / "val" / "b" / "v.jpg");
  touch(dir_ / "val" / "B" / "w.jpg");
  const ImageFolder folder = list_image_folder(dir_.string());
  EXPECT_EQ(folder.classes, (std::vector<std::string>{"B", "a", "a_1", "b", "\xC3\xA9t\xC3\xA9"}));
  ASSERT_EQ(folder.train.size(), 7u);
  const fs::path b = dir_ / "train" / "b";
  EXPECT_EQ(folder.train[3].path, (b / "0.png").string());
  EXPECT_EQ(folder.train[4].path, (b / "1.jpg").string());
  EXPECT_EQ(folder.train[5].path, (b / "sub" / "2.JPEG").string());
  for (int i : {3, 4, 5}) EXPECT_EQ(folder.train[static_cast<size_t>(i)].label, 3);
  EXPECT_EQ(folder.train[0].label, 0);
  EXPECT_EQ(folder.train[6].label, 4);
  ASSERT_EQ(folder.val.size(), 2u);
  EXPECT_EQ(folder.val[0].label, 0);  // B
  EXPECT_EQ(folder.val[1].label, 3);  // b
}

TEST_F(ImageFolderTest, MissingSplitsAreRefusedWithTheLayout) {
  const std::string root = dir_.string();
  const std::string layout = "an image folder holds ROOT/train/CLASS/IMAGE and ROOT/val/CLASS/IMAGE (torchvision's ImageFolder layout)";
  EXPECT_EQ(refusal([&] { list_image_folder(root + "/none"); }),
            "image folder '" + root + "/none' does not exist or is not a folder; " + layout);
  EXPECT_EQ(refusal([&] { list_image_folder(root); }), "image folder '" + root + "' has no train/ folder; " + layout);
  touch(dir_ / "train" / "a" / "1.jpg");
  EXPECT_EQ(refusal([&] { list_image_folder(root); }), "image folder '" + root + "' has no val/ folder; " + layout);
  fs::create_directories(dir_ / "val");
  EXPECT_EQ(refusal([&] { list_image_folder(root); }), "'" + (dir_ / "val").string() + "' holds no class folders; " + layout);
}

TEST_F(ImageFolderTest, EmptyClassAndUnknownValClassAreRefused) {
  touch(dir_ / "train" / "a" / "1.jpg");
  touch(dir_ / "val" / "a" / "1.jpg");
  touch(dir_ / "train" / "empty" / "readme.txt");
  EXPECT_EQ(refusal([&] { list_image_folder(dir_.string()); }),
            "class folder '" + (dir_ / "train" / "empty").string() +
                "' holds no images (files ending .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp); remove the folder or add its images");
  fs::remove_all(dir_ / "train" / "empty");
  touch(dir_ / "val" / "z" / "1.jpg");
  EXPECT_EQ(refusal([&] { list_image_folder(dir_.string()); }),
            "class folder '" + (dir_ / "val" / "z").string() +
                "' has no counterpart in train/; every class of val/ must be one of train/'s (their numbers come from train/)");
}

TEST_F(ImageFolderTest, HiddenFoldersAndFilesAreLeftOutAndNamed) {
  touch(dir_ / "train" / "cat" / "1.jpg");
  touch(dir_ / "train" / "cat" / "._1.jpg");
  touch(dir_ / "train" / "cat" / ".DS_Store");
  touch(dir_ / "train" / "cat" / ".thumbs" / "2.jpg");
  touch(dir_ / "train" / ".ipynb_checkpoints" / "3.jpg");
  touch(dir_ / "val" / "cat" / "1.jpg");
  const ImageFolder folder = list_image_folder(dir_.string());
  EXPECT_EQ(folder.classes, std::vector<std::string>{"cat"});
  ASSERT_EQ(folder.train.size(), 1u);
  EXPECT_EQ(folder.hidden, (std::vector<std::string>{"train/.ipynb_checkpoints", "train/cat/._1.jpg", "train/cat/.thumbs"}));
  EXPECT_EQ(left_out_lines(folder),
            "image folder " + dir_.string() + ": left out, hidden: train/.ipynb_checkpoints, train/cat/._1.jpg, train/cat/.thumbs\n");
}

TEST_F(ImageFolderTest, ALinkToNothingIsRefusedOrLeftOutUnderSkip) {
  touch(dir_ / "train" / "cat" / "1.jpg");
  touch(dir_ / "val" / "cat" / "1.jpg");
  fs::create_symlink(dir_ / "gone.jpg", dir_ / "train" / "cat" / "2.jpg");
  const std::string message = refusal([&] { list_image_folder(dir_.string()); });
  EXPECT_NE(message.find("'" + (dir_ / "train" / "cat" / "2.jpg").string() + "' is a link to nothing"), std::string::npos) << message;
  const ImageFolder folder = list_image_folder(dir_.string(), BadImages::Skip);
  EXPECT_EQ(folder.train.size(), 1u);
  EXPECT_EQ(folder.dangling, std::vector<std::string>{"train/cat/2.jpg"});
}

TEST_F(ImageFolderTest, UnreadableFolderIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every folder";
  touch(dir_ / "train" / "a" / "1.jpg");
  touch(dir_ / "val" / "a" / "1.jpg");
  fs::permissions(dir_ / "train" / "a", fs::perms::none);
  const std::string message = refusal([&] { list_image_folder(dir_.string()); });
  fs::permissions(dir_ / "train" / "a", fs::perms::owner_all);
  EXPECT_EQ(message.rfind("cannot read the folder '" + (dir_ / "train" / "a").string() + "': ", 0), 0u) << message;
}

}  // namespace
}  // namespace sb

// IDX (MNIST-format) reader and the MNIST / Fashion-MNIST loader, on fixture files written here.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/dataset_spec.h"
#include "data/idx_reader.h"
#include "data/mnist.h"
#include "unit/data_fixtures.h"

namespace sb {
namespace {

using testing::Bytes;
using testing::TempDir;
using testing::user_error_of;

void expect_images_round_trip(bool gzip) {
  TempDir dir;
  const std::string path = dir.file(gzip ? "imgs.gz" : "imgs");
  testing::write_file(path, testing::idx_images(7, 5, 3), gzip);
  const IdxImages images = read_idx_images(path);
  EXPECT_EQ(images.count, 7);
  EXPECT_EQ(images.rows, 5);
  EXPECT_EQ(images.cols, 3);
  ASSERT_EQ(images.pixels.size(), 7u * 5 * 3);
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t k = 0; k < 15; ++k) ASSERT_EQ(images.pixels[i * 15 + k], testing::fixture_pixel(i, k));
}

TEST(IdxReader, ImagesRoundTripPlain) { expect_images_round_trip(false); }
TEST(IdxReader, ImagesRoundTripGzip) { expect_images_round_trip(true); }

TEST(IdxReader, LabelsRoundTripPlainAndGzip) {
  TempDir dir;
  for (bool gzip : {false, true}) {
    const std::string path = dir.file(gzip ? "labels.gz" : "labels");
    testing::write_file(path, testing::idx_labels(23), gzip);
    const std::vector<int32_t> labels = read_idx_labels(path);
    ASSERT_EQ(labels.size(), 23u);
    for (int i = 0; i < 23; ++i) EXPECT_EQ(labels[i], testing::fixture_label(i, 10));
  }
}

TEST(IdxReader, WrongMagicNamesFileAndNumber) {
  TempDir dir;
  const std::string path = dir.file("imgs");
  Bytes b = testing::idx_images(2, 2, 2);
  b[0] = 0x12;
  b[1] = 0x34;
  testing::write_file(path, b);
  const std::string message = user_error_of([&] { read_idx_images(path); });
  EXPECT_CONTAINS(message, path);
  EXPECT_CONTAINS(message, "magic number is 0x12340803");
  EXPECT_CONTAINS(message, "expected 0x00000803");
}

TEST(IdxReader, LabelsFileReadAsImagesReportsDimensionCount) {
  TempDir dir;
  const std::string path = dir.file("labels");
  testing::write_file(path, testing::idx_labels(4));
  const std::string message = user_error_of([&] { read_idx_images(path); });
  EXPECT_CONTAINS(message, path);
  EXPECT_CONTAINS(message, "has 1 dimensions");
  EXPECT_CONTAINS(message, "has 3");
  const std::string message2 = user_error_of([&] { read_idx_labels(dir.file("images")); });
  EXPECT_CONTAINS(message2, "does not exist");
}

TEST(IdxReader, TruncatedDataSaysHowMuchIsThere) {
  TempDir dir;
  const std::string path = dir.file("imgs");
  Bytes b = testing::idx_images(10, 4, 4);
  b.resize(16 + 100);
  testing::write_file(path, b);
  const std::string message = user_error_of([&] { read_idx_images(path); });
  EXPECT_CONTAINS(message, path + " is truncated: header says 10 images of 4x4 but only 100 bytes follow");
  EXPECT_CONTAINS(message, "re-download");
}

TEST(IdxReader, TruncatedHeader) {
  TempDir dir;
  const std::string path = dir.file("imgs");
  testing::write_file(path, Bytes{0, 0, 8, 3, 0, 0});
  const std::string message = user_error_of([&] { read_idx_images(path); });
  EXPECT_CONTAINS(message, path + " is truncated");
  EXPECT_CONTAINS(message, "header");
  const std::string empty = dir.file("empty");
  testing::write_file(empty, Bytes{});
  EXPECT_CONTAINS(user_error_of([&] { read_idx_labels(empty); }), empty + " is truncated");
}

TEST(IdxReader, TruncatedGzipStream) {
  TempDir dir;
  const std::string full = dir.file("full.gz"), cut = dir.file("cut.gz");
  testing::write_file(full, testing::idx_images(50, 28, 28), true);
  Bytes compressed = testing::read_raw(full);
  ASSERT_GT(compressed.size(), 200u);
  compressed.resize(compressed.size() / 2);
  testing::write_file(cut, compressed);
  const std::string message = user_error_of([&] { read_idx_images(cut); });
  EXPECT_CONTAINS(message, cut + " is truncated: header says 50 images of 28x28");
}

TEST(IdxReader, CorruptGzipStream) {
  TempDir dir;
  const std::string full = dir.file("full.gz"), bad = dir.file("bad.gz");
  testing::write_file(full, testing::idx_images(50, 28, 28), true);
  Bytes compressed = testing::read_raw(full);
  for (size_t i = 20; i < compressed.size() - 8; i += 3) compressed[i] ^= 0x5A;  // scramble the deflate data
  testing::write_file(bad, compressed);
  const std::string message = user_error_of([&] { read_idx_images(bad); });
  EXPECT_CONTAINS(message, bad);
}

TEST(IdxReader, TrailingBytesAreAnError) {
  TempDir dir;
  const std::string path = dir.file("labels");
  Bytes b = testing::idx_labels(5);
  b.push_back(1);
  testing::write_file(path, b);
  const std::string message = user_error_of([&] { read_idx_labels(path); });
  EXPECT_CONTAINS(message, path + " is longer than its header says");
}

TEST(IdxReader, LabelOutOfRange) {
  TempDir dir;
  const std::string path = dir.file("labels.gz");
  Bytes b = testing::idx_labels(6);
  b[8 + 3] = 12;
  testing::write_file(path, b, true);
  const std::string message = user_error_of([&] { read_idx_labels(path); });
  EXPECT_CONTAINS(message, path + " has label 12 at index 3, outside 0..9");
}

TEST(IdxReader, AbsurdHeadersAreRefusedBeforeAllocating) {
  TempDir dir;
  const std::string images = dir.file("imgs"), labels = dir.file("labels");
  testing::write_file(images, testing::idx_header(0x803, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}));
  std::string message = user_error_of([&] { read_idx_images(images); });
  EXPECT_CONTAINS(message, images + " has an implausible header: it says 4294967295 images of 4294967295x4294967295");
  testing::write_file(images, testing::idx_header(0x803, {100000, 2000, 2000}));
  EXPECT_CONTAINS(user_error_of([&] { read_idx_images(images); }), "implausible header");
  testing::write_file(images, testing::idx_header(0x803, {1, 0x80000000u, 1}));  // 2 GiB in one row
  EXPECT_CONTAINS(user_error_of([&] { read_idx_images(images); }), "images wider or taller than 65536 pixels");
  testing::write_file(labels, testing::idx_header(0x801, {0xFFFFFFFFu}));
  EXPECT_CONTAINS(user_error_of([&] { read_idx_labels(labels); }), labels + " has an implausible header");
}

TEST(IdxReader, ZeroDimensionsAreRefused) {
  TempDir dir;
  const std::string images = dir.file("imgs"), labels = dir.file("labels");
  testing::write_file(images, testing::idx_header(0x803, {10, 0, 28}));
  EXPECT_CONTAINS(user_error_of([&] { read_idx_images(images); }),
                  images + " has an empty dimension: header says 10 images of 0x28");
  testing::write_file(labels, testing::idx_header(0x801, {0}));
  EXPECT_CONTAINS(user_error_of([&] { read_idx_labels(labels); }), labels + " holds no labels");
}

TEST(MnistLoader, LoadsPlainAndGzipDirectories) {
  for (bool gzip : {false, true}) {
    TempDir dir;
    testing::write_mnist_dir(dir.path(), 12, 5, gzip);
    const TrainTest data = load_mnist_like(dir.path(), MnistKind::FashionMnist);
    EXPECT_EQ(data.train.size(), 12);
    EXPECT_EQ(data.test.size(), 5);
    EXPECT_EQ(data.train.name, "fashion-mnist/train");
    EXPECT_EQ(data.test.name, "fashion-mnist/test");
    EXPECT_EQ(data.train.channels, 1);
    EXPECT_EQ(data.train.height, 28);
    EXPECT_EQ(data.train.width, 28);
    EXPECT_EQ(data.train.num_classes, 10);
    EXPECT_FLOAT_EQ(data.train.mean[0], 0.2860f);
    EXPECT_FLOAT_EQ(data.train.std[0], 0.3530f);
    EXPECT_EQ(data.test.image(4)[100], testing::fixture_pixel(4, 100));
    EXPECT_EQ(data.train.labels[11], testing::fixture_label(11, 10));
  }
}

TEST(MnistLoader, MnistStatisticsAndMixedCompression) {
  TempDir dir;
  testing::write_file(dir.file("train-images-idx3-ubyte"), testing::idx_images(3, 28, 28));
  testing::write_file(dir.file("train-labels-idx1-ubyte.gz"), testing::idx_labels(3), true);
  testing::write_file(dir.file("t10k-images-idx3-ubyte.gz"), testing::idx_images(2, 28, 28), true);
  testing::write_file(dir.file("t10k-labels-idx1-ubyte"), testing::idx_labels(2));
  const TrainTest data = load_mnist_like(dir.path(), MnistKind::Mnist);
  EXPECT_EQ(data.train.name, "mnist/train");
  EXPECT_FLOAT_EQ(data.train.mean[0], 0.1307f);
  EXPECT_FLOAT_EQ(data.train.std[0], 0.3081f);
  EXPECT_EQ(data.test.size(), 2);
}

TEST(MnistLoader, CountMismatchNamesBothFiles) {
  TempDir dir;
  testing::write_mnist_dir(dir.path(), 12, 5, false);
  testing::write_file(dir.file("train-labels-idx1-ubyte"), testing::idx_labels(11));
  const std::string message = user_error_of([&] { load_mnist_like(dir.path(), MnistKind::Mnist); });
  EXPECT_CONTAINS(message, dir.file("train-images-idx3-ubyte") + " holds 12 images but " +
                               dir.file("train-labels-idx1-ubyte") + " holds 11 labels");
}

TEST(MnistLoader, MissingFileNamesDirectoryAndFile) {
  TempDir dir;
  testing::write_mnist_dir(dir.path(), 4, 4, true);
  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte.gz"));
  const std::string message = user_error_of([&] { load_mnist_like(dir.path(), MnistKind::Mnist); });
  EXPECT_CONTAINS(message, dir.path() + " has neither t10k-labels-idx1-ubyte nor t10k-labels-idx1-ubyte.gz");
}

TEST(MnistLoader, MissingDirectoryAndMnistWithoutDirectory) {
  TempDir dir;
  const std::string missing = dir.file("nowhere");
  EXPECT_CONTAINS(user_error_of([&] { load_mnist_like(missing, MnistKind::Mnist); }), missing + " does not exist");
  EXPECT_CONTAINS(user_error_of([&] { load_mnist_like("", MnistKind::Mnist); }), "--data mnist:/path");
}

TEST(MnistLoader, MixedImageSizesAreRefused) {
  TempDir dir;
  testing::write_mnist_dir(dir.path(), 4, 4, false);
  testing::write_file(dir.file("t10k-images-idx3-ubyte"), testing::idx_images(4, 32, 32));
  EXPECT_CONTAINS(user_error_of([&] { load_mnist_like(dir.path(), MnistKind::Mnist); }), "mixes image sizes");
}

TEST(MnistLoader, LoadDatasetThroughSpecWithTrainLimit) {
  TempDir dir;
  testing::write_mnist_dir(dir.path(), 20, 6, true);
  const TrainTest data = load_dataset(parse_dataset_spec("mnist:" + dir.path()), 8);
  EXPECT_EQ(data.train.size(), 8);
  EXPECT_EQ(data.train.images.size(), 8u * 28 * 28);
  EXPECT_EQ(data.test.size(), 6);
  EXPECT_EQ(data.train.image(7)[5], testing::fixture_pixel(7, 5));
  EXPECT_EQ(load_dataset(parse_dataset_spec("mnist:" + dir.path()), 100).train.size(), 20);
}

// The real Fashion-MNIST of Debian's dataset-fashion-mnist package, where it is installed.
TEST(MnistLoader, InstalledFashionMnist) {
  if (!std::filesystem::is_directory(kFashionMnistDefaultDir))
    GTEST_SKIP() << kFashionMnistDefaultDir << " is not installed (apt-get install dataset-fashion-mnist)";
  const TrainTest data = load_dataset(parse_dataset_spec("fashion-mnist"));
  EXPECT_EQ(data.train.size(), 60000);
  EXPECT_EQ(data.test.size(), 10000);
  for (const Dataset* d : {&data.train, &data.test}) {
    EXPECT_EQ(d->channels, 1);
    EXPECT_EQ(d->height, 28);
    EXPECT_EQ(d->width, 28);
    std::vector<int64_t> per_class(10, 0);
    for (int32_t label : d->labels) {
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 10);
      ++per_class[label];
    }
    for (int64_t count : per_class) EXPECT_EQ(count, d->size() / 10);  // Fashion-MNIST is balanced
  }
  // The published statistics should match the training pixels.
  double sum = 0, sum_sq = 0;
  for (uint8_t p : data.train.images) {
    sum += p / 255.0;
    sum_sq += (p / 255.0) * (p / 255.0);
  }
  const double n = static_cast<double>(data.train.images.size());
  EXPECT_NEAR(sum / n, data.train.mean[0], 1e-3);
  EXPECT_NEAR(std::sqrt(sum_sq / n - (sum / n) * (sum / n)), data.train.std[0], 1e-3);
}

// Regression, found by fuzzing (tests/fuzz, docs/fuzzing.md): a 19-byte file whose header claims 2^31
// bytes made the reader allocate and clear 2 GiB before it found the file truncated. Memory now grows
// with the data that arrives. The reads run in a child process whose address space can't grow by more
// than 256 MiB, where the old reader died of std::bad_alloc.
void limit_address_space_growth(uint64_t bytes) {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  const uint64_t now = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const rlimit limit{now + bytes, now + bytes};
  if (pages == 0 || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
}

TEST(IdxReader, HugeHeaderOnATinyFileIsTruncationWithoutAllocatingIt) {
  TempDir dir;
  for (bool gzip : {false, true}) {
    const std::string images = dir.file(gzip ? "imgs.gz" : "imgs"), labels = dir.file(gzip ? "labels.gz" : "labels");
    Bytes b = testing::idx_header(0x00000803, {32768, 256, 256});  // 32768 x 65536 = 2^31 bytes
    b.insert(b.end(), {1, 2, 3});
    testing::write_file(images, b, gzip);
    Bytes l = testing::idx_header(0x00000801, {1u << 31});
    l.insert(l.end(), {1, 2, 3});
    testing::write_file(labels, l, gzip);
    EXPECT_EXIT(
        {
          limit_address_space_growth(uint64_t{256} << 20);
          bool ok = false;
          try {
            read_idx_images(images);
          } catch (const UserError& e) {
            ok = testing::contains(e.what(), "is truncated: header says 32768 images of 256x256 but");
          }
          try {
            read_idx_labels(labels);
            ok = false;
          } catch (const UserError& e) {
            ok = ok && testing::contains(e.what(), "is truncated: header says 2147483648 labels but");
          }
          std::_Exit(ok ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "")
        << (gzip ? "gzip" : "plain");
  }
}

// The body is read in growing chunks: files around the chunk sizes read back byte for byte.
TEST(IdxReader, BodiesAroundTheChunkSizesRoundTrip) {
  TempDir dir;
  for (uint32_t rows : {1u, 2u, 3u, 64u}) {  // 64 KiB + 256 bytes .. 4 MiB + 16 KiB
    for (bool gzip : {false, true}) {
      const std::string path = dir.file(gzip ? "imgs.gz" : "imgs");
      testing::write_file(path, testing::idx_images(257, rows, 256), gzip);
      const IdxImages images = read_idx_images(path);
      ASSERT_EQ(images.pixels.size(), size_t{257} * rows * 256) << rows << (gzip ? " gzip" : " plain");
      EXPECT_EQ(images.pixels.capacity(), images.pixels.size());
      const int64_t per = int64_t{rows} * 256;
      for (int64_t i : {int64_t{0}, int64_t{128}, int64_t{256}})
        for (int64_t k : {int64_t{0}, per / 2, per - 1})
          ASSERT_EQ(images.pixels[static_cast<size_t>(i * per + k)], testing::fixture_pixel(i, k)) << i << " " << k;
    }
  }
}

}  // namespace
}  // namespace sb

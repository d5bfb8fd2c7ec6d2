// CIFAR-10 and CIFAR-100 binary readers, on fixture files written here.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "data/cifar.h"
#include "data/dataset_spec.h"
#include "data/gz_file.h"
#include "unit/data_fixtures.h"

namespace sb {
namespace {

using testing::Bytes;
using testing::TempDir;
using testing::user_error_of;

// Five training batches of 3, 2, 4, 1, 2 records (12 in all) and a test batch of 5.
void write_cifar10(const std::string& dir) {
  const int sizes[5] = {3, 2, 4, 1, 2};
  int64_t first = 0;
  for (int b = 0; b < 5; ++b) {
    testing::write_file(dir + "/data_batch_" + std::to_string(b + 1) + ".bin",
                        testing::cifar10_records(first, sizes[b]));
    first += sizes[b];
  }
  testing::write_file(dir + "/test_batch.bin", testing::cifar10_records(1000, 5));
}

void write_cifar100(const std::string& dir) {
  testing::write_file(dir + "/train.bin", testing::cifar100_records(0, 9));
  testing::write_file(dir + "/test.bin", testing::cifar100_records(500, 4));
}

TEST(Cifar10Reader, ReadsAllBatchesInOrder) {
  TempDir dir;
  write_cifar10(dir.path());
  const TrainTest data = load_cifar10(dir.path());
  ASSERT_EQ(data.train.size(), 12);
  ASSERT_EQ(data.test.size(), 5);
  EXPECT_EQ(data.train.name, "cifar10/train");
  EXPECT_EQ(data.train.channels, 3);
  EXPECT_EQ(data.train.height, 32);
  EXPECT_EQ(data.train.width, 32);
  EXPECT_EQ(data.train.num_classes, 10);
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(data.train.labels[i], testing::fixture_label(i, 10));
    for (int k : {0, 1023, 1024, 2048, 3071}) ASSERT_EQ(data.train.image(i)[k], testing::fixture_pixel(i, k));
  }
  EXPECT_EQ(data.test.labels[2], testing::fixture_label(1002, 10));
  EXPECT_EQ(data.test.image(4)[3000], testing::fixture_pixel(1004, 3000));
  const std::vector<float> mean{0.4914f, 0.4822f, 0.4465f}, stdev{0.2470f, 0.2435f, 0.2616f};
  EXPECT_EQ(data.train.mean, mean);
  EXPECT_EQ(data.train.std, stdev);
  EXPECT_EQ(data.test.mean, mean);
}

TEST(Cifar10Reader, AcceptsTheParentDirectory) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("cifar-10-batches-bin"));
  write_cifar10(dir.file("cifar-10-batches-bin"));
  EXPECT_EQ(load_dataset(parse_dataset_spec("cifar10:" + dir.path())).train.size(), 12);
}

TEST(Cifar10Reader, PartialRecordIsAnError) {
  TempDir dir;
  write_cifar10(dir.path());
  Bytes b = testing::cifar10_records(0, 3);
  b.resize(b.size() - 100);
  testing::write_file(dir.file("data_batch_3.bin"), b);
  const std::string message = user_error_of([&] { load_cifar10(dir.path()); });
  EXPECT_CONTAINS(message, dir.file("data_batch_3.bin") + " is 9119 bytes, not a whole number of 3073-byte records");
  EXPECT_CONTAINS(message, "(2 records and 2973 bytes over)");
}

TEST(Cifar10Reader, EmptyFileIsAnError) {
  TempDir dir;
  write_cifar10(dir.path());
  testing::write_file(dir.file("test_batch.bin"), Bytes{});
  EXPECT_CONTAINS(user_error_of([&] { load_cifar10(dir.path()); }), dir.file("test_batch.bin") + " is empty");
}

TEST(Cifar10Reader, LabelOutOfRange) {
  TempDir dir;
  write_cifar10(dir.path());
  Bytes b = testing::cifar10_records(0, 2);
  b[3073] = 10;  // label of record 1
  testing::write_file(dir.file("data_batch_2.bin"), b);
  EXPECT_CONTAINS(user_error_of([&] { load_cifar10(dir.path()); }),
                  dir.file("data_batch_2.bin") + " has label 10 in record 1, outside 0..9");
}

TEST(Cifar10Reader, MissingFileAndDirectory) {
  TempDir dir;
  write_cifar10(dir.path());
  std::filesystem::remove(dir.file("data_batch_4.bin"));
  EXPECT_CONTAINS(user_error_of([&] { load_cifar10(dir.path()); }), dir.file("data_batch_4.bin") + " does not exist");
  EXPECT_CONTAINS(user_error_of([&] { load_cifar10(dir.file("nope")); }), dir.file("nope") + " does not exist");
  EXPECT_CONTAINS(user_error_of([&] { load_cifar10(dir.file("test_batch.bin")); }), " is not a directory");
}

TEST(Cifar100Reader, TrainsOnFineLabels) {
  TempDir dir;
  write_cifar100(dir.path());
  const TrainTest data = load_cifar100(dir.path());
  ASSERT_EQ(data.train.size(), 9);
  ASSERT_EQ(data.test.size(), 4);
  EXPECT_EQ(data.train.num_classes, 100);
  EXPECT_EQ(data.train.name, "cifar100/train");
  bool some_differ = false;
  for (int64_t i = 0; i < 9; ++i) {
    EXPECT_EQ(data.train.labels[i], testing::fixture_fine_label(i));
    some_differ |= data.train.labels[i] != testing::fixture_fine_label(i) / 5;
    // Pixels start after both label bytes.
    for (int k : {0, 1, 3071}) ASSERT_EQ(data.train.image(i)[k], testing::fixture_pixel(i, k));
  }
  EXPECT_TRUE(some_differ) << "the fixture's fine and coarse labels should differ";
  EXPECT_EQ(data.test.labels[3], testing::fixture_fine_label(503));
  const std::vector<float> mean{0.5071f, 0.4865f, 0.4409f}, stdev{0.2673f, 0.2564f, 0.2762f};
  EXPECT_EQ(data.train.mean, mean);
  EXPECT_EQ(data.train.std, stdev);
}

TEST(Cifar100Reader, AcceptsTheParentDirectoryAndGzip) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("cifar-100-binary"));
  testing::write_file(dir.file("cifar-100-binary/train.bin"), testing::cifar100_records(0, 3), true);
  testing::write_file(dir.file("cifar-100-binary/test.bin"), testing::cifar100_records(0, 2));
  const TrainTest data = load_dataset(parse_dataset_spec("cifar100:" + dir.path()));
  EXPECT_EQ(data.train.size(), 3);
  EXPECT_EQ(data.test.size(), 2);
}

TEST(Cifar100Reader, CoarseAndFineLabelRanges) {
  TempDir dir;
  write_cifar100(dir.path());
  Bytes b = testing::cifar100_records(0, 3);
  b[2 * 3074] = 20;  // coarse label of record 2
  testing::write_file(dir.file("train.bin"), b);
  EXPECT_CONTAINS(user_error_of([&] { load_cifar100(dir.path()); }),
                  dir.file("train.bin") + " has coarse label 20 in record 2, outside 0..19");
  b = testing::cifar100_records(0, 3);
  b[3074 + 1] = 100;  // fine label of record 1
  testing::write_file(dir.file("test.bin"), b);
  write_cifar100(dir.path());
  testing::write_file(dir.file("test.bin"), b);
  EXPECT_CONTAINS(user_error_of([&] { load_cifar100(dir.path()); }),
                  dir.file("test.bin") + " has fine label 100 in record 1, outside 0..99");
}

TEST(Cifar100Reader, Cifar10FileIsNotWholeRecords) {
  TempDir dir;
  write_cifar100(dir.path());
  testing::write_file(dir.file("train.bin"), testing::cifar10_records(0, 5));  // 5 x 3073 bytes
  EXPECT_CONTAINS(user_error_of([&] { load_cifar100(dir.path()); }), "not a whole number of 3074-byte records");
}

TEST(WholeFileReader, RefusesFilesOverTheLimitPlainOrCompressed) {
  TempDir dir;
  const Bytes content(3 << 20, 7);  // 3 MiB, compresses to a few KiB
  testing::write_file(dir.file("plain"), content);
  testing::write_file(dir.file("packed.gz"), content, true);
  EXPECT_EQ(read_whole_file(dir.file("plain"), 3 << 20), content);
  EXPECT_EQ(read_whole_file(dir.file("packed.gz"), 3 << 20), content);
  for (const char* name : {"plain", "packed.gz"})
    EXPECT_CONTAINS(user_error_of([&] { read_whole_file(dir.file(name), (3 << 20) - 1); }),
                    dir.file(name) + " is larger than the 3145727 bytes");
}

// read_whole_file reads a small plain file in one read of its size plus one byte (the fuzz targets
// made this path hot): sizes around that and the 1 MiB chunk read back whole, plain or compressed, and
// the limit still holds to the byte.
TEST(WholeFileReader, SizesAroundTheFirstReadAndTheChunkRoundTrip) {
  TempDir dir;
  for (size_t size : {size_t{0}, size_t{1}, size_t{3073}, (size_t{1} << 20) - 1, size_t{1} << 20, (size_t{1} << 20) + 1,
                      (size_t{2} << 20) + 5}) {
    Bytes content(size);
    for (size_t i = 0; i < size; ++i) content[i] = static_cast<uint8_t>(i * 7 + i / 251);
    for (bool gzip : {false, true}) {
      const std::string path = dir.file(gzip ? "f.gz" : "f");
      testing::write_file(path, content, gzip);
      EXPECT_EQ(read_whole_file(path, size), content) << size << (gzip ? " gzip" : " plain");
      if (size > 0) {
        EXPECT_CONTAINS(user_error_of([&] { read_whole_file(path, size - 1); }), " is larger than the ");
      }
    }
  }
}

}  // namespace
}  // namespace sb

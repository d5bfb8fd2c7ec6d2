// The decoded-data cache (data/data_cache.h) and the parallel decoding of data set files
// (data/parallel_decode.h): a cache file gives back exactly the tensors that decoding gives, and any
// file that is damaged, foreign, cut short or stale is refused, never trusted.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "data/cifar.h"
#include "data/data_cache.h"
#include "data/dataset_spec.h"
#include "data/mnist.h"
#include "data/parallel_decode.h"
#include "unit/data_fixtures.h"

namespace sb {
namespace {

using testing::Bytes;
using testing::TempDir;

void expect_same_split(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.std, b.std);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_TRUE(a.images == b.images) << a.name << ": the pixels differ";
}

void expect_same(const TrainTest& a, const TrainTest& b) {
  expect_same_split(a.train, b.train);
  expect_same_split(a.test, b.test);
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A directory of Fashion-MNIST-like files and its key.
struct MnistSource {
  TempDir dir;
  MnistFiles files;
  std::string key;
  explicit MnistSource(uint32_t train = 12, uint32_t test = 5) {
    testing::write_mnist_dir(dir.path(), train, test, /*gzip=*/true);
    files = find_mnist_files(dir.path(), MnistKind::FashionMnist);
    key = data_cache_key("fashion-mnist", files.all());
  }
  TrainTest decode() const { return read_mnist_files(files, MnistKind::FashionMnist); }
};

std::string refusal(const Bytes& bytes) {
  std::string why;
  EXPECT_FALSE(decode_data_cache(bytes.data(), bytes.size(), &why).has_value());
  return why;
}

TEST(ParallelDecode, MnistParallelEqualsSerial) {
  MnistSource source(40, 9);
  expect_same(read_mnist_files(source.files, MnistKind::FashionMnist, Decode::Parallel),
              read_mnist_files(source.files, MnistKind::FashionMnist, Decode::Serial));
}

TEST(ParallelDecode, CifarParallelEqualsSerialInFileOrder) {
  TempDir dir;
  for (int batch = 1; batch <= 5; ++batch)
    testing::write_file(dir.file("data_batch_" + std::to_string(batch) + ".bin"), testing::cifar10_records(3 * (batch - 1), 3));
  testing::write_file(dir.file("test_batch.bin"), testing::cifar10_records(100, 2));
  const CifarFiles files = find_cifar_files(dir.path(), CifarKind::Cifar10);
  const TrainTest parallel = read_cifar_files(files, CifarKind::Cifar10, Decode::Parallel);
  expect_same(parallel, read_cifar_files(files, CifarKind::Cifar10, Decode::Serial));
  ASSERT_EQ(parallel.train.size(), 15);
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(parallel.train.labels[static_cast<size_t>(i)], testing::fixture_label(i, 10));
  EXPECT_EQ(parallel.test.image(1)[7], testing::fixture_pixel(101, 7));
}

TEST(ParallelDecode, TheFirstFailingTaskInListOrderIsReported) {
  for (Decode mode : {Decode::Serial, Decode::Parallel}) {
    std::atomic<int> ran{0};
    try {
      run_decode_tasks({[&] { ++ran; },
                        [&] {
                          ++ran;
                          throw std::runtime_error("second");
                        },
                        [&] {
                          ++ran;
                          throw std::runtime_error("third");
                        }},
                       mode);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "second");
    }
    EXPECT_EQ(ran.load(), 3);  // every task ran to its end before the error came back
  }
}

TEST(DataCache, RoundTripGivesIdenticalTensors) {
  MnistSource source;
  const TrainTest decoded = source.decode();
  const Bytes file = encode_data_cache(source.key, decoded);
  std::string why;
  const std::optional<DataCacheFile> back = decode_data_cache(file.data(), file.size(), &why);
  ASSERT_TRUE(back.has_value()) << why;
  EXPECT_EQ(back->key, source.key);
  expect_same(back->data, decoded);
}

TEST(DataCache, ReadAfterWriteThroughTheFolder) {
  MnistSource source;
  TempDir cache_dir;
  const DataCache cache(cache_dir.path(), source.key);
  EXPECT_FALSE(cache.read().has_value());  // no file yet
  cache.write(source.decode());
  EXPECT_EQ(std::filesystem::path(cache.path()).parent_path().string(), cache_dir.path());
  const std::optional<TrainTest> cached = cache.read();
  ASSERT_TRUE(cached.has_value());
  expect_same(*cached, source.decode());
  // No temporary is left next to it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache_dir.path()), std::filesystem::directory_iterator{}), 1);
}

TEST(DataCache, LoadDatasetDecodesOnceThenReadsTheCache) {
  MnistSource source;
  TempDir cache_dir;
  const DatasetSpec spec = parse_dataset_spec("fashion-mnist:" + source.dir.path());
  const TrainTest first = load_dataset(spec, 0, cache_dir.path());
  const DataCache cache(cache_dir.path(), source.key);
  ASSERT_TRUE(std::filesystem::exists(cache.path()));
  const TrainTest second = load_dataset(spec, 7, cache_dir.path());
  expect_same_split(second.test, first.test);
  EXPECT_EQ(second.train.size(), 7);  // --train-limit still applies to cached data
  expect_same(load_dataset(spec, 0, cache_dir.path()), first);
  expect_same(load_dataset(spec, 0, ""), first);  // no folder: no cache, the same data
}

TEST(DataCache, ChangedSourceFilesRefuseTheirOldCacheFile) {
  MnistSource source;
  TempDir cache_dir;
  DataCache(cache_dir.path(), source.key).write(source.decode());
  // The same path with one label changed: a new key, the same cache file, which no longer matches.
  Bytes labels = testing::idx_labels(12);
  labels.back() = static_cast<uint8_t>((labels.back() + 1) % 10);
  testing::write_file(source.dir.file("train-labels-idx1-ubyte.gz"), labels, /*gzip=*/true);
  const std::string changed = data_cache_key("fashion-mnist", source.files.all());
  EXPECT_NE(changed, source.key);
  const DataCache cache(cache_dir.path(), changed);
  EXPECT_EQ(cache.path(), DataCache(cache_dir.path(), source.key).path());
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.read().has_value());
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("files changed since"), std::string::npos) << warning;
  // Through load_dataset the changed label arrives, and the cache holds the new files' data after it.
  const DatasetSpec spec = parse_dataset_spec("fashion-mnist:" + source.dir.path());
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(load_dataset(spec, 0, cache_dir.path()).train.labels.back(), labels.back());
  ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(cache.read().has_value());
  EXPECT_EQ(cache.read()->train.labels.back(), labels.back());
}

TEST(DataCache, OtherSourcePathsGetAnotherFile) {
  EXPECT_NE(DataCache("/c", "fashion-mnist\n/a/x\t1\t2\t00000000\n").path(),
            DataCache("/c", "fashion-mnist\n/b/x\t1\t2\t00000000\n").path());
  EXPECT_EQ(DataCache("/c", "fashion-mnist\n/a/x\t1\t2\t00000000\n").path(),
            DataCache("/c", "fashion-mnist\n/a/x\t9\t8\t12345678\n").path());
}

TEST(DataCache, CorruptPayloadIsRefused) {
  MnistSource source;
  Bytes file = encode_data_cache(source.key, source.decode());
  file[file.size() - 100] ^= 0x40;
  EXPECT_NE(refusal(file).find("checksum"), std::string::npos) << refusal(file);
}

TEST(DataCache, ForeignFilesAreRefused) {
  EXPECT_NE(refusal(testing::idx_labels(4)).find("bad magic"), std::string::npos);
  EXPECT_NE(refusal(Bytes{}).find("bad magic"), std::string::npos);
  MnistSource source;
  Bytes file = encode_data_cache(source.key, source.decode());
  file[8] = 99;  // another format version
  EXPECT_NE(refusal(file).find("format version 99"), std::string::npos) << refusal(file);
}

TEST(DataCache, AFileOfOtherSourcesIsNotUsed) {
  MnistSource source, other(12, 6);
  TempDir cache_dir;
  const DataCache cache(cache_dir.path(), source.key);
  // Another key's file under this key's name (a hash collision, a copied file): its key says so.
  std::filesystem::create_directories(cache_dir.path());
  const Bytes foreign = encode_data_cache(other.key, other.decode());
  testing::write_file(cache.path(), foreign);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.read().has_value());
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("data cache ignores " + cache.path()), std::string::npos) << warning;
  EXPECT_NE(warning.find("other source files"), std::string::npos) << warning;
}

TEST(DataCache, TruncatedFilesAreRefusedAtEveryLength) {
  MnistSource source(3, 2);
  const Bytes file = encode_data_cache(source.key, source.decode());
  for (size_t n = 0; n < file.size(); n += (n < 64 ? 1 : 97)) {
    const Bytes cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(refusal(cut).empty()) << n;
  }
  Bytes longer = file;
  longer.push_back(0);
  EXPECT_NE(refusal(longer).find("payload bytes but"), std::string::npos);
}

TEST(DataCache, ConcurrentWritersLeaveOneWholeFile) {
  MnistSource source(30, 8);
  TempDir cache_dir;
  const TrainTest data = source.decode();
  const DataCache cache(cache_dir.path(), source.key);
  std::atomic<bool> writing{true};
  std::atomic<int> whole_reads{0}, bad_reads{0};
  std::thread reader([&] {
    while (writing) {
      const Bytes bytes = read_bytes(cache.path());
      if (bytes.empty()) continue;  // not written yet
      std::string why;
      if (decode_data_cache(bytes.data(), bytes.size(), &why)) ++whole_reads;
      else ++bad_reads;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&] {
      for (int i = 0; i < 5; ++i) cache.write(data);
    });
  for (std::thread& t : writers) t.join();
  writing = false;
  reader.join();
  EXPECT_EQ(bad_reads.load(), 0);
  const std::optional<TrainTest> cached = cache.read();
  ASSERT_TRUE(cached.has_value());
  expect_same(*cached, data);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache_dir.path()), std::filesystem::directory_iterator{}), 1);
}

TEST(DataCache, AnUnwritableFolderWarnsAndTheRunGoesOn) {
  MnistSource source;
  TempDir dir;
  testing::write_file(dir.file("not-a-folder"), Bytes{1});
  const DataCache cache(dir.file("not-a-folder"), source.key);
  ::testing::internal::CaptureStderr();
  cache.write(source.decode());
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("data cache cannot save"), std::string::npos) << warning;
}

}  // namespace
}  // namespace sb

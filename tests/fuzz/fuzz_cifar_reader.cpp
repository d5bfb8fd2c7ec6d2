// Fuzzes the CIFAR-10 and CIFAR-100 loaders: a dataset directory of valid one-record files in which
// one file holds hostile bytes.
//
// Input: one mode byte, then the fuzzed file's bytes.
//   mode bit 0     0: CIFAR-10 (load_cifar10), 1: CIFAR-100 (load_cifar100)
//   mode bit 1     1: the file holds the gzip compression of the bytes (the reader reads through zlib)
//   mode bits 2-4  which file is fuzzed: CIFAR-10 data_batch_1..5.bin, test_batch.bin (value % 6);
//                  CIFAR-100 train.bin, test.bin (value % 2)
//   mode bit 5     pass the parent of the dataset directory (the loader must find the nested one)
// Allowed outcomes: a dataset, or sb::UserError. Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/cifar.h"
#include "fuzz_util.h"

using namespace sb;

namespace {

constexpr size_t kPixels = 3072;

fuzz::Bytes valid_records(bool cifar100, int count) {
  fuzz::Bytes b;
  for (int i = 0; i < count; ++i) {
    if (cifar100) b.push_back(static_cast<uint8_t>(i % 20));
    b.push_back(static_cast<uint8_t>(i % (cifar100 ? 100 : 10)));
    for (size_t k = 0; k < kPixels; ++k) b.push_back(static_cast<uint8_t>(i * 31 + k * 7));
  }
  return b;
}

struct Layout {
  fuzz::ScratchDir root;
  std::string dir10 = root.path() + "/cifar-10-batches-bin";
  std::string dir100 = root.path() + "/cifar-100-binary";
  std::vector<std::string> files10, files100;
  fuzz::Bytes valid10 = valid_records(false, 1), valid100 = valid_records(true, 1);

  Layout() {
    std::filesystem::create_directory(dir10);
    std::filesystem::create_directory(dir100);
    for (int b = 1; b <= 5; ++b) files10.push_back(dir10 + "/data_batch_" + std::to_string(b) + ".bin");
    files10.push_back(dir10 + "/test_batch.bin");
    files100 = {dir100 + "/train.bin", dir100 + "/test.bin"};
    for (const auto& f : files10) fuzz::write_file(f, valid10);
    for (const auto& f : files100) fuzz::write_file(f, valid100);
  }
};

void check(const TrainTest& t, int classes) {
  for (const Dataset* d : {&t.train, &t.test}) {
    SB_FUZZ_REQUIRE(!d->labels.empty());
    SB_FUZZ_REQUIRE(d->images.size() == d->labels.size() * kPixels);
    SB_FUZZ_REQUIRE(d->num_classes == classes);
    for (int32_t label : d->labels) SB_FUZZ_REQUIRE(label >= 0 && label < classes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Layout layout;
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const bool cifar100 = mode & 1;
  const auto& files = cifar100 ? layout.files100 : layout.files10;
  const std::string& target = files[((mode >> 2) & 7) % files.size()];
  if (mode & 2)
    fuzz::write_file(target, fuzz::gzip(data + 1, size - 1));
  else
    fuzz::write_file(target, data + 1, size - 1);
  const std::string dir = (mode & 32) ? layout.root.path() : (cifar100 ? layout.dir100 : layout.dir10);
  try {
    if (cifar100)
      check(load_cifar100(dir), 100);
    else
      check(load_cifar10(dir), 10);
  } catch (const UserError& e) {
    fuzz::expected(e);  // the answer to a bad file
  }
  fuzz::write_file(target, cifar100 ? layout.valid100 : layout.valid10);
  return 0;
}

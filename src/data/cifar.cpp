#include "data/cifar.h"

#include <filesystem>
#include <functional>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "data/gz_file.h"

namespace sb {

namespace {

constexpr int kSide = 32;
constexpr int kPixelBytes = 3 * kSide * kSide;
// The largest CIFAR file (cifar-100 train.bin) is 154 MB; refuse anything past 2 GiB unread.
constexpr uint64_t kMaxCifarFileBytes = uint64_t{1} << 31;

struct RecordFormat {
  int label_bytes;          // 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine)
  int label_byte_used;      // which label byte is the training label
  int classes_per_byte[2];  // valid range of each label byte
  const char* label_names[2];
};

constexpr RecordFormat kCifar10{1, 0, {10, 0}, {"label", ""}};
constexpr RecordFormat kCifar100{2, 1, {20, 100}, {"coarse label", "fine label"}};

// The records of one file.
struct Records {
  std::vector<int32_t> labels;
  std::vector<uint8_t> images;
};

Records read_records(const std::string& path, const RecordFormat& format) {
  const std::vector<uint8_t> bytes = read_whole_file(path, kMaxCifarFileBytes);
  const size_t record = static_cast<size_t>(format.label_bytes) + kPixelBytes;
  if (bytes.empty()) throw UserError(path + " is empty; re-download the dataset");
  if (bytes.size() % record != 0)
    throw UserError(path + " is " + std::to_string(bytes.size()) + " bytes, not a whole number of " +
                    std::to_string(record) + "-byte records (" + std::to_string(bytes.size() / record) +
                    " records and " + std::to_string(bytes.size() % record) +
                    " bytes over); it is truncated or not a file of this dataset, re-download it");
  const size_t count = bytes.size() / record;
  Records d;
  d.labels.resize(count);
  d.images.resize(count * kPixelBytes);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* r = bytes.data() + i * record;
    for (int b = 0; b < format.label_bytes; ++b)
      if (r[b] >= format.classes_per_byte[b])
        throw UserError(path + " has " + format.label_names[b] + " " + std::to_string(r[b]) + " in record " +
                        std::to_string(i) + ", outside 0.." + std::to_string(format.classes_per_byte[b] - 1) +
                        "; the file is corrupt or not a file of this dataset");
    d.labels[i] = r[format.label_byte_used];
    std::copy(r + format.label_bytes, r + record, d.images.begin() + static_cast<std::ptrdiff_t>(i * kPixelBytes));
  }
  return d;
}

void append(Records& records, Dataset& split) {
  split.labels.insert(split.labels.end(), records.labels.begin(), records.labels.end());
  split.images.insert(split.images.end(), records.images.begin(), records.images.end());
  records = Records{};  // its memory goes at once
}

// The dataset directory: dir itself, or dir/subdir when the user gave the folder it was unpacked in.
std::string resolve_dir(const std::string& dir, const std::string& subdir, const std::string& probe_file,
                        const char* kind, const char* url) {
  std::error_code ec;
  if (dir.empty())
    throw UserError(std::string(kind) + " needs the directory of its files: use --data " + kind + ":/path/to/" +
                    subdir);
  if (!std::filesystem::is_directory(dir, ec))
    throw UserError(dir + (std::filesystem::exists(dir, ec) ? " is not a directory" : " does not exist") +
                    "; give the " + subdir + " directory of " + url + " (unpacked), e.g. --data " + kind + ":/data/" +
                    subdir);
  const auto nested = std::filesystem::path(dir) / subdir;
  if (!std::filesystem::exists(std::filesystem::path(dir) / probe_file, ec) &&
      std::filesystem::is_directory(nested, ec))
    return nested.string();
  return dir;
}

Dataset make_split(const char* name, int classes, std::vector<float> mean, std::vector<float> stdev) {
  Dataset d;
  d.name = name;
  d.channels = 3;
  d.height = kSide;
  d.width = kSide;
  d.num_classes = classes;
  d.mean = std::move(mean);
  d.std = std::move(stdev);
  return d;
}

std::string in(const std::string& dir, const std::string& file) { return (std::filesystem::path(dir) / file).string(); }

}  // namespace

CifarFiles find_cifar_files(const std::string& dir_arg, CifarKind kind) {
  CifarFiles files;
  if (kind == CifarKind::Cifar10) {
    const std::string dir = resolve_dir(dir_arg, "cifar-10-batches-bin", "test_batch.bin", "cifar10",
                                        "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz");
    for (int batch = 1; batch <= 5; ++batch) files.train.push_back(in(dir, "data_batch_" + std::to_string(batch) + ".bin"));
    files.test.push_back(in(dir, "test_batch.bin"));
  } else {
    const std::string dir = resolve_dir(dir_arg, "cifar-100-binary", "test.bin", "cifar100",
                                        "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz");
    files.train.push_back(in(dir, "train.bin"));
    files.test.push_back(in(dir, "test.bin"));
  }
  return files;
}

TrainTest read_cifar_files(const CifarFiles& files, CifarKind kind, Decode decode) {
  const bool ten = kind == CifarKind::Cifar10;
  const RecordFormat& format = ten ? kCifar10 : kCifar100;
  const std::vector<std::string> paths = files.all();
  std::vector<Records> parts(paths.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < paths.size(); ++i) tasks.emplace_back([&, i] { parts[i] = read_records(paths[i], format); });
  run_decode_tasks(tasks, decode);
  const std::vector<float> mean = ten ? std::vector<float>{0.4914f, 0.4822f, 0.4465f} : std::vector<float>{0.5071f, 0.4865f, 0.4409f};
  const std::vector<float> stdev = ten ? std::vector<float>{0.2470f, 0.2435f, 0.2616f} : std::vector<float>{0.2673f, 0.2564f, 0.2762f};
  const int classes = ten ? 10 : 100;
  TrainTest out{make_split(ten ? "cifar10/train" : "cifar100/train", classes, mean, stdev),
                make_split(ten ? "cifar10/test" : "cifar100/test", classes, mean, stdev)};
  for (Dataset* split : {&out.train, &out.test}) {  // each split's memory once, not grown file by file
    const bool train = split == &out.train;
    size_t samples = 0;
    for (size_t i = 0; i < parts.size(); ++i)
      if ((i < files.train.size()) == train) samples += parts[i].labels.size();
    split->labels.reserve(samples);
    split->images.reserve(samples * kPixelBytes);
  }
  for (size_t i = 0; i < parts.size(); ++i) append(parts[i], i < files.train.size() ? out.train : out.test);
  return out;
}

TrainTest load_cifar10(const std::string& dir) {
  return read_cifar_files(find_cifar_files(dir, CifarKind::Cifar10), CifarKind::Cifar10);
}

TrainTest load_cifar100(const std::string& dir) {
  return read_cifar_files(find_cifar_files(dir, CifarKind::Cifar100), CifarKind::Cifar100);
}

}  // namespace sb

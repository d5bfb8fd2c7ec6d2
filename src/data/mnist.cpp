#include "data/mnist.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "data/gz_file.h"
#include "data/idx_reader.h"

namespace sb {

namespace {

const char* kind_name(MnistKind kind) { return kind == MnistKind::Mnist ? "mnist" : "fashion-mnist"; }

std::string find_file(const std::string& dir, const std::string& name) {
  const std::string path = plain_or_gz((std::filesystem::path(dir) / name).string());
  if (path.empty())
    throw UserError(dir + " has neither " + name + " nor " + name +
                    ".gz; the directory should hold train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                    "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (each plain or .gz)");
  return path;
}

// One split from its decoded files.
Dataset make_split(IdxImages images, std::vector<int32_t> labels, const std::string& images_path,
                   const std::string& labels_path, const char* split, MnistKind kind) {
  if (static_cast<int64_t>(labels.size()) != images.count)
    throw UserError(images_path + " holds " + std::to_string(images.count) + " images but " + labels_path + " holds " +
                    std::to_string(labels.size()) + " labels; the two files don't belong together, re-download them");
  Dataset d;
  d.name = std::string(kind_name(kind)) + "/" + split;
  d.channels = 1;
  d.height = images.rows;
  d.width = images.cols;
  d.num_classes = 10;
  d.images = std::move(images.pixels);
  d.labels = std::move(labels);
  if (kind == MnistKind::Mnist) {
    d.mean = {0.1307f};
    d.std = {0.3081f};
  } else {
    d.mean = {0.2860f};
    d.std = {0.3530f};
  }
  return d;
}

}  // namespace

MnistFiles find_mnist_files(const std::string& dir_or_empty, MnistKind kind) {
  const bool use_default = dir_or_empty.empty();
  if (use_default && kind == MnistKind::Mnist)
    throw UserError("mnist needs the directory of its files: use --data mnist:/path/to/mnist");
  const std::string dir = use_default ? kFashionMnistDefaultDir : dir_or_empty;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (use_default)
      throw UserError(dir +
                      " does not exist: install Fashion-MNIST with `apt-get install dataset-fashion-mnist`, "
                      "or give its directory with --data fashion-mnist:/path");
    throw UserError(dir + (std::filesystem::exists(dir, ec) ? " is not a directory" : " does not exist") +
                    "; give the directory that holds the " + kind_name(kind) + " files, e.g. --data " +
                    kind_name(kind) + ":/path/to/dir");
  }
  return MnistFiles{find_file(dir, "train-images-idx3-ubyte"), find_file(dir, "train-labels-idx1-ubyte"),
                    find_file(dir, "t10k-images-idx3-ubyte"), find_file(dir, "t10k-labels-idx1-ubyte")};
}

TrainTest read_mnist_files(const MnistFiles& files, MnistKind kind, Decode decode) {
  IdxImages train_images, test_images;
  std::vector<int32_t> train_labels, test_labels;
  run_decode_tasks({[&] { train_images = read_idx_images(files.train_images); },
                    [&] { train_labels = read_idx_labels(files.train_labels, 10); },
                    [&] { test_images = read_idx_images(files.test_images); },
                    [&] { test_labels = read_idx_labels(files.test_labels, 10); }},
                   decode);
  TrainTest out;
  out.train = make_split(std::move(train_images), std::move(train_labels), files.train_images, files.train_labels, "train", kind);
  out.test = make_split(std::move(test_images), std::move(test_labels), files.test_images, files.test_labels, "test", kind);
  if (out.test.height != out.train.height || out.test.width != out.train.width)
    throw UserError(std::filesystem::path(files.train_images).parent_path().string() +
                    " mixes image sizes: training images are " + std::to_string(out.train.height) + "x" +
                    std::to_string(out.train.width) + " but test images are " + std::to_string(out.test.height) + "x" +
                    std::to_string(out.test.width) + "; the files don't belong together");
  return out;
}

TrainTest load_mnist_like(const std::string& dir, MnistKind kind) { return read_mnist_files(find_mnist_files(dir, kind), kind); }

}  // namespace sb

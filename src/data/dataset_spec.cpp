#include "data/dataset_spec.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <stdexcept>

#include "core/error.h"
#include "data/cifar.h"
#include "data/data_cache.h"
#include "data/host_batch.h"
#include "data/image_batch.h"
#include "data/image_data_sets.h"
#include "data/mnist.h"

namespace sb {

namespace {

int64_t parse_count(const std::string& text, const std::string& field, const char* what) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size() || value < 1)
    throw UserError("--data '" + text + "': the " + what + " '" + field + "' is not a positive whole number; " +
                    valid_dataset_forms());
  return value;
}

// A file-backed form: everything after the first ':' is the directory.
DatasetSpec parse_directory(const DatasetForm& form, const std::string& text, const std::optional<std::string>& rest) {
  const bool has_default_dir = form.kind == DatasetKind::FashionMnist;
  if ((!rest || rest->empty()) && !has_default_dir)
    throw UserError("--data '" + text + "' needs the dataset's directory: " + form.name + ":/path/to/files");
  DatasetSpec spec;
  spec.kind = form.kind;
  spec.path = rest.value_or("");
  return spec;
}

// "synthetic", "synthetic:CxHxW:classes" or "synthetic:CxHxW:classes:TRAIN:TEST".
DatasetSpec parse_synthetic(const DatasetForm&, const std::string& text, const std::optional<std::string>& given) {
  DatasetSpec spec;
  spec.kind = DatasetKind::Synthetic;
  if (!given) return spec;
  const std::string& rest = *given;
  if (rest.empty()) throw UserError("--data '" + text + "' ends in ':'; " + valid_dataset_forms());
  const size_t c1 = rest.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : rest.find(':', c1 + 1);
  if (c2 == std::string::npos) {
    spec.synthetic = parse_synthetic_shape(rest);
    return spec;
  }
  const size_t c3 = rest.find(':', c2 + 1);
  if (c3 == std::string::npos || rest.find(':', c3 + 1) != std::string::npos)
    throw UserError("--data '" + text + "': give synthetic sizes as two numbers, TRAIN:TEST; " + valid_dataset_forms());
  spec.synthetic = parse_synthetic_shape(rest.substr(0, c2));
  spec.synthetic_train = parse_count(text, rest.substr(c2 + 1, c3 - c2 - 1), "training sample count");
  spec.synthetic_test = parse_count(text, rest.substr(c3 + 1), "test sample count");
  return spec;
}

// The decoded files, through the cache when there is a folder for it.
TrainTest decode_through_cache(const std::string& cache_folder, const char* kind, const std::vector<std::string>& files,
                               const std::function<TrainTest()>& decode) {
  if (cache_folder.empty()) return decode();
  const DataCache cache(cache_folder, data_cache_key(kind, files));
  if (std::optional<TrainTest> cached = cache.read()) return std::move(*cached);
  TrainTest out = decode();
  check_dataset(out.train);  // nothing unchecked goes to the cache
  check_dataset(out.test);
  cache.write(out);
  return out;
}

template <MnistKind kind>
TrainTest load_mnist_form(const DatasetSpec& spec, int64_t, const std::string& cache_folder) {
  const MnistFiles files = find_mnist_files(spec.path, kind);
  return decode_through_cache(cache_folder, kind_name(spec.kind), files.all(), [&] { return read_mnist_files(files, kind); });
}

template <CifarKind kind>
TrainTest load_cifar_form(const DatasetSpec& spec, int64_t, const std::string& cache_folder) {
  const CifarFiles files = find_cifar_files(spec.path, kind);
  return decode_through_cache(cache_folder, kind_name(spec.kind), files.all(), [&] { return read_cifar_files(files, kind); });
}

TrainTest generate_synthetic(const DatasetSpec& spec, int64_t train_limit, const std::string&) {
  // Generate no more training samples than will be kept.
  const int64_t train = train_limit > 0 ? std::min(train_limit, spec.synthetic_train) : spec.synthetic_train;
  return make_synthetic(spec.synthetic, train, spec.synthetic_test);
}

TrainTest load_image_folder_form(const DatasetSpec& spec, int64_t train_limit, const std::string&) {
  return load_image_folder(spec.path, train_limit, spec.bad_images);
}

TrainTest load_tar_shards_form(const DatasetSpec& spec, int64_t train_limit, const std::string&) {
  return load_tar_shards(spec.path, train_limit);
}

SampleShape shape_of(const SyntheticShape& s) { return {s.channels, s.height, s.width, s.num_classes}; }

std::string joined(const std::vector<const char*>& items, const char* separator, const char* last_separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? last_separator : separator) + std::string(items[i]);
  return out;
}

}  // namespace

std::span<const DatasetForm> dataset_forms() {
  static const std::vector<DatasetForm> forms = {
      {DatasetKind::FashionMnist, "fashion-mnist", {"fashion-mnist", "fashion-mnist:/path"},
       "Fashion-MNIST IDX files (plain or .gz); without a path those of Debian's dataset-fashion-mnist",
       {1, 28, 28, 10}, parse_directory, load_mnist_form<MnistKind::FashionMnist>, false, make_host_batch_source},
      {DatasetKind::Mnist, "mnist", {"mnist:/path"}, "MNIST IDX files (plain or .gz)", {1, 28, 28, 10}, parse_directory,
       load_mnist_form<MnistKind::Mnist>, false, make_host_batch_source},
      {DatasetKind::Cifar10, "cifar10", {"cifar10:/path"}, "cifar-10-batches-bin, or the directory that holds it",
       {3, 32, 32, 10}, parse_directory, load_cifar_form<CifarKind::Cifar10>, false, make_host_batch_source},
      {DatasetKind::Cifar100, "cifar100", {"cifar100:/path"}, "cifar-100-binary, or the directory that holds it",
       {3, 32, 32, 100}, parse_directory, load_cifar_form<CifarKind::Cifar100>, false, make_host_batch_source},
      {DatasetKind::Synthetic, "synthetic",
       {"synthetic", "synthetic:CxHxW:classes", "synthetic:CxHxW:classes:TRAIN:TEST"},
       "random pixels and labels of any shape, no file (plain synthetic: 3x32x32, 100 classes, 50000 training and "
       "10000 test samples)",
       shape_of(SyntheticShape{}), parse_synthetic, generate_synthetic, false, make_host_batch_source},
      {DatasetKind::ImageFolder, "imagefolder", {"imagefolder:/path"},
       "JPEG and PNG files in torchvision's ImageFolder layout (/path/train/CLASS/*, /path/val/CLASS/*), decoded every "
       "epoch into --image-size crops (docs/image_data.md)",
       {3, kDefaultImageSize, kDefaultImageSize, 1000}, parse_directory, load_image_folder_form, true,
       make_image_batch_source},
      {DatasetKind::Tars, "tars", {"tars:/path"},
       "WebDataset tar shards as `scalebench pack` writes them (/path/train-*.tar, /path/val-*.tar), read in "
       "sequence and decoded every epoch",
       {3, kDefaultImageSize, kDefaultImageSize, 1000}, parse_directory, load_tar_shards_form, true,
       make_image_batch_source},
  };
  return forms;
}

const DatasetForm& dataset_form(DatasetKind kind) {
  for (const DatasetForm& form : dataset_forms())
    if (form.kind == kind) return form;
  throw std::logic_error("a dataset kind without a row in dataset_forms()");
}

std::string valid_dataset_forms() {
  std::vector<const char*> spellings;
  for (const DatasetForm& form : dataset_forms()) spellings.insert(spellings.end(), form.spellings.begin(), form.spellings.end());
  return "valid forms are " + joined(spellings, ", ", " and ") + " (e.g. synthetic:3x32x32:100:50000:10000)";
}

std::string dataset_forms_help() {
  std::string text = "\ndata sets (--data):\n";
  for (const DatasetForm& form : dataset_forms()) {
    constexpr size_t kColumn = 40;
    const std::string left = "  " + joined(form.spellings, ", ", ", ");
    text += left + (left.size() < kColumn ? std::string(kColumn - left.size(), ' ') : "\n" + std::string(kColumn, ' ')) +
            form.description + "\n";
  }
  return text;
}

const char* kind_name(DatasetKind kind) { return dataset_form(kind).name; }

DatasetSpec parse_dataset_spec(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::optional<std::string> rest =
      colon == std::string::npos ? std::nullopt : std::optional<std::string>(text.substr(colon + 1));
  for (const DatasetForm& form : dataset_forms())
    if (kind == form.name) return form.parse(form, text, rest);
  throw UserError("--data '" + text + "': unknown dataset '" + kind + "'; " + valid_dataset_forms());
}

std::string to_string(const DatasetSpec& spec) {
  if (spec.kind == DatasetKind::Synthetic)
    return "synthetic:" + to_string(spec.synthetic) + ":" + std::to_string(spec.synthetic_train) + ":" +
           std::to_string(spec.synthetic_test);
  return spec.path.empty() ? std::string(kind_name(spec.kind)) : std::string(kind_name(spec.kind)) + ":" + spec.path;
}

SampleShape sample_shape(const DatasetSpec& spec) {
  return spec.kind == DatasetKind::Synthetic ? shape_of(spec.synthetic) : dataset_form(spec.kind).shape;
}

bool streamed(const DatasetSpec& spec) { return dataset_form(spec.kind).streams; }

TrainTest load_dataset(const DatasetSpec& spec, int64_t train_limit, const std::string& cache_folder) {
  TrainTest out = dataset_form(spec.kind).load(spec, train_limit, cache_folder);
  out.train.kind = out.test.kind = spec.kind;
  keep_first(out.train, train_limit);
  check_dataset(out.train);
  check_dataset(out.test);
  return out;
}

}  // namespace sb

#include "data/dataset_spec.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>

#include "core/error.h"
#include "data/cifar.h"
#include "data/data_cache.h"
#include "data/mnist.h"

namespace sb {

namespace {

constexpr const char* kValidForms =
    "valid forms are fashion-mnist, fashion-mnist:/path, mnist:/path, cifar10:/path, cifar100:/path, "
    "synthetic, synthetic:CxHxW:classes and synthetic:CxHxW:classes:TRAIN:TEST (e.g. "
    "synthetic:3x32x32:100:50000:10000)";

int64_t parse_count(const std::string& text, const std::string& field, const char* what) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size() || value < 1)
    throw UserError("--data '" + text + "': the " + what + " '" + field + "' is not a positive whole number; " +
                    kValidForms);
  return value;
}

DatasetSpec parse_synthetic(const std::string& text, const std::string& rest) {
  DatasetSpec spec;
  spec.kind = DatasetKind::Synthetic;
  if (rest.empty()) return spec;
  // rest is "CxHxW:classes" optionally followed by ":TRAIN:TEST".
  const size_t c1 = rest.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : rest.find(':', c1 + 1);
  if (c2 == std::string::npos) {
    spec.synthetic = parse_synthetic_shape(rest);
    return spec;
  }
  const size_t c3 = rest.find(':', c2 + 1);
  if (c3 == std::string::npos || rest.find(':', c3 + 1) != std::string::npos)
    throw UserError("--data '" + text + "': give synthetic sizes as two numbers, TRAIN:TEST; " + kValidForms);
  spec.synthetic = parse_synthetic_shape(rest.substr(0, c2));
  spec.synthetic_train = parse_count(text, rest.substr(c2 + 1, c3 - c2 - 1), "training sample count");
  spec.synthetic_test = parse_count(text, rest.substr(c3 + 1), "test sample count");
  return spec;
}

}  // namespace

const char* kind_name(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::Mnist:
      return "mnist";
    case DatasetKind::FashionMnist:
      return "fashion-mnist";
    case DatasetKind::Cifar10:
      return "cifar10";
    case DatasetKind::Cifar100:
      return "cifar100";
    case DatasetKind::Synthetic:
      return "synthetic";
  }
  return "?";
}

DatasetSpec parse_dataset_spec(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const bool has_rest = colon != std::string::npos;
  const std::string rest = has_rest ? text.substr(colon + 1) : "";
  if (kind == "synthetic") {
    if (has_rest && rest.empty()) throw UserError("--data '" + text + "' ends in ':'; " + kValidForms);
    return parse_synthetic(text, rest);
  }
  for (DatasetKind k : {DatasetKind::Mnist, DatasetKind::FashionMnist, DatasetKind::Cifar10, DatasetKind::Cifar100}) {
    if (kind != kind_name(k)) continue;
    if (rest.empty() && k != DatasetKind::FashionMnist)
      throw UserError("--data '" + text + "' needs the dataset's directory: " + kind + ":/path/to/files");
    DatasetSpec spec;
    spec.kind = k;
    spec.path = rest;
    return spec;
  }
  throw UserError("--data '" + text + "': unknown dataset '" + kind + "'; " + kValidForms);
}

std::string to_string(const DatasetSpec& spec) {
  if (spec.kind == DatasetKind::Synthetic)
    return "synthetic:" + to_string(spec.synthetic) + ":" + std::to_string(spec.synthetic_train) + ":" +
           std::to_string(spec.synthetic_test);
  return spec.path.empty() ? std::string(kind_name(spec.kind)) : std::string(kind_name(spec.kind)) + ":" + spec.path;
}

namespace {

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

}  // namespace

TrainTest load_dataset(const DatasetSpec& spec, int64_t train_limit, const std::string& cache_folder) {
  TrainTest out;
  const char* kind = kind_name(spec.kind);
  switch (spec.kind) {
    case DatasetKind::Mnist:
    case DatasetKind::FashionMnist: {
      const MnistKind mnist = spec.kind == DatasetKind::Mnist ? MnistKind::Mnist : MnistKind::FashionMnist;
      const MnistFiles files = find_mnist_files(spec.path, mnist);
      out = decode_through_cache(cache_folder, kind, files.all(), [&] { return read_mnist_files(files, mnist); });
      break;
    }
    case DatasetKind::Cifar10:
    case DatasetKind::Cifar100: {
      const CifarKind cifar = spec.kind == DatasetKind::Cifar10 ? CifarKind::Cifar10 : CifarKind::Cifar100;
      const CifarFiles files = find_cifar_files(spec.path, cifar);
      out = decode_through_cache(cache_folder, kind, files.all(), [&] { return read_cifar_files(files, cifar); });
      break;
    }
    case DatasetKind::Synthetic: {
      // Generate no more training samples than will be kept.
      const int64_t train = train_limit > 0 ? std::min(train_limit, spec.synthetic_train) : spec.synthetic_train;
      out = make_synthetic(spec.synthetic, train, spec.synthetic_test);
      break;
    }
  }
  keep_first(out.train, train_limit);
  check_dataset(out.train);
  check_dataset(out.test);
  return out;
}

}  // namespace sb

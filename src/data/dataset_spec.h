// The --data option: which dataset, and where it is.
//   fashion-mnist                         Fashion-MNIST from /usr/share/datasets/fashion-mnist
//   fashion-mnist:/path                   Fashion-MNIST from a directory of IDX files (plain or .gz)
//   mnist:/path                           MNIST likewise
//   cifar10:/path                         cifar-10-batches-bin (or the directory that contains it)
//   cifar100:/path                        cifar-100-binary (or the directory that contains it)
//   synthetic                             same as synthetic:3x32x32:100:50000:10000
//   synthetic:CxHxW:classes               e.g. synthetic:3x32x32:100, 50000 train and 10000 test samples
//   synthetic:CxHxW:classes:TRAIN:TEST    e.g. synthetic:1x28x28:10:60000:10000
// Everything after the first ':' of a file-backed kind is the path (it may contain ':').
#pragma once
#include <cstdint>
#include <string>

#include "data/dataset.h"
#include "data/synthetic.h"

namespace sb {

enum class DatasetKind { Mnist, FashionMnist, Cifar10, Cifar100, Synthetic };

struct DatasetSpec {
  DatasetKind kind = DatasetKind::Synthetic;
  std::string path;          // "" = the kind's default directory (Fashion-MNIST only)
  SyntheticShape synthetic;  // Synthetic only
  int64_t synthetic_train = 50000;
  int64_t synthetic_test = 10000;
};

// Unknown kinds and malformed values are UserErrors that quote the text and list the valid forms.
DatasetSpec parse_dataset_spec(const std::string& text);
// The canonical text of a spec (parse_dataset_spec(to_string(s)) == s), for logs and result files.
std::string to_string(const DatasetSpec& spec);
const char* kind_name(DatasetKind kind);  // "fashion-mnist", "cifar10", ...

// Loads (or generates) the training and test sets; train_limit > 0 keeps the first train_limit
// training samples (the test set is kept whole). A file-backed data set is decoded one thread per file;
// with a `cache_folder` its decoded tensors are read from, or after decoding written to, the
// decoded-data cache there (data/data_cache.h); "" decodes the files every time.
TrainTest load_dataset(const DatasetSpec& spec, int64_t train_limit = 0, const std::string& cache_folder = "");

}  // namespace sb

// The --data option: which dataset, and where it is. One row per form (dataset_forms()):
//   fashion-mnist                         Fashion-MNIST from /usr/share/datasets/fashion-mnist
//   fashion-mnist:/path                   Fashion-MNIST from a directory of IDX files (plain or .gz)
//   mnist:/path                           MNIST likewise
//   cifar10:/path                         cifar-10-batches-bin (or the directory that contains it)
//   cifar100:/path                        cifar-100-binary (or the directory that contains it)
//   synthetic                             same as synthetic:3x32x32:100:50000:10000
//   synthetic:CxHxW:classes               e.g. synthetic:3x32x32:100, 50000 train and 10000 test samples
//   synthetic:CxHxW:classes:TRAIN:TEST    e.g. synthetic:1x28x28:10:60000:10000
//   imagefolder:/path                     torchvision's ImageFolder layout, decoded every epoch
//   tars:/path                            WebDataset tar shards (scalebench pack), decoded every epoch
// Everything after the first ':' of a file-backed kind is the path (it may contain ':').
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/image_decoding.h"
#include "data/synthetic.h"

namespace sb {

struct DatasetSpec {
  DatasetKind kind = DatasetKind::Synthetic;
  std::string path;          // "" = the kind's default directory (Fashion-MNIST only)
  SyntheticShape synthetic;  // Synthetic only
  int64_t synthetic_train = 50000;
  int64_t synthetic_test = 10000;
  // Image folders: a link to nothing is refused while listing (fail) or left out (skip); the run's --bad-images.
  BadImages bad_images = BadImages::Fail;
};

// A sample's shape and the number of classes.
struct SampleShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t classes = 10;
};

// One form of --data: everything about it. parse_dataset_spec, the refusals, --help, sample_shape,
// load_dataset, Dataset::streamed and make_batch_source all read these rows.
struct DatasetForm {
  DatasetKind kind;
  const char* name;                      // the text before the first ':'
  std::vector<const char*> spellings;    // the forms as the refusals list them
  const char* description;               // what the form is, for --help
  SampleShape shape;                     // its samples (synthetic: those of the default shape)
  // The spec of `text`, whose part after the first ':' is `rest` (nullopt: no ':'); UserError quoting it.
  DatasetSpec (*parse)(const DatasetForm& form, const std::string& text, const std::optional<std::string>& rest);
  // Decodes (or generates) both splits; train_limit > 0 bounds what a generator makes. A streamed form's
  // loader lists its files and keeps train_limit of them itself.
  TrainTest (*load)(const DatasetSpec& spec, int64_t train_limit, const std::string& cache_folder);
  // Whether the samples stay in files, read and decoded every epoch (image files), or are held in memory.
  bool streams;
  // What builds its batches on the host (batch_source.h).
  BatchSourceMaker make_source;
};

std::span<const DatasetForm> dataset_forms();
const DatasetForm& dataset_form(DatasetKind kind);
// "valid forms are fashion-mnist, fashion-mnist:/path, ... (e.g. ...)", for refusals.
std::string valid_dataset_forms();
// The forms' spellings and descriptions, one per line, for --help.
std::string dataset_forms_help();

// Unknown kinds and malformed values are UserErrors that quote the text and list the valid forms.
DatasetSpec parse_dataset_spec(const std::string& text);
// The canonical text of a spec (parse_dataset_spec(to_string(s)) == s), for logs and result files.
std::string to_string(const DatasetSpec& spec);
const char* kind_name(DatasetKind kind);  // "fashion-mnist", "cifar10", ...
// The shape of the spec's samples and its class count, without reading a file.
SampleShape sample_shape(const DatasetSpec& spec);
// Whether the spec's form is image files, read and decoded every epoch (its row's `streams`).
bool streamed(const DatasetSpec& spec);

// Loads (or generates) the training and test sets; train_limit > 0 keeps the first train_limit
// training samples (the test set is kept whole). A file-backed data set is decoded one thread per file;
// with a `cache_folder` its decoded tensors are read from, or after decoding written to, the
// decoded-data cache there (data/data_cache.h); "" decodes the files every time.
TrainTest load_dataset(const DatasetSpec& spec, int64_t train_limit = 0, const std::string& cache_folder = "");

}  // namespace sb

#include "data/image_data_sets.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "data/image/encoded_images.h"
#include "data/image/image_folder.h"

namespace sb {
namespace {

Dataset image_split(DatasetKind kind, const std::string& name, int num_classes, std::vector<int32_t> labels,
                    EncodedImages images) {
  if (images.size() != static_cast<int64_t>(labels.size())) fatal("dataset '" + name + "': image count does not match the label count");
  Dataset d;
  d.name = name;
  d.kind = kind;
  d.channels = 3;
  d.height = d.width = kDefaultImageSize;
  d.resize_shorter = kDefaultValResize;
  d.num_classes = num_classes;
  d.labels = std::move(labels);
  d.encoded = std::make_shared<EncodedImages>(std::move(images));
  d.mean.assign(std::begin(kImageNetMean), std::end(kImageNetMean));
  d.std.assign(std::begin(kImageNetStd), std::end(kImageNetStd));
  return d;
}

// `limit` files evenly spaced over the listing (all when limit <= 0 or no fewer than there are).
std::vector<ImageFile> evenly_spaced(const std::vector<ImageFile>& files, int64_t limit) {
  const auto n = static_cast<int64_t>(files.size());
  if (limit <= 0 || limit >= n) return files;
  std::vector<ImageFile> kept;
  kept.reserve(static_cast<size_t>(limit));
  for (int64_t k = 0; k < limit; ++k) kept.push_back(files[static_cast<size_t>(k * n / limit)]);
  return kept;
}

std::vector<int32_t> labels_of(const std::vector<ImageFile>& files) {
  std::vector<int32_t> labels;
  labels.reserve(files.size());
  for (const ImageFile& f : files) labels.push_back(f.label);
  return labels;
}

// DIR's files named SPLIT-*.tar, sorted by name.
std::vector<std::string> shards_of(const std::string& root, const std::string& split) {
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) throw UserError("--data tars:" + root + ": cannot open the folder; give the folder that `scalebench pack` wrote");
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() > split.size() + 5 && name.compare(0, split.size() + 1, split + "-") == 0 &&
        name.compare(name.size() - 4, 4, ".tar") == 0)
      names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  if (names.empty())
    throw UserError("--data tars:" + root + ": no " + split + "-*.tar shards in the folder; write them with "
                    "`scalebench pack IMAGE_FOLDER " + root + "`");
  for (std::string& name : names) name = root + "/" + name;
  return names;
}

// classes.txt's line count, or 0 without the file.
int classes_listed(const std::string& root) {
  std::ifstream in(root + "/classes.txt");
  if (!in) return 0;
  int lines = 0;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ++lines;
  return lines;
}

void check_labels(const std::vector<int32_t>& labels, int classes, const EncodedImages& images, const std::string& root) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= classes)
      throw UserError(images.name(static_cast<int64_t>(i)) + ": class label " + std::to_string(labels[i]) + " but " + root +
                      "/classes.txt lists " + std::to_string(classes) + " classes; pack the folder again");
}

}  // namespace

TrainTest load_image_folder(const std::string& root, int64_t train_limit, BadImages bad_images) {
  const ImageFolder listing = list_image_folder(root, bad_images);
  if (const std::string notes = left_out_lines(listing); !notes.empty()) log0("%s", notes.c_str());
  const int classes = static_cast<int>(listing.classes.size());
  const std::vector<ImageFile> train = evenly_spaced(listing.train, train_limit);
  TrainTest out;
  out.train = image_split(DatasetKind::ImageFolder, "imagefolder/train", classes, labels_of(train), EncodedImages::from_folder(train));
  out.test = image_split(DatasetKind::ImageFolder, "imagefolder/val", classes, labels_of(listing.val), EncodedImages::from_folder(listing.val));
  return out;
}

TrainTest load_tar_shards(const std::string& root, int64_t train_limit) {
  std::vector<int32_t> train_labels, val_labels;
  EncodedImages train = EncodedImages::from_shards(shards_of(root, "train"), train_labels);
  EncodedImages val = EncodedImages::from_shards(shards_of(root, "val"), val_labels);
  int classes = classes_listed(root);
  if (classes > 0) {
    check_labels(train_labels, classes, train, root);
    check_labels(val_labels, classes, val, root);
  } else {
    for (int32_t label : train_labels) classes = std::max(classes, label + 1);
  }
  for (size_t i = 0; i < val_labels.size(); ++i)
    if (val_labels[i] >= classes)
      throw UserError(val.name(static_cast<int64_t>(i)) + ": class " + std::to_string(val_labels[i]) +
                      " has no training sample; the val shards need the train shards' classes");
  if (train_limit > 0) {
    train.keep_first(train_limit);
    train_labels.resize(static_cast<size_t>(std::min<int64_t>(train_limit, static_cast<int64_t>(train_labels.size()))));
  }
  TrainTest out;
  out.train = image_split(DatasetKind::Tars, "tars/train", classes, std::move(train_labels), std::move(train));
  out.test = image_split(DatasetKind::Tars, "tars/val", classes, std::move(val_labels), std::move(val));
  return out;
}

std::vector<int64_t> shard_sizes(const Dataset& data) {
  return data.streamed() ? data.encoded->shard_sizes() : std::vector<int64_t>{};
}

void set_image_sizes(TrainTest& data, int image_size, int val_resize) {
  for (Dataset* d : {&data.train, &data.test}) {
    if (!d->streamed()) continue;
    d->height = d->width = image_size;
    d->resize_shorter = val_resize;
  }
}

}  // namespace sb

#include "data/dataset.h"

#include <stdexcept>
#include <string>

#include "core/error.h"
#include "data/dataset_spec.h"

namespace sb {

bool Dataset::streamed() const { return dataset_form(kind).streams; }

void keep_first(Dataset& dataset, int64_t n) {
  if (n <= 0 || n >= dataset.size()) return;
  if (dataset.streamed()) throw std::logic_error("keep_first: a streamed data set is limited by its loader");
  dataset.labels.resize(static_cast<size_t>(n));
  dataset.labels.shrink_to_fit();
  dataset.images.resize(static_cast<size_t>(n * dataset.sample_bytes()));
  dataset.images.shrink_to_fit();
}

void check_dataset(const Dataset& d) {
  const std::string where = "dataset '" + d.name + "': ";
  if (d.channels <= 0 || d.height <= 0 || d.width <= 0) fatal(where + "non-positive image dimensions");
  if (d.num_classes <= 0) fatal(where + "no classes");
  // A streamed set's loader checks its files against the labels (image_data_sets.cpp).
  if (d.streamed() ? !d.encoded || !d.images.empty() : d.images.size() != static_cast<size_t>(d.size() * d.sample_bytes()))
    fatal(where + "pixel count does not match the label count");
  if (d.mean.size() != static_cast<size_t>(d.channels) || d.std.size() != static_cast<size_t>(d.channels))
    fatal(where + "mean/std need one value per channel");
  for (float s : d.std)
    if (!(s > 0.0f)) fatal(where + "std must be positive");
  for (int32_t label : d.labels)
    if (label < 0 || label >= d.num_classes) fatal(where + "label out of range");
}

}  // namespace sb

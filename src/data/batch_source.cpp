#include "data/batch_source.h"

#include "data/dataset_spec.h"

namespace sb {

std::unique_ptr<BatchSource> make_batch_source(const Dataset& data, bool training, const BatchOptions& augmentation,
                                               BatchFormat format, BadImages bad_images, int rank, InputCounters& counters) {
  return dataset_form(data.kind).make_source(data, training, augmentation, format, bad_images, rank, counters);
}

}  // namespace sb

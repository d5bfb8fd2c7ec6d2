#include "data/batch_source.h"

#include "data/host_batch.h"
#include "data/image_batch.h"

namespace sb {

std::unique_ptr<BatchSource> make_batch_source(const Dataset& data, bool training, const BatchOptions& augmentation,
                                               BatchFormat format, BadImages bad_images, int rank, InputCounters& counters) {
  if (data.streamed()) return std::make_unique<ImageBatchBuilder>(data, training, format, bad_images, rank, counters);
  return std::make_unique<HostBatchBuilder>(data, training ? augmentation : BatchOptions{}, format);
}

}  // namespace sb

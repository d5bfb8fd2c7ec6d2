// What builds the rows of a batch on the host, for the worker threads of HostBatchPipeline: a data set in
// memory (HostBatchBuilder) or image files decoded as they are read (ImageBatchBuilder). Either writes each
// row in the network's dtype and layout, ready to upload.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/dtype.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"
#include "maths/augment.h"

namespace sb {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // One sample's bytes in the batch format.
  virtual int64_t sample_bytes() const = 0;
  // Writes rows [row_begin, row_end) of the batch of data set samples `indices`: sample j at
  // images + j * sample_bytes() and its label at labels[j], with the draws of position first_position + j
  // under key. Safe to call from several threads on disjoint rows. The files --bad-images skip leaves out
  // are noted in `skipped`, for the batch's taker to count; without it they count at once.
  virtual void fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
                    int64_t row_end, std::byte* images, int32_t* labels, SkippedFiles* skipped = nullptr) const = 0;
};

// The element type and memory layout of a batch (the network's input).
struct BatchFormat {
  DType dtype = DType::F32;
  Layout layout = Layout::NCHW;
};

// The source of `data`'s batches, as its form's row makes it (dataset_spec.h): image files decode
// (image_batch.h; `training` picks the random crops or the centre crop, and `counters` counts their work),
// a data set in memory is gathered with `augmentation` when training (host_batch.h). `data` and
// `counters` must outlive it.
std::unique_ptr<BatchSource> make_batch_source(const Dataset& data, bool training, const BatchOptions& augmentation,
                                               BatchFormat format, BadImages bad_images, int rank, InputCounters& counters);
using BatchSourceMaker = decltype(&make_batch_source);

}  // namespace sb

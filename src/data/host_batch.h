// Batch building on the host for the GPU: the rows of one batch written exactly as the CUDA batch kernel
// (kernels/augment.h) writes them, in the compute dtype and layout, so that a batch built here and
// uploaded is bit for bit the batch the kernel builds from the GPU-resident data set. The draws are
// maths/augment.h's; the value of a pixel depends only on its raw byte and channel, so each channel's 256
// possible values are computed once, with the kernel's arithmetic and rounding.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/pixel_values.h"
#include "maths/augment.h"

namespace sb {

class HostBatchBuilder : public BatchSource {
 public:
  // `data` must outlive the builder. augmentation: applied to every batch (BatchOptions{} for evaluation).
  HostBatchBuilder(const Dataset& data, const BatchOptions& augmentation, BatchFormat format);

  const Dataset& data() const { return data_; }
  int64_t sample_bytes() const override { return sample_bytes_; }  // one sample's bytes in the batch format

  // Writes rows [row_begin, row_end) of the batch of dataset samples `indices`: sample j at
  // images + j * sample_bytes() and its label at labels[j], augmented with the draws of position
  // first_position + j under key. Safe to call from several threads on disjoint rows. An index outside
  // the data set throws std::out_of_range.
  void fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
            int64_t row_end, std::byte* images, int32_t* labels, SkippedFiles* skipped = nullptr) const override;

 private:
  template <typename Bits>
  void fill_rows(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
                 int64_t row_end, Bits* images, int32_t* labels) const;

  const Dataset& data_;
  BatchOptions augmentation_;
  bool channels_last_;
  DType dtype_;
  int64_t sample_bytes_;
  // values_[c][raw]: the stored bits of normalised pixel `raw` of channel c (pixel_values.h).
  std::vector<PixelValues> values_;
};

// A data set in memory's batch source (make_batch_source's row): `augmentation` for training batches only.
std::unique_ptr<BatchSource> make_host_batch_source(const Dataset& data, bool training, const BatchOptions& augmentation,
                                                    BatchFormat format, BadImages bad_images, int rank, InputCounters& counters);

}  // namespace sb

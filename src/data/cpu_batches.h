// The CPU engine's batches, fp32 NCHW in host memory, built on the engine's thread for the step that
// trains on them: a data set in memory is gathered and augmented (batch.h); image files are read and
// decoded by --workers threads, each its share of the rows, through their form's batch source
// (batch_source.h), which counts their work.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"
#include "maths/augment.h"

namespace sb {

struct CpuBatchOptions {
  BatchOptions augmentation;  // of the training batches
  BadImages bad_images = BadImages::Fail;
  int rank = 0;
  int workers = 1;  // image files' decoding threads
};

class CpuBatches {
 public:
  // `train` and `test` must outlive this.
  CpuBatches(const Dataset& train, const Dataset& test, const CpuBatchOptions& options);

  // images() and labels() become the batch of `indices`: of the training set with the draws of key and
  // position, or of the test set.
  void build(bool training, std::span<const int64_t> indices, const AugmentKey& key, uint64_t position);
  const Tensor<float>& images() const { return images_; }
  const std::vector<int32_t>& labels() const { return labels_; }
  // Image files: the reading, decoding and augmenting so far; nullopt for a data set in memory.
  std::optional<InputTotals> input_totals() const;

 private:
  // Image files: `source`'s rows shared by the workers, this thread taking the first part.
  void decode(const BatchSource& source, const Dataset& data, std::span<const int64_t> indices, const AugmentKey& key,
              uint64_t position);

  const Dataset& train_;
  const Dataset& test_;
  CpuBatchOptions options_;
  InputCounters counters_;
  std::unique_ptr<BatchSource> train_source_, test_source_;  // image files only
  Tensor<float> images_;
  std::vector<int32_t> labels_;
};

}  // namespace sb

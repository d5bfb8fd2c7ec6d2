// Batches of image files decoded on the CPU (--decode cpu), as torchvision's ImageNet recipe builds them:
// each worker reads its rows' files (a shard's neighbours in one read), decodes only the region the crop
// needs, at the smallest DCT scale that keeps it at least --image-size (jpeg_decoder.h), resamples it
// (resample.h) and writes it normalised in the network's dtype and layout.
//   training:   RandomResizedCrop(image_size, scale 0.08-1, ratio 3/4-4/3) and a horizontal flip with
//               p = 0.5, drawn from the run's Philox stream by (seed, epoch, rank, position)
//               (maths/resized_crop.h), so a GPU decode of the same files takes the same crops;
//   evaluation: Resize(resize_shorter) then CenterCrop(image_size).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/bad_image_substitute.h"
#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/image/normalize_batch.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"
#include "maths/resized_crop.h"

namespace sb {

// The crop box of one image of the data set: its draws when training, the centre crop otherwise.
ResizedCropBox image_crop_box(const Dataset& data, bool training, const AugmentKey& key, uint64_t position, int width,
                           int height);

class ImageBatchBuilder : public BatchSource {
 public:
  // `data` (image files: data.streamed()) and `counters` must outlive the builder.
  ImageBatchBuilder(const Dataset& data, bool training, BatchFormat format, BadImages bad_images, int rank,
                    InputCounters& counters);

  int64_t sample_bytes() const override { return sample_bytes_; }
  // A file that can't be read or decoded goes to the --bad-images policy (bad_image_substitute.h).
  void fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
            int64_t row_end, std::byte* images, int32_t* labels, SkippedFiles* skipped = nullptr) const override;

 private:
  // Decodes, crops and writes one image into `out`; throws ImageDecodeError.
  void build_row(std::span<const uint8_t> bytes, const AugmentKey& key, uint64_t position, std::byte* out) const;

  const Dataset& data_;
  bool training_;
  BadImagePolicy bad_images_;
  InputCounters& counters_;
  int64_t sample_bytes_;
  NormalizedBatchWriter writer_;
};

// Image files' batch source (make_batch_source's row), decoded on the CPU.
std::unique_ptr<BatchSource> make_image_batch_source(const Dataset& data, bool training, const BatchOptions& augmentation,
                                                     BatchFormat format, BadImages bad_images, int rank, InputCounters& counters);

}  // namespace sb

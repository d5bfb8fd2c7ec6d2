// The batches of --decode gpu: each pipeline worker (HostBatchPipeline) reads its rows' files and headers,
// draws their crops (image_batch.h's image_crop_box, so that both decoders take the same crops), and
// decodes and crops them on the GPU with a decoder of its own (gpu_image_decode.h) into the device batch
// of its ring slot. The host rows hold only the labels; the upload is a copy between device buffers.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/bad_image_substitute.h"
#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"
#include "data/cuda/gpu_image_decode.h"

namespace sb::cuda {

// What the sources of one pipeline share: a decoder per worker thread, and the device batch of each slot.
class GpuDecoders {
 public:
  GpuDecoders(int64_t max_batch, BadImages bad_images, int rank, InputCounters& counters);
  // The slot whose host rows start at `host_rows` builds its batch in `device_batch`.
  void add_slot(const std::byte* host_rows, void* device_batch);
  void* device_batch(const std::byte* host_rows) const;
  // The calling thread's decoder, made on its first call, which also makes the rank's GPU (the one current
  // where this was made) the thread's: a new thread starts on device 0.
  GpuImageDecoder& for_this_thread();
  InputCounters& counters() { return counters_; }
  BadImages bad_images() const { return bad_images_; }
  int rank() const { return rank_; }

 private:
  int device_;
  int64_t max_batch_;
  BadImages bad_images_;
  int rank_;
  InputCounters& counters_;
  std::vector<std::pair<const std::byte*, void*>> slots_;
  std::mutex mutex_;
  std::map<std::thread::id, std::unique_ptr<GpuImageDecoder>> decoders_;
};

class GpuDecodeSource : public BatchSource {
 public:
  // `data` (image files) and `decoders` must outlive the source.
  GpuDecodeSource(const Dataset& data, bool training, BatchFormat format, GpuDecoders& decoders);
  int64_t sample_bytes() const override { return 1; }  // the pixels go to the device batch
  // A file that can't be read or decoded goes to the --bad-images policy (bad_image_substitute.h), its
  // substitute decoded on the CPU.
  void fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
            int64_t row_end, std::byte* images, int32_t* labels, SkippedFiles* skipped = nullptr) const override;

 private:
  // Where the crop kernel writes rows from row_begin on of the batch whose host rows are `images`.
  DecodeTarget target_for(std::byte* images, int64_t row_begin) const;

  const Dataset& data_;
  bool training_;
  BatchFormat format_;
  int64_t device_sample_bytes_;
  GpuDecoders& decoders_;
  BadImagePolicy bad_images_;
};

}  // namespace sb::cuda

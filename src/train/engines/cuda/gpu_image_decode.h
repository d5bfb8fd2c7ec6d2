// The device half of --decode gpu: a batch of still-encoded rows (data/encoded_rows.h) decoded by nvJPEG
// (its JPEG engines where the GPU has them), the images it refuses (PNG, CMYK, progressive on the engines)
// decoded on the CPU and uploaded, then one kernel (kernels/resized_crop.h) crops, resizes, flips and
// normalises every row into the network's input. All of it is queued on the caller's copy stream.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "data/batch_source.h"
#include "data/cuda/nvjpeg_decoder.h"
#include "data/dataset.h"
#include "data/encoded_rows.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"
#include "kernels/resized_crop.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

class GpuImageDecode {
 public:
  // `data` (image files) and `counters` must outlive this; ring_slots: the host ring's slots, whose
  // decodes may be in flight together.
  GpuImageDecode(const Dataset& data, int64_t max_batch, int ring_slots, BadImages bad_images, int rank,
                 InputCounters& counters, cudaStream_t stream);
  const char* backend() const { return decoder_.backend(); }

  // Queues the batch of `rows` records of ring slot `ring_slot` on `stream`, into `out` (rows samples of
  // `data`'s shape in `format`) and `labels_out`. A file that can't be read or decoded either way throws
  // ImageDecodeError naming it and the rank (--bad-images fail), or takes the batch's next good image.
  void decode(int ring_slot, const EncodedRow* rows, int64_t count, const Dataset& data, BatchFormat format, void* out,
              int32_t* labels_out, cudaStream_t stream);

 private:
  NvjpegBatchDecoder decoder_;
  BadImages bad_images_;
  int rank_;
  InputCounters& counters_;
  std::vector<PinnedArray<kernels::ResizedCropSource>> host_sources_;  // per ring slot
  std::vector<DeviceBuffer> device_sources_, fallback_pixels_;        // per ring slot
};

}  // namespace sb::cuda

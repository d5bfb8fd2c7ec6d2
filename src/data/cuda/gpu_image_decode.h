// One thread's GPU decoding for --decode gpu: its own nvJPEG decoder (the GPU's JPEG engines where it has
// them) and stream. It decodes a part of a batch, decodes on the CPU and uploads what nvJPEG refuses
// (PNG, CMYK, ...), and runs the crop kernel (kernels/resized_crop.h), which crops, resizes, flips and
// normalises each image into its row of a device batch; then it waits, without spinning a core, until
// the GPU has finished, so that the rows count as built. The engines decode only the part of each image
// that the crop kernel reads (its box and the resampler's reach); the kernel's output is the same as from
// the whole image.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "data/cuda/nvjpeg_decoder.h"
#include "data/image/decoded_image.h"
#include "data/input_counters.h"
#include "kernels/resized_crop.h"
#include "maths/resized_crop.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

// One row to decode: the file's bytes (valid until decode returns); `problem` says why it has no image (a
// read error), "" when it has one.
struct EncodedRow {
  std::span<const uint8_t> bytes;
  std::string problem;
};

// Where row `row`'s crop lies in its image of width x height.
using CropBoxFor = std::function<ResizedCropBox(size_t row, int width, int height)>;

// A row without an image, which failed with `problem`, under --bad-images (bad_image_substitute.h): throws,
// or decodes on the CPU the image that takes its place into `image` and returns its label.
using SubstituteFor = std::function<int32_t(size_t row, const std::string& problem, DecodedImage& image)>;

struct DecodeTarget {
  void* out = nullptr;  // rows.size() samples of height x width in `format`, on the device
  int height = 0, width = 0;
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
  BatchFormat format;
};

class GpuImageDecoder {
 public:
  GpuImageDecoder(int64_t max_rows, InputCounters& counters);
  const char* backend() const { return decoder_.backend(); }
  // Decodes `rows`, crops each where box_for says, into `target`, and returns when they are there. Each
  // header is parsed once, by nvJPEG (by the CPU decoder for what nvJPEG refuses). A row without an image
  // takes the image and label `substitute` gives (labels[j] is then changed), or substitute throws;
  // `names[j]` names row j's file in its problem.
  void decode(std::span<EncodedRow> rows, std::span<const std::string> names, int32_t* labels, const CropBoxFor& box_for,
              const SubstituteFor& substitute, const DecodeTarget& target);

 private:
  // One call's images on their way to the crop kernel: those nvJPEG takes, and those decoded on the CPU.
  struct Batch {
    std::vector<EncodedImage> encoded;
    std::vector<JpegProbe> probes;
    std::vector<size_t> encoded_row;  // the row of each entry of `encoded`
    std::vector<DecodedImage> on_cpu;
    std::vector<size_t> on_cpu_row;
  };
  // Parses each readable row's header and draws its crop box; a header no decoder reads becomes the row's problem.
  void probe_rows(std::span<EncodedRow> rows, std::span<const std::string> names, const CropBoxFor& box_for,
                  const DecodeTarget& target, Batch& batch);
  // nvJPEG's decode of what it takes; what it refuses is decoded on the CPU (or becomes the row's problem).
  void decode_rows(std::span<EncodedRow> rows, std::span<const std::string> names, Batch& batch);
  // Each row without an image takes its substitute, decoded on the CPU.
  void substitute_rows(std::span<EncodedRow> rows, int32_t* labels, const CropBoxFor& box_for,
                       const SubstituteFor& substitute, Batch& batch);
  // Copies the CPU-decoded images to the device, beside nvJPEG's.
  void upload_cpu_images(Batch& batch);
  // The crop kernel over the rows' sources into `target`, and the wait for it.
  void crop(size_t rows, const DecodeTarget& target);

  InputCounters& counters_;
  CudaStream stream_;
  NvjpegBatchDecoder decoder_;
  CudaEvent done_;  // blocking: the thread sleeps while the GPU finishes
  PinnedArray<kernels::ResizedCropSource> host_sources_;
  DeviceBuffer device_sources_ = DeviceBuffer::outside_graphs(), fallback_pixels_ = DeviceBuffer::outside_graphs();
};

}  // namespace sb::cuda

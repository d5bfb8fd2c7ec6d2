#include "data/cuda/gpu_image_decode.h"

#include <chrono>

#include "core/cuda_check.h"
#include "data/image/decoded_image.h"
#include "data/image/image_decoder.h"

namespace sb::cuda {
namespace {
using Clock = std::chrono::steady_clock;
int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

kernels::ResizedCropBox kernel_box(const ResizedCropBox& box) {
  return kernels::ResizedCropBox{box.x, box.y, box.width, box.height, box.flip};
}

// The part of the image the crop kernel reads for `box`: every tap of every output (the kernel computes
// the same taps, in the whole image's coordinates), and a pixel to spare on each side.
CropBox read_region(const ResizedCropBox& box, const DecodeTarget& target, int width, int height) {
  const SourceRegion r = resample_source_region(box, target.width, target.height, width, height, 1);
  return CropBox{r.x, r.y, r.width, r.height};
}
}  // namespace

GpuImageDecoder::GpuImageDecoder(int64_t max_rows, InputCounters& counters)
    : counters_(counters),
      stream_(CudaStream::create_non_blocking(CudaStream::least_priority())),
      decoder_(static_cast<int>(max_rows), kDefaultMaxImagePixels, stream_.get()),
      done_(CudaEvent::create(cudaEventDisableTiming | cudaEventBlockingSync)),
      host_sources_(static_cast<size_t>(max_rows)) {}

void GpuImageDecoder::decode(std::span<EncodedRow> rows, std::span<const std::string> names, int32_t* labels,
                             const CropBoxFor& box_for, const SubstituteFor& substitute, const DecodeTarget& target) {
  const auto t0 = Clock::now();
  Batch batch;
  probe_rows(rows, names, box_for, target, batch);
  decode_rows(rows, names, batch);
  substitute_rows(rows, labels, box_for, substitute, batch);
  upload_cpu_images(batch);
  counters_.add_decode(ns_since(t0));
  crop(rows.size(), target);
}

void GpuImageDecoder::probe_rows(std::span<EncodedRow> rows, std::span<const std::string> names, const CropBoxFor& box_for,
                                 const DecodeTarget& target, Batch& batch) {
  kernels::ResizedCropSource* sources = host_sources_.data();
  for (size_t j = 0; j < rows.size(); ++j) {
    sources[j] = kernels::ResizedCropSource{};
    if (!rows[j].problem.empty()) continue;
    const EncodedImage image{rows[j].bytes.data(), rows[j].bytes.size()};
    // For an image the engines decode, the probe asks for the box's region as soon as it has the size.
    bool boxed = false;
    ResizedCropBox box;
    const JpegRegionFor region_for = [&](int width, int height) {
      box = box_for(j, width, height);
      boxed = true;
      return read_region(box, target, width, height);
    };
    JpegProbe probe = decoder_.probe(image, region_for);
    if (!probe.refusal.empty()) {
      try {  // the CPU decoder's header parse: for a PNG, CMYK, ... and for the sentence a bad file gets
        const ImageSize size = read_image_size(rows[j].bytes);
        probe.width = size.width;
        probe.height = size.height;
      } catch (const ImageDecodeError& error) {
        rows[j].problem = names[j] + ": " + error.what();
        continue;
      }
    }
    if (!boxed) box = box_for(j, probe.width, probe.height);
    sources[j].box = kernel_box(box);
    sources[j].width = probe.width;
    sources[j].height = probe.height;
    batch.encoded.push_back(image);
    batch.probes.push_back(std::move(probe));
    batch.encoded_row.push_back(j);
  }
}

void GpuImageDecoder::decode_rows(std::span<EncodedRow> rows, std::span<const std::string> names, Batch& batch) {
  kernels::ResizedCropSource* sources = host_sources_.data();
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> decoded = decoder_.decode(batch.encoded, batch.probes, refused, reasons);
  for (size_t e = 0; e < batch.encoded.size(); ++e) {
    const size_t j = batch.encoded_row[e];
    if (!refused[e]) {  // the image's region, or the whole image: the kernel reads either alike
      sources[j].pixels = decoded[e].pixels;
      sources[j].region = kernels::PixelRegion{decoded[e].x, decoded[e].y, decoded[e].width, decoded[e].height};
      continue;
    }
    try {  // what nvJPEG left: decoded on the CPU, uploaded together
      batch.on_cpu.push_back(decode_image(rows[j].bytes));
      batch.on_cpu_row.push_back(j);
      counters_.add_cpu_fallback();
    } catch (const ImageDecodeError& error) {
      rows[j].problem = names[j] + ": " + error.what();
    }
  }
}

void GpuImageDecoder::substitute_rows(std::span<EncodedRow> rows, int32_t* labels, const CropBoxFor& box_for,
                                      const SubstituteFor& substitute, Batch& batch) {
  for (size_t j = 0; j < rows.size(); ++j) {
    if (rows[j].problem.empty()) continue;
    DecodedImage image;
    labels[j] = substitute(j, rows[j].problem, image);
    host_sources_.data()[j].box = kernel_box(box_for(j, image.width, image.height));
    batch.on_cpu.push_back(std::move(image));
    batch.on_cpu_row.push_back(j);
  }
}

void GpuImageDecoder::upload_cpu_images(Batch& batch) {
  size_t bytes = 0;
  for (const DecodedImage& image : batch.on_cpu) bytes += image.pixels.size();
  if (bytes == 0) return;
  auto* arena = static_cast<uint8_t*>(fallback_pixels_.ensure(bytes));
  for (size_t k = 0; k < batch.on_cpu.size(); ++k) {
    const DecodedImage& image = batch.on_cpu[k];
    kernels::ResizedCropSource& source = host_sources_.data()[batch.on_cpu_row[k]];
    CHECK_CUDA(cudaMemcpyAsync(arena, image.pixels.data(), image.pixels.size(), cudaMemcpyHostToDevice, stream_.get()));
    source.pixels = arena;  // the whole image
    source.width = image.width;
    source.height = image.height;
    source.region = kernels::PixelRegion{};
    arena += image.pixels.size();
  }
}

void GpuImageDecoder::crop(size_t rows, const DecodeTarget& target) {
  const auto t0 = Clock::now();
  auto* on_device = device_sources_.ensure_as<kernels::ResizedCropSource>(rows);
  CHECK_CUDA(cudaMemcpyAsync(on_device, host_sources_.data(), rows * sizeof(kernels::ResizedCropSource),
                             cudaMemcpyHostToDevice, stream_.get()));
  kernels::ResizedCropArgs args;
  args.sources = on_device;
  args.batch = static_cast<int64_t>(rows);
  args.out_height = target.height;
  args.out_width = target.width;
  for (int c = 0; c < 3; ++c) {
    args.mean[c] = target.mean[c];
    args.std[c] = target.std[c];
  }
  args.out = target.out;
  args.dtype = target.format.dtype;
  args.layout = target.format.layout;
  kernels::resized_crop_batch(args, stream_.get());
  done_.record(stream_.get());
  done_.synchronize();
  counters_.add_augment(ns_since(t0), static_cast<int64_t>(rows));
}

}  // namespace sb::cuda

#include "train/engines/cuda/gpu_image_decode.h"

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
}  // namespace

GpuImageDecoder::GpuImageDecoder(int64_t max_rows, BadImages bad_images, int rank, InputCounters& counters)
    : bad_images_(bad_images),
      rank_(rank),
      counters_(counters),
      stream_(CudaStream::create_non_blocking(CudaStream::greatest_priority())),
      decoder_(static_cast<int>(max_rows), kDefaultMaxImagePixels, stream_.get()),
      done_(CudaEvent::create(cudaEventDisableTiming | cudaEventBlockingSync)),
      host_sources_(static_cast<size_t>(max_rows)) {}

void GpuImageDecoder::decode(std::span<EncodedRow> rows, std::span<const std::string> names, int32_t* labels,
                             const CropBoxFor& box_for, const SubstituteFor& substitute, const DecodeTarget& target) {
  auto t0 = Clock::now();
  const size_t n = rows.size();
  kernels::ResizedCropSource* sources = host_sources_.data();
  std::vector<EncodedImage> encoded;
  std::vector<JpegProbe> probes;
  std::vector<size_t> encoded_row;  // the row of each entry of `encoded`
  for (size_t j = 0; j < n; ++j) {
    sources[j] = kernels::ResizedCropSource{};
    if (!rows[j].problem.empty()) continue;
    const EncodedImage image{rows[j].bytes.data(), rows[j].bytes.size()};
    JpegProbe probe = decoder_.probe(image);
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
    const ResizedCropBox box = box_for(j, probe.width, probe.height);
    sources[j].box = kernels::ResizedCropBox{box.x, box.y, box.width, box.height, box.flip};
    encoded.push_back(image);
    probes.push_back(std::move(probe));
    encoded_row.push_back(j);
  }
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> decoded = decoder_.decode(encoded, probes, refused, reasons);

  // What nvJPEG left: decoded on the CPU, uploaded together.
  std::vector<DecodedImage> on_cpu;
  std::vector<size_t> on_cpu_row;
  for (size_t e = 0; e < encoded.size(); ++e) {
    const size_t j = encoded_row[e];
    if (!refused[e]) {
      sources[j].pixels = decoded[e].pixels;
      sources[j].width = decoded[e].width;
      sources[j].height = decoded[e].height;
      continue;
    }
    try {
      on_cpu.push_back(decode_image(rows[j].bytes));
      on_cpu_row.push_back(j);
      counters_.add_cpu_fallback();
    } catch (const ImageDecodeError& error) {
      rows[j].problem = names[j] + ": " + error.what();
    }
  }

  // Rows without an image: the job ends, or each takes the split's next image that decodes, decoded on the
  // CPU and uploaded with the fallbacks, as the CPU decoder substitutes.
  for (size_t j = 0; j < n; ++j) {
    if (rows[j].problem.empty()) continue;
    if (bad_images_ == BadImages::Fail)
      throw ImageDecodeError("rank " + std::to_string(rank_) + ": " + rows[j].problem +
                             "; --bad-images skip trains on past such files and counts them");
    counters_.add_skipped(names[j]);
    DecodedImage image;
    if (!substitute(j, image, labels[j]))
      throw ImageDecodeError("rank " + std::to_string(rank_) + ": " + rows[j].problem +
                             ", and no other image of its split decodes either");
    const ResizedCropBox box = box_for(j, image.width, image.height);
    sources[j].box = kernels::ResizedCropBox{box.x, box.y, box.width, box.height, box.flip};
    on_cpu.push_back(std::move(image));
    on_cpu_row.push_back(j);
  }
  size_t fallback_bytes = 0;
  for (const DecodedImage& image : on_cpu) fallback_bytes += image.pixels.size();
  if (fallback_bytes > 0) {
    auto* arena = static_cast<uint8_t*>(fallback_pixels_.ensure(fallback_bytes));
    for (size_t k = 0; k < on_cpu.size(); ++k) {
      const size_t j = on_cpu_row[k];
      CHECK_CUDA(cudaMemcpyAsync(arena, on_cpu[k].pixels.data(), on_cpu[k].pixels.size(), cudaMemcpyHostToDevice, stream_.get()));
      sources[j].pixels = arena;
      sources[j].width = on_cpu[k].width;
      sources[j].height = on_cpu[k].height;
      arena += on_cpu[k].pixels.size();
    }
  }
  counters_.add_decode(ns_since(t0));

  t0 = Clock::now();
  auto* on_device = device_sources_.ensure_as<kernels::ResizedCropSource>(n);
  CHECK_CUDA(cudaMemcpyAsync(on_device, sources, n * sizeof(kernels::ResizedCropSource), cudaMemcpyHostToDevice, stream_.get()));
  kernels::ResizedCropArgs args;
  args.sources = on_device;
  args.batch = static_cast<int64_t>(n);
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
  counters_.add_augment(ns_since(t0), static_cast<int64_t>(n));
}

}  // namespace sb::cuda

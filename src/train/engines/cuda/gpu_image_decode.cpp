#include "train/engines/cuda/gpu_image_decode.h"

#include <chrono>
#include <string>

#include "core/cuda_check.h"
#include "data/image/decoded_image.h"
#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"

namespace sb::cuda {

GpuImageDecode::GpuImageDecode(const Dataset& data, int64_t max_batch, int ring_slots, BadImages bad_images, int rank,
                               InputCounters& counters, cudaStream_t stream)
    : decoder_(static_cast<int>(max_batch), kDefaultMaxImagePixels, stream),
      bad_images_(bad_images),
      rank_(rank),
      counters_(counters),
      device_sources_(static_cast<size_t>(ring_slots)),
      fallback_pixels_(static_cast<size_t>(ring_slots)) {
  (void)data;
  for (int s = 0; s < ring_slots; ++s) host_sources_.emplace_back(static_cast<size_t>(max_batch));
}

void GpuImageDecode::decode(int ring_slot, const EncodedRow* rows, int64_t count, const Dataset& data, BatchFormat format,
                            void* out, int32_t* labels_out, cudaStream_t stream) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const size_t n = static_cast<size_t>(count);
  kernels::ResizedCropSource* sources = host_sources_[static_cast<size_t>(ring_slot)].data();
  std::vector<std::string> problems(n);
  std::vector<EncodedImage> encoded;
  std::vector<size_t> encoded_row;  // the row of each entry of `encoded`
  for (size_t j = 0; j < n; ++j) {
    sources[j] = kernels::ResizedCropSource{};
    const ResizedCropBox& box = rows[j].box;
    sources[j].box = kernels::ResizedCropBox{box.x, box.y, box.width, box.height, box.flip};
    sources[j].label = rows[j].label;
    if (rows[j].problem) {
      problems[j] = *rows[j].problem;
      continue;
    }
    encoded.push_back(EncodedImage{rows[j].bytes, rows[j].size});
    encoded_row.push_back(j);
  }
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> decoded = decoder_.decode(encoded, refused, reasons);

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
      on_cpu.push_back(decode_image(std::span<const uint8_t>(rows[j].bytes, rows[j].size)));
      on_cpu_row.push_back(j);
      counters_.add_cpu_fallback();
    } catch (const ImageDecodeError& error) {
      problems[j] = data.encoded->name(rows[j].index) + ": " + error.what();
    }
  }
  size_t fallback_bytes = 0;
  for (const DecodedImage& image : on_cpu) fallback_bytes += image.pixels.size();
  if (fallback_bytes > 0) {
    auto* arena = static_cast<uint8_t*>(fallback_pixels_[static_cast<size_t>(ring_slot)].ensure(fallback_bytes));
    for (size_t k = 0; k < on_cpu.size(); ++k) {
      const size_t j = on_cpu_row[k];
      CHECK_CUDA(cudaMemcpyAsync(arena, on_cpu[k].pixels.data(), on_cpu[k].pixels.size(), cudaMemcpyHostToDevice, stream));
      sources[j].pixels = arena;
      sources[j].width = on_cpu[k].width;
      sources[j].height = on_cpu[k].height;
      arena += on_cpu[k].pixels.size();
    }
  }

  // Rows without an image: the job ends, or each takes the next row that has one.
  for (size_t j = 0; j < n; ++j) {
    if (problems[j].empty()) continue;
    if (bad_images_ == BadImages::Fail)
      throw ImageDecodeError("rank " + std::to_string(rank_) + ": " + problems[j] +
                             "; --bad-images skip trains on past such files and counts them");
    counters_.add_skipped();
    size_t k = 1;
    while (k < n && !problems[(j + k) % n].empty()) ++k;
    if (k == n)
      throw ImageDecodeError("rank " + std::to_string(rank_) + ": " + problems[j] + ", and no other image of its batch of " +
                             std::to_string(n) + " decodes either");
    sources[j] = sources[(j + k) % n];
  }
  counters_.add_decode(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  counters_.add_images(count);

  DeviceBuffer& device_sources = device_sources_[static_cast<size_t>(ring_slot)];
  auto* on_device = device_sources.ensure_as<kernels::ResizedCropSource>(n);
  CHECK_CUDA(cudaMemcpyAsync(on_device, sources, n * sizeof(kernels::ResizedCropSource), cudaMemcpyHostToDevice, stream));
  kernels::ResizedCropArgs args;
  args.sources = on_device;
  args.batch = count;
  args.out_height = data.height;
  args.out_width = data.width;
  for (int c = 0; c < 3; ++c) {
    args.mean[c] = data.mean[static_cast<size_t>(c)];
    args.std[c] = data.std[static_cast<size_t>(c)];
  }
  args.out = out;
  args.dtype = format.dtype;
  args.layout = format.layout;
  args.labels_out = labels_out;
  kernels::resized_crop_batch(args, stream);
}

}  // namespace sb::cuda

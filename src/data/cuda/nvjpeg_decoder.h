// JPEG decoding on the GPU with nvJPEG, in batches, into device memory (docs/image_data.md, "GPU decoding").
// nvJPEG is optional at build time (SCALEBENCH_NVJPEG, cmake/CudaBackend.cmake); without it this header
// still compiles, nvjpeg_built_in() is false and the decoder refuses to be built.
//
// Which backend: the hardware JPEG engines (A100, H100, H200) when the device has them, else nvJPEG's
// default (CUDA) backend. On the hardware backend an image the engines do not take (progressive, a
// baseline file with several scans, 4:1:1 chroma) is decoded by a second, default-backend batched decoder
// on the same stream, so such files still decode on the GPU. Refused, for the caller's CPU decoder
// (data/image/jpeg_decoder.h): anything not starting as a JPEG or not ending with its EOI marker (cut
// short), a stream nvJPEG fails to parse or decode, other than 1 or 3 components (CMYK, YCCK), an unknown
// chroma layout, and an image over the pixel limit.
//
// Region decoding: the caller may name, per image, the rectangle it will read (a crop plus its
// resampler's reach). The engines then decode only that region (nvjpegDecodeBatchedEx with a region per
// image). The default backend always decodes the whole image; each result says which part it holds.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/image/decoded_image.h"

namespace sb {

// The host bytes of one JPEG file.
struct EncodedImage {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// HWC RGB, 8 bits per channel, rows packed (pitch width * 3), in device memory: the part of the image
// whose top-left pixel is (x, y), width x height pixels; (0, 0) and the image's size for a whole image.
struct DeviceImage {
  uint8_t* pixels = nullptr;
  int width = 0, height = 0;
  int x = 0, y = 0;
};

// What one parse of a JPEG's header tells: why nvJPEG will not take it ("" when it will), its size,
// whether the JPEG engines will decode it, and the region they will decode (empty: the whole image).
struct JpegProbe {
  std::string refusal;
  int width = 0, height = 0;
  bool on_hardware = false;
  CropBox region;
};

// The region of an image of width x height that the caller will read; it must lie inside the image.
// Empty, or the whole image, decodes the whole image.
using JpegRegionFor = std::function<CropBox(int width, int height)>;

// False in a build without nvJPEG.
bool nvjpeg_built_in();

// The backend a decoder would use on the current device: "hardware" or "cuda". Needs a device and a
// build with nvJPEG (throws UserError as the decoder's constructor does).
const char* nvjpeg_device_backend();

class NvjpegBatchDecoder {
 public:
  // Up to max_batch images per decode() call, each at most max_pixels pixels, decoded on `stream` (of the
  // current device). Throws UserError in a build without nvJPEG.
  NvjpegBatchDecoder(int max_batch, int64_t max_pixels, cudaStream_t stream);
  ~NvjpegBatchDecoder();
  NvjpegBatchDecoder(const NvjpegBatchDecoder&) = delete;
  NvjpegBatchDecoder& operator=(const NvjpegBatchDecoder&) = delete;

  // "hardware" (the JPEG engines) or "cuda".
  const char* backend() const;

  // Queues the decode of `images` (at most max_batch) on the stream and returns; the pixels are there once
  // the stream's work completes, and the encoded bytes must stay valid until then. The result has one entry
  // per image. refused[i] is 1 (reasons[i] says why) for an image this decoder will not or could not
  // decode: its entry is empty and the caller decodes it on the CPU. The others are RGB interleaved in
  // device arenas that the decoder owns: valid until the next decode() call, grown when a batch needs
  // more, never shrunk. This overload decodes whole images.
  std::vector<DeviceImage> decode(std::span<const EncodedImage> images, std::vector<uint8_t>& refused,
                                  std::vector<std::string>& reasons);

  // Parses the image's header alone, for a caller that needs the size before the decode (a crop box).
  // With region_for, the probe asks it for the region the caller will read and, where the engines take
  // the image with that region, sets `region`: decode() then decodes only that part on the engines.
  JpegProbe probe(const EncodedImage& image, const JpegRegionFor& region_for = {}) const;
  // decode() with the images' probes already taken, so that no header is parsed twice on the host. An
  // image with a region comes back as that region where the engines decode it, and whole where it falls
  // back to the default backend (a baseline file of several scans): the result's x, y, width and height
  // say which.
  std::vector<DeviceImage> decode(std::span<const EncodedImage> images, std::span<const JpegProbe> probes,
                                  std::vector<uint8_t>& refused, std::vector<std::string>& reasons);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sb

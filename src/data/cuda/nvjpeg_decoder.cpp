#include "data/cuda/nvjpeg_decoder.h"

#include "core/error.h"

#ifdef SCALEBENCH_HAVE_NVJPEG
#include <nvjpeg.h>


#include "core/cuda_check.h"
#include "core/log.h"
#include "data/cuda/nvjpeg_check.h"
#include "data/image/decoded_image.h"
#include "data/image/image_format.h"
#include "data/image/pixel_limit.h"
#include "nn/cuda/device_buffer.h"
#endif

namespace sb {

#ifdef SCALEBENCH_HAVE_NVJPEG

namespace {

// A destructor must not throw: a failed release is logged and the object leaked.
void log_release(const char* call, nvjpegStatus_t status) noexcept {
  if (status != NVJPEG_STATUS_SUCCESS)
    log_all("warning: %s failed while releasing an nvJPEG object (%s); it is leaked\n", call,
            detail::nvjpeg_status_string(status).c_str());
}

struct HandleRelease {
  void operator()(nvjpegHandle_t h) const noexcept { log_release("nvjpegDestroy", nvjpegDestroy(h)); }
};
struct StateRelease {
  void operator()(nvjpegJpegState_t s) const noexcept { log_release("nvjpegJpegStateDestroy", nvjpegJpegStateDestroy(s)); }
};
struct StreamRelease {
  void operator()(nvjpegJpegStream_t s) const noexcept { log_release("nvjpegJpegStreamDestroy", nvjpegJpegStreamDestroy(s)); }
};
using Handle = std::unique_ptr<nvjpegHandle, HandleRelease>;
using JpegState = std::unique_ptr<nvjpegJpegState, StateRelease>;
using JpegStream = std::unique_ptr<nvjpegJpegStream, StreamRelease>;

// The hardware backend's handle, or empty where the device has no JPEG engines: nvJPEG then answers
// ARCH_MISMATCH (or, in a library without the hardware path, IMPLEMENTATION_NOT_SUPPORTED). Any other
// failure is a fault.
Handle create_hardware_handle() {
  nvjpegHandle_t handle = nullptr;
  const nvjpegStatus_t status = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &handle);
  if (status == NVJPEG_STATUS_SUCCESS) return Handle(handle);
  if (status == NVJPEG_STATUS_ARCH_MISMATCH || status == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED) return Handle();
  fatal_call(__FILE__, __LINE__, "nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, ...)", detail::nvjpeg_status_string(status));
}

Handle create_default_handle() {
  nvjpegHandle_t handle = nullptr;
  CHECK_NVJPEG(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &handle));
  return Handle(handle);
}

// One handle and its batched-decode state.
struct BatchedDecoder {
  Handle handle;
  JpegState state;

  explicit BatchedDecoder(Handle h) : handle(std::move(h)) {
    nvjpegJpegState_t s = nullptr;
    CHECK_NVJPEG(nvjpegJpegStateCreate(handle.get(), &s));
    state.reset(s);
  }

  // Re-initialises the state for this batch's size (which also resets it after a failed batch), then
  // queues the decode. The status is returned: a stream nvJPEG can't decode is a case for the CPU.
  nvjpegStatus_t decode(size_t count, const unsigned char* const* data, const size_t* lengths, nvjpegImage_t* outputs,
                        cudaStream_t stream) const {
    CHECK_NVJPEG(nvjpegDecodeBatchedInitialize(handle.get(), state.get(), static_cast<int>(count), 1, NVJPEG_OUTPUT_RGBI));
    return nvjpegDecodeBatched(handle.get(), state.get(), data, lengths, outputs, stream);
  }
};

// The statuses that speak of the stream rather than of the library or the device.
bool is_stream_failure(nvjpegStatus_t status) {
  return status == NVJPEG_STATUS_BAD_JPEG || status == NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
         status == NVJPEG_STATUS_INCOMPLETE_BITSTREAM || status == NVJPEG_STATUS_EXECUTION_FAILED;
}

// Each image's place in the arena (256-byte aligned, as cudaMalloc's own blocks are).
constexpr size_t kImageAlignment = 256;

}  // namespace

struct NvjpegBatchDecoder::State {
  int max_batch = 0;
  int64_t max_pixels = 0;
  cudaStream_t stream = nullptr;
  BatchedDecoder cuda;                      // the default backend: headers, and what the engines don't take
  std::unique_ptr<BatchedDecoder> hardware;  // absent without JPEG engines
  JpegStream parsed;                        // the hardware handle's parse of one image, for its support check
  cuda::DeviceBuffer arena = cuda::DeviceBuffer::outside_graphs();  // grown by a pipeline worker while steps run

  State(int batch, int64_t pixels, cudaStream_t s) : max_batch(batch), max_pixels(pixels), stream(s), cuda(create_default_handle()) {
    if (Handle h = create_hardware_handle()) {
      hardware = std::make_unique<BatchedDecoder>(std::move(h));
      nvjpegJpegStream_t p = nullptr;
      CHECK_NVJPEG(nvjpegJpegStreamCreate(hardware->handle.get(), &p));
      parsed.reset(p);
    }
  }

  // Why nvJPEG will not get this image, or "" when it will; its size on success.
  std::string screen(const EncodedImage& image, int& width, int& height) const {
    const std::span<const uint8_t> bytes(image.data, image.size);
    if (sniff_image_format(bytes) != ImageFormat::Jpeg) return "not a JPEG (no SOI marker FF D8 FF at the start)";
    // nvJPEG does not reliably report a stream cut short; libjpeg does ("Premature end of JPEG file").
    if (bytes.size() < 4 || bytes[bytes.size() - 2] != 0xFF || bytes[bytes.size() - 1] != 0xD9)
      return "no EOI marker FF D9 at the end (cut short, or data after the image)";
    int components = 0;
    nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
    int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
    const nvjpegStatus_t status =
        nvjpegGetImageInfo(cuda.handle.get(), image.data, image.size, &components, &subsampling, widths, heights);
    if (status != NVJPEG_STATUS_SUCCESS) return "nvjpegGetImageInfo: " + detail::nvjpeg_status_string(status);
    if (components != 1 && components != 3)
      return std::to_string(components) + " components (CMYK or YCCK); nvJPEG decodes grey and YCbCr here";
    if (subsampling == NVJPEG_CSS_UNKNOWN) return "a chroma subsampling nvJPEG does not know";
    try {
      check_pixel_limit("JPEG", widths[0], heights[0], max_pixels);
    } catch (const ImageDecodeError& e) {
      return e.what();
    }
    width = widths[0];
    height = heights[0];
    return "";
  }

  // Whether the JPEG engines take this image (baseline, one scan, a chroma layout they know).
  bool on_hardware(const EncodedImage& image) const {
    if (!hardware) return false;
    if (nvjpegJpegStreamParse(hardware->handle.get(), image.data, image.size, 0, 0, parsed.get()) != NVJPEG_STATUS_SUCCESS)
      return false;  // the default backend tries it, and refuses it if it fails too
    int is_supported = -1;  // 0 means supported
    return nvjpegDecodeBatchedSupported(hardware->handle.get(), parsed.get(), &is_supported) == NVJPEG_STATUS_SUCCESS &&
           is_supported == 0;
  }

  // Decodes images[which] into their places in `out` with one batched call. One bad stream fails the
  // whole call without saying which, so then each is decoded alone and those that fail are refused.
  void decode_group(const BatchedDecoder& decoder, std::span<const EncodedImage> images, const std::vector<size_t>& which,
                    std::vector<DeviceImage>& out, std::vector<uint8_t>& refused, std::vector<std::string>& reasons) const {
    if (which.empty()) return;
    std::vector<const unsigned char*> data;
    std::vector<size_t> lengths;
    std::vector<nvjpegImage_t> outputs;
    for (size_t i : which) {
      data.push_back(images[i].data);
      lengths.push_back(images[i].size);
      nvjpegImage_t target{};
      target.channel[0] = out[i].pixels;
      target.pitch[0] = static_cast<size_t>(out[i].width) * 3;
      outputs.push_back(target);
    }
    const nvjpegStatus_t status = decoder.decode(which.size(), data.data(), lengths.data(), outputs.data(), stream);
    if (status == NVJPEG_STATUS_SUCCESS) return;
    if (!is_stream_failure(status)) fatal_call(__FILE__, __LINE__, "nvjpegDecodeBatched", detail::nvjpeg_status_string(status));
    for (size_t k = 0; k < which.size(); ++k) {
      const nvjpegStatus_t alone = decoder.decode(1, &data[k], &lengths[k], &outputs[k], stream);
      if (alone == NVJPEG_STATUS_SUCCESS) continue;
      if (!is_stream_failure(alone)) fatal_call(__FILE__, __LINE__, "nvjpegDecodeBatched", detail::nvjpeg_status_string(alone));
      refused[which[k]] = 1;
      reasons[which[k]] = "nvjpegDecodeBatched: " + detail::nvjpeg_status_string(alone);
      out[which[k]] = DeviceImage{};
    }
  }
};

bool nvjpeg_built_in() { return true; }

const char* nvjpeg_device_backend() { return create_hardware_handle() ? "hardware" : "cuda"; }

NvjpegBatchDecoder::NvjpegBatchDecoder(int max_batch, int64_t max_pixels, cudaStream_t stream)
    : state_(std::make_unique<State>(max_batch, max_pixels, stream)) {}

NvjpegBatchDecoder::~NvjpegBatchDecoder() = default;

const char* NvjpegBatchDecoder::backend() const { return state_->hardware ? "hardware" : "cuda"; }

std::vector<DeviceImage> NvjpegBatchDecoder::decode(std::span<const EncodedImage> images, std::vector<uint8_t>& refused,
                                                    std::vector<std::string>& reasons) {
  State& s = *state_;
  if (images.size() > static_cast<size_t>(s.max_batch))
    fatal("NvjpegBatchDecoder::decode: " + std::to_string(images.size()) + " images, over the decoder's batch of " +
          std::to_string(s.max_batch));
  const size_t n = images.size();
  refused.assign(n, 0);
  reasons.assign(n, std::string());
  std::vector<DeviceImage> out(n);
  std::vector<size_t> offsets(n, 0), on_hardware, on_cuda;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string reason = s.screen(images[i], out[i].width, out[i].height);
    if (!reason.empty()) {
      refused[i] = 1;
      reasons[i] = std::move(reason);
      out[i] = DeviceImage{};
      continue;
    }
    (s.on_hardware(images[i]) ? on_hardware : on_cuda).push_back(i);
    offsets[i] = total;
    total += (static_cast<size_t>(out[i].width) * static_cast<size_t>(out[i].height) * 3 + kImageAlignment - 1) /
             kImageAlignment * kImageAlignment;
  }
  if (total == 0) return out;
  auto* arena = static_cast<uint8_t*>(s.arena.ensure(total));
  for (size_t i = 0; i < n; ++i)
    if (!refused[i]) out[i].pixels = arena + offsets[i];
  if (s.hardware) s.decode_group(*s.hardware, images, on_hardware, out, refused, reasons);
  s.decode_group(s.cuda, images, on_cuda, out, refused, reasons);
  return out;
}

#else  // a build without nvJPEG

namespace {
[[noreturn]] void throw_not_built_in() {
  throw UserError(
      "this scalebench was built without nvJPEG (its CUDA toolkit has no nvjpeg.h and libnvjpeg), so it cannot "
      "decode JPEGs on the GPU: rebuild with a CUDA toolkit that has nvjpeg.h and libnvjpeg "
      "(-DSCALEBENCH_NVJPEG=ON makes the configure step insist), or use --decode cpu");
}
}  // namespace

struct NvjpegBatchDecoder::State {};

bool nvjpeg_built_in() { return false; }

const char* nvjpeg_device_backend() { throw_not_built_in(); }

NvjpegBatchDecoder::NvjpegBatchDecoder(int, int64_t, cudaStream_t) { throw_not_built_in(); }

NvjpegBatchDecoder::~NvjpegBatchDecoder() = default;

const char* NvjpegBatchDecoder::backend() const { throw_not_built_in(); }

std::vector<DeviceImage> NvjpegBatchDecoder::decode(std::span<const EncodedImage>, std::vector<uint8_t>&,
                                                    std::vector<std::string>&) {
  throw_not_built_in();
}

#endif

}  // namespace sb

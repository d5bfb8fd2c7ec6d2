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

#include <algorithm>

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
struct ParamsRelease {
  void operator()(nvjpegDecodeParams_t p) const noexcept { log_release("nvjpegDecodeParamsDestroy", nvjpegDecodeParamsDestroy(p)); }
};
using Handle = std::unique_ptr<nvjpegHandle, HandleRelease>;
using JpegState = std::unique_ptr<nvjpegJpegState, StateRelease>;
using JpegStream = std::unique_ptr<nvjpegJpegStream, StreamRelease>;
using DecodeParams = std::unique_ptr<nvjpegDecodeParams, ParamsRelease>;

// Decode parameters for interleaved RGB, as the batched state is initialised for.
DecodeParams create_rgbi_params(nvjpegHandle_t handle) {
  nvjpegDecodeParams_t p = nullptr;
  CHECK_NVJPEG(nvjpegDecodeParamsCreate(handle, &p));
  DecodeParams params(p);
  CHECK_NVJPEG(nvjpegDecodeParamsSetOutputFormat(p, NVJPEG_OUTPUT_RGBI));
  return params;
}

// The region to decode; an empty one is the whole image, nvJPEG's (0, 0, -1, -1).
void set_region(nvjpegDecodeParams_t params, const CropBox& region) {
  if (region.empty())
    CHECK_NVJPEG(nvjpegDecodeParamsSetROI(params, 0, 0, -1, -1));
  else
    CHECK_NVJPEG(nvjpegDecodeParamsSetROI(params, region.x, region.y, region.width, region.height));
}

// The hardware backend's handle, or empty where the device has no JPEG engines: nvJPEG then answers
// ARCH_MISMATCH (or, in a library without the hardware path, IMPLEMENTATION_NOT_SUPPORTED). Any other
// failure is a fault.
// Without pipelining: by default the hardware backend holds images over from one batched call to the
// next, and while a model trains beside it that made each call slower.
Handle create_hardware_handle() {
  nvjpegHandle_t handle = nullptr;
  const nvjpegStatus_t status =
      nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE, &handle);
  if (status == NVJPEG_STATUS_SUCCESS) return Handle(handle);
  if (status == NVJPEG_STATUS_ARCH_MISMATCH || status == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED) return Handle();
  fatal_call(__FILE__, __LINE__, "nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, ...)", detail::nvjpeg_status_string(status));
}

Handle create_default_handle() {
  nvjpegHandle_t handle = nullptr;
  CHECK_NVJPEG(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &handle));
  return Handle(handle);
}

// One handle and its batched-decode state. The hardware backend's decoder also holds one set of decode
// parameters per batch slot (each image's region), made once and reused: its batches go through
// nvjpegDecodeBatchedEx, which only the hardware backend has.
struct BatchedDecoder {
  Handle handle;
  JpegState state;
  std::vector<DecodeParams> params;  // empty on the default backend
  mutable int initialized_for = -1;  // the batch size the state was last initialised for; -1 after a failure

  BatchedDecoder(Handle h, int param_slots) : handle(std::move(h)) {
    nvjpegJpegState_t s = nullptr;
    CHECK_NVJPEG(nvjpegJpegStateCreate(handle.get(), &s));
    state.reset(s);
    for (int k = 0; k < param_slots; ++k) params.push_back(create_rgbi_params(handle.get()));
  }

  // Queues the decode, with one decode parameter set per image where `slot_params` is given. The state is
  // initialised again only when the batch size changes or the last batch failed, as nvJPEG asks. The
  // status is returned: a stream nvJPEG can't decode is a case for the CPU.
  nvjpegStatus_t decode(size_t count, const unsigned char* const* data, const size_t* lengths, nvjpegImage_t* outputs,
                        nvjpegDecodeParams_t* slot_params, cudaStream_t stream) const {
    if (initialized_for != static_cast<int>(count)) {
      CHECK_NVJPEG(nvjpegDecodeBatchedInitialize(handle.get(), state.get(), static_cast<int>(count), 1, NVJPEG_OUTPUT_RGBI));
      initialized_for = static_cast<int>(count);
    }
    const nvjpegStatus_t status =
        slot_params ? nvjpegDecodeBatchedEx(handle.get(), state.get(), data, lengths, outputs, slot_params, stream)
                    : nvjpegDecodeBatched(handle.get(), state.get(), data, lengths, outputs, stream);
    if (status != NVJPEG_STATUS_SUCCESS) initialized_for = -1;
    return status;
  }
};

// The images the hardware backend's buffers hold without growing: nvjpegDecodeBatchedPreAllocate's
// arguments, for `count` images of up to width x height pixels at any chroma subsampling (4:4:4).
struct EngineReservation {
  int count = 0, width = 0, height = 0;
  bool failed = false;  // nvJPEG could not allocate it: its own growth serves from then on
};

// Room for a quarter more than `side`, in steps of 64 pixels, so that a slightly larger image does not grow
// the buffers again.
int with_headroom(int side) { return (side + side / 4 + 63) / 64 * 64; }

// The largest reservation made ahead: the buffers of 64 images of 1,024 x 1,024 pixels at 4:4:4 are about
// 200 MB. A call of larger images leaves them to nvJPEG's own growth.
constexpr double kMaxReservedBytes = 1 << 30;

// The statuses that speak of the stream rather than of the library or the device.
bool is_stream_failure(nvjpegStatus_t status) {
  return status == NVJPEG_STATUS_BAD_JPEG || status == NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
         status == NVJPEG_STATUS_INCOMPLETE_BITSTREAM || status == NVJPEG_STATUS_EXECUTION_FAILED;
}

// Each image's place in the arena (256-byte aligned, as cudaMalloc's own blocks are).
constexpr size_t kImageAlignment = 256;

size_t arena_bytes(int width, int height) {
  return (static_cast<size_t>(width) * static_cast<size_t>(height) * 3 + kImageAlignment - 1) / kImageAlignment *
         kImageAlignment;
}

bool covers(const CropBox& region, int width, int height) {
  return region.x == 0 && region.y == 0 && region.width == width && region.height == height;
}

}  // namespace

struct NvjpegBatchDecoder::State {
  int max_batch = 0;
  int64_t max_pixels = 0;
  cudaStream_t stream = nullptr;
  BatchedDecoder cuda;                      // the default backend: what the engines don't take
  std::unique_ptr<BatchedDecoder> hardware;  // absent without JPEG engines
  JpegStream header;                        // one image's parsed header (on the hardware handle where there is one)
  DecodeParams probe_params;                // the region a probe asks the engines about (hardware only)
  cuda::DeviceBuffer arena = cuda::DeviceBuffer::outside_graphs();  // grown by a pipeline worker while steps run
  // Whole images of regions the engines failed, decoded again on the default backend.
  cuda::DeviceBuffer whole_arena = cuda::DeviceBuffer::outside_graphs();
  EngineReservation reserved;  // what the engines' buffers were last allocated for

  State(int batch, int64_t pixels, cudaStream_t s)
      : max_batch(batch), max_pixels(pixels), stream(s), cuda(create_default_handle(), 0) {
    if (Handle h = create_hardware_handle()) {
      hardware = std::make_unique<BatchedDecoder>(std::move(h), batch);
      probe_params = create_rgbi_params(hardware->handle.get());
    }
    nvjpegJpegStream_t p = nullptr;
    CHECK_NVJPEG(nvjpegJpegStreamCreate(parser(), &p));
    header.reset(p);
  }

  // The handle that parses headers: the hardware one where there is one, whose verdict the probe asks.
  nvjpegHandle_t parser() const { return hardware ? hardware->handle.get() : cuda.handle.get(); }

  // One parse of the image's header (the scans are not read) answers everything: whether nvJPEG takes
  // it, its size, whether the engines do, and whether they take it with the caller's region.
  JpegProbe probe(const EncodedImage& image, const JpegRegionFor& region_for) const {
    JpegProbe result;
    const std::span<const uint8_t> bytes(image.data, image.size);
    if (sniff_image_format(bytes) != ImageFormat::Jpeg) {
      result.refusal = "not a JPEG (no SOI marker FF D8 FF at the start)";
      return result;
    }
    // nvJPEG does not reliably report a stream cut short; libjpeg does ("Premature end of JPEG file").
    if (bytes.size() < 4 || bytes[bytes.size() - 2] != 0xFF || bytes[bytes.size() - 1] != 0xD9) {
      result.refusal = "no EOI marker FF D9 at the end (cut short, or data after the image)";
      return result;
    }
    const nvjpegStatus_t status = nvjpegJpegStreamParseHeader(parser(), image.data, image.size, header.get());
    if (status != NVJPEG_STATUS_SUCCESS) {
      result.refusal = "nvjpegJpegStreamParseHeader: " + detail::nvjpeg_status_string(status);
      return result;
    }
    unsigned width = 0, height = 0, components = 0;
    nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
    CHECK_NVJPEG(nvjpegJpegStreamGetFrameDimensions(header.get(), &width, &height));
    CHECK_NVJPEG(nvjpegJpegStreamGetComponentsNum(header.get(), &components));
    CHECK_NVJPEG(nvjpegJpegStreamGetChromaSubsampling(header.get(), &subsampling));
    if (components != 1 && components != 3) {
      result.refusal = std::to_string(components) + " components (CMYK or YCCK); nvJPEG decodes grey and YCbCr here";
      return result;
    }
    if (subsampling == NVJPEG_CSS_UNKNOWN) {
      result.refusal = "a chroma subsampling nvJPEG does not know";
      return result;
    }
    try {
      check_pixel_limit("JPEG", static_cast<int64_t>(width), static_cast<int64_t>(height), max_pixels);
    } catch (const ImageDecodeError& e) {
      result.refusal = e.what();
      return result;
    }
    result.width = static_cast<int>(width);
    result.height = static_cast<int>(height);
    int is_supported = -1;  // 0 means supported
    result.on_hardware = hardware &&
                         nvjpegDecodeBatchedSupported(hardware->handle.get(), header.get(), &is_supported) == NVJPEG_STATUS_SUCCESS &&
                         is_supported == 0;
    if (result.on_hardware && region_for) result.region = hardware_region(region_for(result.width, result.height), result);
    return result;
  }

  // The region the engines will decode for the image `header` holds: `region` where they take the image
  // with it (nvjpegDecodeBatchedSupportedEx), else empty (the whole image).
  CropBox hardware_region(const CropBox& region, const JpegProbe& image) const {
    if (region.empty() || covers(region, image.width, image.height)) return CropBox{};
    if (region.x < 0 || region.y < 0 || region.x + region.width > image.width || region.y + region.height > image.height)
      fatal("NvjpegBatchDecoder::probe: region " + std::to_string(region.width) + "x" + std::to_string(region.height) +
            " at (" + std::to_string(region.x) + ", " + std::to_string(region.y) + ") is not inside the image of " +
            std::to_string(image.width) + "x" + std::to_string(image.height));
    set_region(probe_params.get(), region);
    int is_supported = -1;  // 0 means supported
    const bool supported =
        nvjpegDecodeBatchedSupportedEx(hardware->handle.get(), header.get(), probe_params.get(), &is_supported) ==
            NVJPEG_STATUS_SUCCESS &&
        is_supported == 0;
    return supported ? region : CropBox{};
  }

  // Decodes images[which] into their places in `out` with one batched call (on the engines, each with
  // its probe's region). One bad stream fails the whole call without saying which, so then each is
  // decoded alone: what the engines fail (a baseline file of several scans, which a header does not show)
  // goes to the default backend, and what that fails too is refused.
  void decode_group(const BatchedDecoder& decoder, std::span<const EncodedImage> images, std::span<const JpegProbe> probes,
                    const std::vector<size_t>& which, std::vector<DeviceImage>& out, std::vector<uint8_t>& refused,
                    std::vector<std::string>& reasons) {
    if (which.empty()) return;
    const bool on_engines = !decoder.params.empty();
    if (on_engines) reserve_engine_buffers(decoder, probes, which);
    std::vector<const unsigned char*> data;
    std::vector<size_t> lengths;
    std::vector<nvjpegImage_t> outputs;
    std::vector<nvjpegDecodeParams_t> params;
    for (size_t k = 0; k < which.size(); ++k) {
      const size_t i = which[k];
      data.push_back(images[i].data);
      lengths.push_back(images[i].size);
      outputs.push_back(target(out[i]));
      if (on_engines) {
        set_region(decoder.params[k].get(), probes[i].region);
        params.push_back(decoder.params[k].get());
      }
    }
    nvjpegDecodeParams_t* slot_params = on_engines ? params.data() : nullptr;
    const nvjpegStatus_t status = decoder.decode(which.size(), data.data(), lengths.data(), outputs.data(), slot_params, stream);
    if (status == NVJPEG_STATUS_SUCCESS) return;
    if (!is_stream_failure(status)) fatal_call(__FILE__, __LINE__, "nvjpegDecodeBatched", detail::nvjpeg_status_string(status));
    std::vector<size_t> whole;  // what the engines failed alone: for the default backend
    for (size_t k = 0; k < which.size(); ++k) {
      const nvjpegStatus_t alone =
          decoder.decode(1, &data[k], &lengths[k], &outputs[k], on_engines ? &params[k] : nullptr, stream);
      if (alone == NVJPEG_STATUS_SUCCESS) continue;
      if (is_stream_failure(alone) && on_engines)
        whole.push_back(which[k]);
      else
        refuse(which[k], alone, out, refused, reasons);
    }
    decode_whole(images, probes, whole, out, refused, reasons);
  }

  // Allocates the engines' buffers ahead (nvjpegDecodeBatchedPreAllocate) for the call's image count and the
  // largest image so far, with headroom. Otherwise the hardware backend frees and allocates them again each
  // time a larger image comes, and each free waits for the whole device: the training's kernels beside it
  // included, for milliseconds, many times an epoch.
  void reserve_engine_buffers(const BatchedDecoder& engines, std::span<const JpegProbe> probes,
                              const std::vector<size_t>& which) {
    int width = 0, height = 0;
    for (size_t i : which) {
      width = std::max(width, probes[i].width);
      height = std::max(height, probes[i].height);
    }
    const int count = static_cast<int>(which.size());
    EngineReservation want = reserved;
    if (want.failed || (count <= want.count && width <= want.width && height <= want.height)) return;
    want.count = std::max(want.count, count);
    want.width = std::max(want.width, with_headroom(width));
    want.height = std::max(want.height, with_headroom(height));
    if (3.0 * want.count * want.width * want.height > kMaxReservedBytes) return;
    const nvjpegStatus_t status = nvjpegDecodeBatchedPreAllocate(engines.handle.get(), engines.state.get(), want.count,
                                                                 want.width, want.height, NVJPEG_CSS_444, NVJPEG_OUTPUT_RGBI);
    if (status == NVJPEG_STATUS_SUCCESS) {
      reserved = want;
      return;
    }
    if (status != NVJPEG_STATUS_ALLOCATOR_FAILURE)
      fatal_call(__FILE__, __LINE__, "nvjpegDecodeBatchedPreAllocate", detail::nvjpeg_status_string(status));
    reserved.failed = true;
    log_all("warning: nvJPEG could not allocate its buffers ahead for %d images of %dx%d; it grows them as it "
            "needs, which waits for the device each time\n", want.count, want.width, want.height);
  }

  // Decodes images[which] one at a time on the default backend, whole: a region the engines were to
  // decode gets the whole image's room in a second arena, and its entry in `out` says so.
  void decode_whole(std::span<const EncodedImage> images, std::span<const JpegProbe> probes, const std::vector<size_t>& which,
                    std::vector<DeviceImage>& out, std::vector<uint8_t>& refused, std::vector<std::string>& reasons) {
    size_t bytes = 0;
    for (size_t i : which)
      if (!probes[i].region.empty()) bytes += arena_bytes(probes[i].width, probes[i].height);
    auto* room = bytes > 0 ? static_cast<uint8_t*>(whole_arena.ensure(bytes)) : nullptr;
    for (size_t i : which) {
      if (!probes[i].region.empty()) {
        out[i] = DeviceImage{room, probes[i].width, probes[i].height, 0, 0};
        room += arena_bytes(probes[i].width, probes[i].height);
      }
      const unsigned char* data = images[i].data;
      const size_t length = images[i].size;
      nvjpegImage_t output = target(out[i]);
      const nvjpegStatus_t status = cuda.decode(1, &data, &length, &output, nullptr, stream);
      if (status != NVJPEG_STATUS_SUCCESS) refuse(i, status, out, refused, reasons);
    }
  }

  static nvjpegImage_t target(const DeviceImage& image) {
    nvjpegImage_t target{};
    target.channel[0] = image.pixels;
    target.pitch[0] = static_cast<size_t>(image.width) * 3;
    return target;
  }

  // A stream nvJPEG failed is refused, for the CPU; any other failure is a fault.
  static void refuse(size_t i, nvjpegStatus_t status, std::vector<DeviceImage>& out, std::vector<uint8_t>& refused,
                     std::vector<std::string>& reasons) {
    if (!is_stream_failure(status)) fatal_call(__FILE__, __LINE__, "nvjpegDecodeBatched", detail::nvjpeg_status_string(status));
    refused[i] = 1;
    reasons[i] = "nvjpegDecodeBatched: " + detail::nvjpeg_status_string(status);
    out[i] = DeviceImage{};
  }
};

bool nvjpeg_built_in() { return true; }

const char* nvjpeg_device_backend() { return create_hardware_handle() ? "hardware" : "cuda"; }

NvjpegBatchDecoder::NvjpegBatchDecoder(int max_batch, int64_t max_pixels, cudaStream_t stream)
    : state_(std::make_unique<State>(max_batch, max_pixels, stream)) {}

NvjpegBatchDecoder::~NvjpegBatchDecoder() = default;

const char* NvjpegBatchDecoder::backend() const { return state_->hardware ? "hardware" : "cuda"; }

JpegProbe NvjpegBatchDecoder::probe(const EncodedImage& image, const JpegRegionFor& region_for) const {
  return state_->probe(image, region_for);
}

std::vector<DeviceImage> NvjpegBatchDecoder::decode(std::span<const EncodedImage> images, std::vector<uint8_t>& refused,
                                                    std::vector<std::string>& reasons) {
  std::vector<JpegProbe> probes;
  probes.reserve(images.size());
  for (const EncodedImage& image : images) probes.push_back(probe(image, {}));
  return decode(images, probes, refused, reasons);
}

std::vector<DeviceImage> NvjpegBatchDecoder::decode(std::span<const EncodedImage> images, std::span<const JpegProbe> probes,
                                                    std::vector<uint8_t>& refused, std::vector<std::string>& reasons) {
  State& s = *state_;
  if (images.size() > static_cast<size_t>(s.max_batch))
    fatal("NvjpegBatchDecoder::decode: " + std::to_string(images.size()) + " images, over the decoder's batch of " +
          std::to_string(s.max_batch));
  if (probes.size() != images.size()) fatal("NvjpegBatchDecoder::decode: one probe per image expected");
  const size_t n = images.size();
  refused.assign(n, 0);
  reasons.assign(n, std::string());
  std::vector<DeviceImage> out(n);
  std::vector<size_t> offsets(n, 0), on_hardware, on_cuda;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!probes[i].refusal.empty()) {
      refused[i] = 1;
      reasons[i] = probes[i].refusal;
      continue;
    }
    const CropBox& region = probes[i].region;
    if (!region.empty() && !(probes[i].on_hardware && s.hardware))
      fatal("NvjpegBatchDecoder::decode: a region for an image the JPEG engines do not decode");
    if (region.empty())
      out[i] = DeviceImage{nullptr, probes[i].width, probes[i].height, 0, 0};
    else  // the arena holds the region alone
      out[i] = DeviceImage{nullptr, region.width, region.height, region.x, region.y};
    (probes[i].on_hardware ? on_hardware : on_cuda).push_back(i);
    offsets[i] = total;
    total += arena_bytes(out[i].width, out[i].height);
  }
  if (total == 0) return out;
  // A quarter more than this batch needs: the arena grows (cudaFree, which waits for the device) seldom.
  auto* arena = static_cast<uint8_t*>(s.arena.ensure(total + total / 4));
  for (size_t i = 0; i < n; ++i)
    if (!refused[i]) out[i].pixels = arena + offsets[i];
  if (s.hardware) s.decode_group(*s.hardware, images, probes, on_hardware, out, refused, reasons);
  s.decode_group(s.cuda, images, probes, on_cuda, out, refused, reasons);
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

JpegProbe NvjpegBatchDecoder::probe(const EncodedImage&, const JpegRegionFor&) const { throw_not_built_in(); }

std::vector<DeviceImage> NvjpegBatchDecoder::decode(std::span<const EncodedImage>, std::vector<uint8_t>&,
                                                    std::vector<std::string>&) {
  throw_not_built_in();
}

std::vector<DeviceImage> NvjpegBatchDecoder::decode(std::span<const EncodedImage>, std::span<const JpegProbe>,
                                                    std::vector<uint8_t>&, std::vector<std::string>&) {
  throw_not_built_in();
}

#endif

}  // namespace sb

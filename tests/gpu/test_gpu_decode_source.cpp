// --decode gpu against --decode cpu: the same files give the same crops, flips and labels, the pixels
// equal to within the two JPEG decoders' rounding (nvJPEG against libjpeg-turbo), for training's random
// crops and evaluation's centre crop. GpuImageDecoder, whose engines decode only each crop's region, gives
// byte for byte the batch of whole images, for boxes at every edge, the whole image and a progressive file
// (decoded whole). Built only with nvJPEG; skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include "core/cuda_check.h"
#include "data/cuda/gpu_image_decode.h"
#include "data/cuda/nvjpeg_decoder.h"
#include "data/image/decoded_image.h"
#include "data/image/image_decoder.h"
#include "data/image/resample.h"
#include "data/image_batch.h"
#include "data/image_data_sets.h"
#include "gpu_test_util.h"
#include "nn/cuda/device_buffer.h"
#include "data/cuda/gpu_decode_source.h"
#include "kernels/resized_crop.h"
#include "maths/resized_crop.h"
#include "unit/image_folder_files.h"
#include "unit/image_test_files.h"
#include "unit/scratch_dir.h"

namespace sb::cuda {
namespace {

constexpr int kSize = 32;

class GpuDecodeSourceTest : public test::ScratchDirTest {};

// The batch of `data` built by `source` into host memory (fp32 NCHW), and its labels.
std::vector<float> cpu_batch(const Dataset& data, bool training, const std::vector<int64_t>& indices, const AugmentKey& key,
                             std::vector<int32_t>& labels) {
  InputCounters counters;
  const ImageBatchBuilder builder(data, training, BatchFormat{}, BadImages::Fail, 0, counters);
  std::vector<float> out(indices.size() * 3 * kSize * kSize);
  labels.assign(indices.size(), -1);
  builder.fill(indices, key, 0, 0, static_cast<int64_t>(indices.size()), reinterpret_cast<std::byte*>(out.data()), labels.data());
  return out;
}

std::vector<float> gpu_batch(const Dataset& data, bool training, const std::vector<int64_t>& indices, const AugmentKey& key,
                             std::vector<int32_t>& labels, InputCounters& counters) {
  const auto n = static_cast<int64_t>(indices.size());
  GpuDecoders decoders(n, BadImages::Fail, 0, counters);
  DeviceBuffer device;
  std::vector<std::byte> host_rows(static_cast<size_t>(n));
  const size_t bytes = static_cast<size_t>(n) * 3 * kSize * kSize * sizeof(float);
  decoders.add_slot(host_rows.data(), device.ensure(bytes));
  const GpuDecodeSource source(data, training, BatchFormat{}, decoders);
  labels.assign(indices.size(), -1);
  // Two workers' parts, as the pipeline splits a batch.
  source.fill(indices, key, 0, 0, n / 2, host_rows.data(), labels.data());
  source.fill(indices, key, 0, n / 2, n, host_rows.data(), labels.data());
  std::vector<float> out(indices.size() * 3 * kSize * kSize);
  CHECK_CUDA(cudaMemcpy(out.data(), device.data(), bytes, cudaMemcpyDeviceToHost));
  return out;
}

TEST_F(GpuDecodeSourceTest, BothDecodersTakeTheSameCropsToWithinDecoderRounding) {
  SKIP_WITHOUT_GPU();
  test::make_image_folder(dir_, 3, 4, 2);  // 16-52 pixels wide: decoded at full size by both
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, kSize, 36);
  for (bool training : {true, false}) {
    const Dataset& d = training ? data.train : data.test;
    std::vector<int64_t> indices(static_cast<size_t>(d.size()));
    std::iota(indices.begin(), indices.end(), int64_t{0});
    const AugmentKey key{9, 1, 0};
    std::vector<int32_t> cpu_labels, gpu_labels;
    InputCounters counters;
    const std::vector<float> cpu = cpu_batch(d, training, indices, key, cpu_labels);
    const std::vector<float> gpu = gpu_batch(d, training, indices, key, gpu_labels, counters);
    EXPECT_EQ(cpu_labels, gpu_labels);
    double sum = 0, worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      const size_t c = (i / (kSize * kSize)) % 3;
      const double levels = std::abs(cpu[i] - gpu[i]) * d.std[c] * 255;  // back in pixel levels
      sum += levels;
      worst = std::max(worst, levels);
    }
    // PNGs decode on the CPU either way (counted); JPEGs differ by the decoders' IDCT and chroma upsampling.
    EXPECT_LT(sum / static_cast<double>(cpu.size()), 4.0) << (training ? "training" : "evaluation");
    EXPECT_LT(worst, 48.0) << (training ? "training" : "evaluation");
    EXPECT_EQ(counters.totals().images, d.size());
    EXPECT_EQ(counters.totals().cpu_fallbacks, training ? 3 * 1 : 0);  // one PNG per class in train/
  }
}

TEST_F(GpuDecodeSourceTest, ABadFileEndsTheBatchNamingItOrIsSkipped) {
  SKIP_WITHOUT_GPU();
  test::make_image_folder(dir_, 2, 3, 1);
  const std::filesystem::path bad = dir_ / "train" / "class1" / "99.jpg";
  test::write_file(bad, test::Bytes{'n', 'o', 't'});
  TrainTest data = load_image_folder(dir_.string(), 0);
  set_image_sizes(data, kSize, 36);
  std::vector<int64_t> indices(static_cast<size_t>(data.train.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::vector<int32_t> labels;
  InputCounters counters;
  try {
    gpu_batch(data.train, true, indices, AugmentKey{}, labels, counters);
    FAIL() << "a text file decoded";
  } catch (const ImageDecodeError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

// JPEGs of each kind, for GpuImageDecoder: baseline 4:2:0, 4:4:4, grey and with restart markers (the
// engines decode their regions where the device has them) and progressive (never on the engines: decoded
// whole by the default backend).
struct JpegFile {
  std::string name;
  test::Bytes bytes;
  int width = 0, height = 0;
};

std::vector<JpegFile> jpeg_files() {
  struct Kind {
    const char* name;
    int width, height, components, restart_interval;
    bool full_chroma, progressive;
  };
  const Kind kinds[] = {{"baseline 4:2:0", 300, 200, 3, 0, false, false},
                        {"baseline 4:4:4", 257, 311, 3, 0, true, false},
                        {"grey", 120, 90, 1, 0, false, false},
                        {"restart markers", 161, 120, 3, 2, false, false},
                        {"progressive", 160, 120, 3, 0, false, true}};
  std::vector<JpegFile> files;
  for (const Kind& k : kinds) {
    test::JpegSpec spec;
    spec.width = k.width;
    spec.height = k.height;
    spec.components = k.components;
    spec.in_space = k.components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    spec.restart_interval = k.restart_interval;
    spec.full_chroma = k.full_chroma;
    spec.progressive = k.progressive;
    test::Bytes pixels = test::gradient_rgb(k.width, k.height);
    if (k.components == 1) {  // the red ramp alone
      test::Bytes grey;
      for (size_t i = 0; i < pixels.size(); i += 3) grey.push_back(pixels[i]);
      pixels = grey;
    }
    files.push_back({k.name, test::encode_jpeg(spec, pixels), k.width, k.height});
  }
  return files;
}

// Boxes on a width x height image: small ones at each corner and edge, the whole image (plain and
// mirrored), a RandomResizedCrop draw, the centre crop and a fractional box.
std::vector<ResizedCropBox> edge_and_whole_boxes(int width, int height) {
  const auto W = static_cast<float>(width), H = static_cast<float>(height);
  const float w = std::max(1.0f, W / 9), h = std::max(1.0f, H / 7);
  std::vector<ResizedCropBox> boxes;
  for (float y : {0.0f, (H - h) / 2, H - h})
    for (float x : {0.0f, (W - w) / 2, W - w})
      if (x != (W - w) / 2 || y != (H - h) / 2) boxes.push_back({x, y, w, h, x == y});
  boxes.push_back({0, 0, W, H, false});
  boxes.push_back({0, 0, W, H, true});
  boxes.push_back(draw_random_resized_crop(5, 0, 0, static_cast<uint64_t>(width), width, height, {}));
  boxes.push_back(center_crop_box(width, height, 48, 40));
  boxes.push_back({W * 0.3f + 0.25f, H * 0.2f + 0.7f, W * 0.33f, H * 0.41f, false});
  return boxes;
}

constexpr int kOutHeight = 40, kOutWidth = 32;

// The batch as the crop kernel makes it from each file's whole image, nvJPEG's decode (the CPU's for a
// file nvJPEG refuses): what GpuImageDecoder gave before the engines decoded regions.
std::vector<float> batch_from_whole_images(const std::vector<JpegFile>& files, const std::vector<size_t>& file_of,
                                           const std::vector<ResizedCropBox>& boxes) {
  CudaStream stream = CudaStream::create_non_blocking(CudaStream::greatest_priority());
  NvjpegBatchDecoder decoder(static_cast<int>(files.size()), kDefaultMaxImagePixels, stream.get());
  std::vector<EncodedImage> images;
  for (const JpegFile& f : files) images.push_back({f.bytes.data(), f.bytes.size()});
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  std::vector<DeviceImage> decoded = decoder.decode(images, refused, reasons);
  std::vector<DeviceBuffer> on_cpu(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    if (!refused[f]) continue;
    const DecodedImage image = decode_image(files[f].bytes);
    decoded[f] = DeviceImage{static_cast<uint8_t*>(on_cpu[f].ensure(image.pixels.size())), image.width, image.height, 0, 0};
    CHECK_CUDA(cudaMemcpy(decoded[f].pixels, image.pixels.data(), image.pixels.size(), cudaMemcpyHostToDevice));
  }
  std::vector<kernels::ResizedCropSource> sources;
  for (size_t j = 0; j < boxes.size(); ++j) {
    const DeviceImage& image = decoded[file_of[j]];
    kernels::ResizedCropSource source;
    source.pixels = image.pixels;
    source.width = image.width;
    source.height = image.height;
    source.box = kernels::ResizedCropBox{boxes[j].x, boxes[j].y, boxes[j].width, boxes[j].height, boxes[j].flip};
    sources.push_back(source);
  }
  DeviceBuffer device_sources, out;
  auto* dsources = device_sources.ensure_as<kernels::ResizedCropSource>(sources.size());
  CHECK_CUDA(cudaMemcpyAsync(dsources, sources.data(), sources.size() * sizeof(sources[0]), cudaMemcpyHostToDevice, stream.get()));
  const size_t values = boxes.size() * 3 * kOutHeight * kOutWidth;
  kernels::ResizedCropArgs args;
  args.sources = dsources;
  args.batch = static_cast<int64_t>(boxes.size());
  args.out_height = kOutHeight;
  args.out_width = kOutWidth;
  args.out = out.ensure(values * sizeof(float));
  kernels::resized_crop_batch(args, stream.get());
  std::vector<float> host(values);
  CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  CHECK_CUDA(cudaMemcpy(host.data(), args.out, values * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

TEST(GpuImageDecoderRegions, TheBatchIsTheWholeImagesBatchAndMatchesTheCpuPath) {
  SKIP_WITHOUT_GPU();
  const std::vector<JpegFile> files = jpeg_files();
  std::vector<EncodedRow> rows;
  std::vector<std::string> names;
  std::vector<size_t> file_of;
  std::vector<ResizedCropBox> boxes;
  for (size_t f = 0; f < files.size(); ++f)
    for (const ResizedCropBox& box : edge_and_whole_boxes(files[f].width, files[f].height)) {
      rows.push_back(EncodedRow{files[f].bytes, ""});
      names.push_back(files[f].name);
      file_of.push_back(f);
      boxes.push_back(box);
    }
  const size_t n = rows.size();
  InputCounters counters;
  GpuImageDecoder decoder(static_cast<int64_t>(n), counters);
  std::printf("nvJPEG backend: %s\n", decoder.backend());
  DeviceBuffer out;
  DecodeTarget target;
  const size_t values = n * 3 * kOutHeight * kOutWidth;
  target.out = out.ensure(values * sizeof(float));
  target.height = kOutHeight;
  target.width = kOutWidth;
  for (int c = 0; c < 3; ++c) target.std[c] = 1;
  std::vector<int32_t> labels(n, 7);
  const CropBoxFor box_for = [&](size_t row, int width, int height) {
    EXPECT_EQ(width, files[file_of[row]].width) << names[row];
    EXPECT_EQ(height, files[file_of[row]].height) << names[row];
    return boxes[row];
  };
  const SubstituteFor substitute = [](size_t, const std::string& problem, DecodedImage&) -> int32_t {
    throw std::runtime_error("a row without an image: " + problem);
  };
  decoder.decode(rows, names, labels.data(), box_for, substitute, target);
  std::vector<float> got(values);
  CHECK_CUDA(cudaMemcpy(got.data(), target.out, values * sizeof(float), cudaMemcpyDeviceToHost));

  // Byte for byte the batch from whole images: the regions hold every tap.
  const std::vector<float> whole = batch_from_whole_images(files, file_of, boxes);
  const size_t per_row = 3 * kOutHeight * kOutWidth;
  for (size_t j = 0; j < n; ++j)
    EXPECT_EQ(std::memcmp(got.data() + j * per_row, whole.data() + j * per_row, per_row * sizeof(float)), 0)
        << names[j] << ", box " << boxes[j].x << "," << boxes[j].y << " " << boxes[j].width << "x" << boxes[j].height;

  // And the CPU path (libjpeg-turbo, then the CPU resampler) to within the decoders' rounding, as above.
  double sum = 0, worst = 0;
  for (size_t j = 0; j < n; ++j) {
    const DecodedImage image = decode_image(files[file_of[j]].bytes);
    std::vector<uint8_t> cpu(per_row);
    resample_crop(image.pixels.data(), image.width, image.height, 3, boxes[j], kOutWidth, kOutHeight, cpu.data());
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < kOutHeight; ++y)
        for (int x = 0; x < kOutWidth; ++x) {
          const double gpu = got[j * per_row + (static_cast<size_t>(c) * kOutHeight + y) * kOutWidth + x] * 255.0;
          const double levels = std::abs(gpu - cpu[(static_cast<size_t>(y) * kOutWidth + x) * 3 + c]);
          sum += levels;
          worst = std::max(worst, levels);
        }
  }
  EXPECT_LT(sum / static_cast<double>(values), 4.0);
  EXPECT_LT(worst, 48.0);
  EXPECT_EQ(labels, std::vector<int32_t>(n, 7));
}

}  // namespace
}  // namespace sb::cuda

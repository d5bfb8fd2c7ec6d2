// The resized-crop batch kernel against the CPU path (resample_crop, then NormalizedBatchWriter): random
// images of random sizes (1-pixel-wide and -high ones, ones smaller and larger than the output) with
// RandomResizedCrop boxes and arbitrary fractional boxes, in every dtype and layout. Each raw byte may
// differ by at most 1 (the sums' order is the same on both sides, so nearly all are exact); the labels
// are copied. A source holding only the region its box reads (a region decode's output) gives the same
// bytes as the whole image, boxes at the image's edges and the whole image included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "data/image/normalize_batch.h"
#include "data/image/resample.h"
#include "gpu_test_util.h"
#include "kernels/resized_crop.h"
#include "maths/resized_crop.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct HostSample {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // HWC RGB
  ResizedCropBox box;
  int32_t label = 0;
};

std::vector<HostSample> random_samples(int64_t batch, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> side(1, 400), byte(0, 255), label(0, 999);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<HostSample> samples(static_cast<size_t>(batch));
  for (size_t j = 0; j < samples.size(); ++j) {
    HostSample& s = samples[j];
    s.width = j % 7 == 0 ? 1 : side(rng);
    s.height = j % 11 == 0 ? 1 : side(rng);
    s.pixels.resize(static_cast<size_t>(s.width) * s.height * 3);
    for (uint8_t& p : s.pixels) p = static_cast<uint8_t>(byte(rng));
    if (j % 3 == 0) {
      s.box.width = static_cast<float>(s.width * (0.02 + 0.98 * unit(rng)));
      s.box.height = static_cast<float>(s.height * (0.02 + 0.98 * unit(rng)));
      s.box.x = static_cast<float>((s.width - s.box.width) * unit(rng));
      s.box.y = static_cast<float>((s.height - s.box.height) * unit(rng));
      s.box.flip = unit(rng) < 0.5;
    } else {
      s.box = draw_random_resized_crop(99, 4, 1, j, s.width, s.height, RandomResizedCropParams{});
    }
    s.label = label(rng);
  }
  return samples;
}

// The kernel's source for the sample's whole image, whose pixels are at `pixels` on the device.
kernels::ResizedCropSource whole_image_source(const HostSample& s, const uint8_t* pixels) {
  kernels::ResizedCropSource source;
  source.pixels = pixels;
  source.width = s.width;
  source.height = s.height;
  source.box = kernels::ResizedCropBox{s.box.x, s.box.y, s.box.width, s.box.height, s.box.flip};
  source.label = s.label;
  return source;
}

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};

// The kernel's arguments: `batch` sources into `out`, normalised with kMean and kStd.
kernels::ResizedCropArgs crop_args(const DeviceMem& sources, int64_t batch, int out_height, int out_width, DType dtype,
                                   Layout layout, const DeviceMem& out) {
  kernels::ResizedCropArgs a;
  a.sources = sources.as<kernels::ResizedCropSource>();
  a.batch = batch;
  a.out_height = out_height;
  a.out_width = out_width;
  for (int c = 0; c < 3; ++c) {
    a.mean[c] = kMean[c];
    a.std[c] = kStd[c];
  }
  a.out = out.get();
  a.dtype = dtype;
  a.layout = layout;
  return a;
}

TEST(KernelsResizedCrop, MatchesTheCpuResampler) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(123);
  const int64_t batch = 53;
  const int out_height = 96, out_width = 80;
  const std::vector<HostSample> samples = random_samples(batch, rng);

  std::vector<DeviceMem> images;
  std::vector<kernels::ResizedCropSource> sources;
  std::vector<std::vector<uint8_t>> resampled;
  for (const HostSample& s : samples) {
    images.push_back(to_device_raw(s.pixels));
    sources.push_back(whole_image_source(s, images.back().as<uint8_t>()));
    resampled.emplace_back(static_cast<size_t>(out_height) * out_width * 3);
    resample_crop(s.pixels.data(), s.width, s.height, 3, s.box, out_width, out_height, resampled.back().data());
  }
  DeviceMem dsources = to_device_raw(sources);

  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      SCOPED_TRACE(case_name(dtype, layout));
      const BatchFormat format{dtype, layout};
      const NormalizedBatchWriter writer(std::span<const float>(kMean, 3), std::span<const float>(kStd, 3), format,
                                         out_height, out_width);
      // The CPU batch from each raw byte and its neighbours, so that a device value can be told apart as
      // the same byte or one off.
      std::vector<std::vector<std::byte>> want(3);
      for (int shift = -1; shift <= 1; ++shift) {
        want[static_cast<size_t>(shift + 1)].resize(static_cast<size_t>(writer.sample_bytes() * batch));
        for (int64_t j = 0; j < batch; ++j) {
          std::vector<uint8_t> bytes = resampled[static_cast<size_t>(j)];
          for (uint8_t& b : bytes) b = static_cast<uint8_t>(std::clamp(b + shift, 0, 255));
          writer.write(bytes.data(), j, want[static_cast<size_t>(shift + 1)].data());
        }
      }

      const size_t elements = static_cast<size_t>(batch) * 3 * out_height * out_width;
      DeviceMem out(elements * dtype_size(dtype)), labels_out(static_cast<size_t>(batch) * 4);
      out.poison();
      labels_out.poison();
      kernels::ResizedCropArgs a = crop_args(dsources, batch, out_height, out_width, dtype, layout, out);
      a.labels_out = labels_out.as<int32_t>();
      kernels::resized_crop_batch(a, nullptr);
      const std::vector<std::byte> got = download_raw<std::byte>(out.get(), elements * dtype_size(dtype));
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);

      const size_t width = dtype_size(dtype);
      size_t exact = 0, bad = 0;
      for (size_t e = 0; e < elements; ++e) {
        const std::byte* g = got.data() + e * width;
        const auto matches = [&](int k) { return std::memcmp(g, want[static_cast<size_t>(k)].data() + e * width, width) == 0; };
        if (matches(1)) {
          ++exact;
        } else if (!matches(0) && !matches(2)) {
          if (bad < 5) ADD_FAILURE() << "element " << e << " is neither the CPU's byte nor one off";
          ++bad;
        }
      }
      EXPECT_EQ(bad, 0u);
      EXPECT_GT(static_cast<double>(exact) / elements, 0.99);
      std::vector<int32_t> want_labels;
      for (const HostSample& s : samples) want_labels.push_back(s.label);
      EXPECT_EQ(download_raw<int32_t>(labels_out.get(), static_cast<size_t>(batch)), want_labels);
    }
}

// The pixels of `r` cut out of the sample's image, with `guard` bytes of 255 before and after, so that a
// tap read outside the region would change the output.
std::vector<uint8_t> region_with_guard(const HostSample& s, const SourceRegion& r, size_t guard) {
  std::vector<uint8_t> out(guard, 255);
  for (int y = r.y; y < r.y + r.height; ++y)
    for (int x = r.x; x < r.x + r.width; ++x)
      for (int c = 0; c < 3; ++c) out.push_back(s.pixels[(static_cast<size_t>(y) * s.width + x) * 3 + c]);
  out.insert(out.end(), guard, 255);
  return out;
}

TEST(KernelsResizedCrop, ARegionOfTheImageGivesTheWholeImagesBytes) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(321);
  const int64_t batch = 41;
  const int out_height = 56, out_width = 48;
  std::vector<HostSample> samples = random_samples(batch, rng);
  // Small boxes at the corners and edges, and the whole image, besides the drawn and fractional ones.
  for (size_t j = 0; j < samples.size(); j += 4) {
    HostSample& s = samples[j];
    const float w = std::max(1.0f, s.width / 8.0f), h = std::max(1.0f, s.height / 6.0f);
    const float xs[3] = {0.0f, (s.width - w) / 2, s.width - w}, ys[3] = {0.0f, (s.height - h) / 2, s.height - h};
    s.box = j % 20 == 0 ? ResizedCropBox{0, 0, static_cast<float>(s.width), static_cast<float>(s.height), true}
                        : ResizedCropBox{xs[(j / 4) % 3], ys[(j / 12) % 3], w, h, j % 8 == 0};
  }
  constexpr size_t kGuard = 3 * 64;
  std::vector<DeviceMem> images;
  std::vector<kernels::ResizedCropSource> whole, regions;
  for (const HostSample& s : samples) {
    images.push_back(to_device_raw(s.pixels));
    kernels::ResizedCropSource source = whole_image_source(s, images.back().as<uint8_t>());
    whole.push_back(source);
    const SourceRegion r = resample_source_region(s.box, out_width, out_height, s.width, s.height, 0);
    images.push_back(to_device_raw(region_with_guard(s, r, kGuard)));
    source.pixels = images.back().as<uint8_t>() + kGuard;
    source.region = kernels::PixelRegion{r.x, r.y, r.width, r.height};
    regions.push_back(source);
  }
  DeviceMem dwhole = to_device_raw(whole), dregions = to_device_raw(regions);
  for (DType dtype : {DType::F32, DType::BF16})
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      SCOPED_TRACE(case_name(dtype, layout));
      const size_t bytes = static_cast<size_t>(batch) * 3 * out_height * out_width * dtype_size(dtype);
      std::vector<std::vector<std::byte>> got;
      for (const DeviceMem* sources : {&dwhole, &dregions}) {
        DeviceMem out(bytes);
        out.poison();
        kernels::resized_crop_batch(crop_args(*sources, batch, out_height, out_width, dtype, layout, out), nullptr);
        got.push_back(download_raw<std::byte>(out.get(), bytes));
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
      }
      EXPECT_TRUE(got[0] == got[1]) << "the regions' output differs from the whole images'";
    }
}

}  // namespace

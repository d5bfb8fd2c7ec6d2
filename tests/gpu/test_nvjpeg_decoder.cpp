// nvJPEG's batched decode against the CPU decoder (data/image/jpeg_decoder.h) on JPEGs written here with
// libjpeg: baseline 4:2:0 and 4:4:4, grey, restart markers, progressive, in batches of mixed sizes; and
// what it refuses (damaged input, CMYK, over the pixel limit) comes back refused with a reason, never as a
// crash. On the JPEG engines a region decode is byte for byte the window of the whole decode; what the
// engines do not take or fail comes back whole, saying so. Built only with nvJPEG (tests/gpu/CMakeLists.txt);
// skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/cuda/nvjpeg_decoder.h"
#include "data/image/jpeg_decoder.h"
#include "gpu_test_util.h"
#include "unit/image_test_files.h"

namespace {

using namespace sb;
using test::Bytes;

// A smooth pattern: every channel a ramp, so that the decoders' different chroma upsampling (libjpeg
// interpolates, nvJPEG may replicate) differs by a fraction of a ramp step, not by an edge's height.
Bytes smooth_rgb(int width, int height) {
  Bytes p(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint8_t* px = &p[(static_cast<size_t>(y) * width + x) * 3];
      px[0] = static_cast<uint8_t>(40 + x * 170 / (width - 1));
      px[1] = static_cast<uint8_t>(40 + y * 170 / (height - 1));
      px[2] = static_cast<uint8_t>(200 - (x + y) * 150 / (width + height - 2));
    }
  return p;
}

Bytes grey_ramp(int width, int height) {
  Bytes p(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) p[static_cast<size_t>(y) * width + x] = static_cast<uint8_t>(30 + (x + y) * 190 / (width + height - 2));
  return p;
}

// A JPEG of one kind, and how far the two decoders may differ on it. Both decoders' IDCTs and colour
// conversions round differently (a few levels at most at quality 95); at 4:2:0 chroma upsampling adds up
// to about half a pixel's step of the ramps (below 2 levels per channel here), bounded with room to spare.
struct Case {
  std::string name;
  Bytes jpeg;
  int width, height;
  int max_difference;
};

Case make_case(const std::string& name, int width, int height, bool full_chroma, int restart_interval, bool progressive) {
  test::JpegSpec spec;
  spec.width = width;
  spec.height = height;
  spec.full_chroma = full_chroma;
  spec.restart_interval = restart_interval;
  spec.progressive = progressive;
  return {name, test::encode_jpeg(spec, smooth_rgb(width, height)), width, height, full_chroma ? 8 : 12};
}

Case make_grey_case(int width, int height) {
  test::JpegSpec spec;
  spec.width = width;
  spec.height = height;
  spec.components = 1;
  spec.in_space = JCS_GRAYSCALE;
  return {"grey", test::encode_jpeg(spec, grey_ramp(width, height)), width, height, 8};
}

std::vector<EncodedImage> encoded(const std::vector<Case>& cases) {
  std::vector<EncodedImage> images;
  for (const Case& c : cases) images.push_back({c.jpeg.data(), c.jpeg.size()});
  return images;
}

// The decoder on a stream of its own.
struct Fixture {
  cudaStream_t stream = nullptr;
  Fixture() { EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess); }
  ~Fixture() { cudaStreamDestroy(stream); }
};

Bytes download(const DeviceImage& image, cudaStream_t stream) {
  Bytes host(static_cast<size_t>(image.width) * image.height * 3);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), image.pixels, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// The GPU image against the CPU decoder's: the same size, mean absolute difference below 1.5 levels
// and no channel off by more than the case's bound.
void expect_like_cpu(const Case& c, const DeviceImage& gpu, cudaStream_t stream) {
  SCOPED_TRACE(c.name + " " + std::to_string(c.width) + "x" + std::to_string(c.height));
  ASSERT_NE(gpu.pixels, nullptr);
  ASSERT_EQ(gpu.width, c.width);
  ASSERT_EQ(gpu.height, c.height);
  const DecodedImage cpu = decode_jpeg(c.jpeg);
  const Bytes pixels = download(gpu, stream);
  ASSERT_EQ(pixels.size(), cpu.pixels.size());
  double sum = 0;
  int worst = 0;
  for (size_t i = 0; i < pixels.size(); ++i) {
    const int d = std::abs(int{pixels[i]} - int{cpu.pixels[i]});
    sum += d;
    worst = std::max(worst, d);
  }
  // Under 1.5 levels on images of a few hundred pixels a side; the small ones are mostly edge, where
  // nvJPEG's chroma upsampling (replication) and libjpeg's (interpolation) differ most.
  EXPECT_LT(sum / static_cast<double>(pixels.size()), c.width * c.height >= 4096 ? 1.5 : 4.0);
  EXPECT_LE(worst, c.max_difference);
}

TEST(NvjpegDecoder, MatchesTheCpuDecoderInOneBatchOfMixedKindsAndSizes) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(nvjpeg_built_in());
  const std::vector<Case> cases = {make_case("baseline 4:2:0", 64, 48, false, 0, false),
                                   make_case("baseline 4:4:4, odd size", 67, 45, true, 0, false),
                                   make_grey_case(50, 34),
                                   make_case("restart markers every 3 MCUs", 96, 64, false, 3, false),
                                   make_case("4:4:4 with restart markers", 33, 17, true, 1, false)};
  Fixture f;
  NvjpegBatchDecoder decoder(8, kDefaultMaxImagePixels, f.stream);
  std::printf("nvJPEG backend: %s\n", decoder.backend());
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(encoded(cases), refused, reasons);
  ASSERT_EQ(out.size(), cases.size());
  ASSERT_EQ(refused.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_FALSE(refused[i]) << cases[i].name << ": " << reasons[i];
    if (!refused[i]) expect_like_cpu(cases[i], out[i], f.stream);
  }
}

TEST(NvjpegDecoder, AProbeGivesTheSizeAndSendsBaselineFilesToTheEnginesWhereThereAreAny) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {make_case("baseline 4:2:0", 67, 45, false, 0, false),
                                   make_case("progressive 4:2:0", 40, 30, false, 0, true), make_grey_case(50, 34)};
  Fixture f;
  NvjpegBatchDecoder decoder(4, kDefaultMaxImagePixels, f.stream);
  const bool engines = std::string(decoder.backend()) == "hardware";
  for (const Case& c : cases) {
    const JpegProbe probe = decoder.probe(EncodedImage{c.jpeg.data(), c.jpeg.size()});
    EXPECT_EQ(probe.refusal, "") << c.name;
    EXPECT_EQ(probe.width, c.width) << c.name;
    EXPECT_EQ(probe.height, c.height) << c.name;
    if (!engines) {
      EXPECT_FALSE(probe.on_hardware) << c.name;
    }
  }
  // The engines take baseline files and never progressive ones.
  EXPECT_EQ(decoder.probe(EncodedImage{cases[0].jpeg.data(), cases[0].jpeg.size()}).on_hardware, engines);
  EXPECT_FALSE(decoder.probe(EncodedImage{cases[1].jpeg.data(), cases[1].jpeg.size()}).on_hardware);
}

TEST(NvjpegDecoder, ProgressiveIsDecodedCorrectlyOrRefusedWithAReason) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {make_case("progressive 4:2:0", 40, 30, false, 0, true),
                                   make_case("baseline beside it", 48, 40, false, 0, false)};
  Fixture f;
  NvjpegBatchDecoder decoder(4, kDefaultMaxImagePixels, f.stream);
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(encoded(cases), refused, reasons);
  if (refused[0]) {
    EXPECT_FALSE(reasons[0].empty());
    EXPECT_EQ(out[0].pixels, nullptr);
    std::printf("progressive refused: %s\n", reasons[0].c_str());
  } else {
    expect_like_cpu(cases[0], out[0], f.stream);
  }
  ASSERT_FALSE(refused[1]) << reasons[1];
  expect_like_cpu(cases[1], out[1], f.stream);
}

TEST(NvjpegDecoder, DamagedAndUnsupportedInputIsRefusedAndTheRestDecodes) {
  SKIP_WITHOUT_GPU();
  const Case good = make_case("good", 64, 48, false, 0, false);
  Bytes truncated(good.jpeg.begin(), good.jpeg.begin() + static_cast<std::ptrdiff_t>(good.jpeg.size() / 2));
  Bytes garbage(700);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 131 + 7);
  Bytes soi_then_garbage = garbage;  // starts as a JPEG, ends with EOI, holds no valid marker in between
  soi_then_garbage[0] = 0xFF;
  soi_then_garbage[1] = 0xD8;
  soi_then_garbage[2] = 0xFF;
  soi_then_garbage[soi_then_garbage.size() - 2] = 0xFF;
  soi_then_garbage.back() = 0xD9;
  test::JpegSpec cmyk_spec;
  cmyk_spec.components = 4;
  cmyk_spec.in_space = JCS_CMYK;
  const Bytes cmyk = test::encode_jpeg(cmyk_spec, Bytes(static_cast<size_t>(cmyk_spec.width) * cmyk_spec.height * 4, 100));
  const Bytes png = test::png_header_only(8, 8);

  const std::vector<EncodedImage> images = {{truncated.data(), truncated.size()},
                                            {good.jpeg.data(), good.jpeg.size()},
                                            {garbage.data(), garbage.size()},
                                            {soi_then_garbage.data(), soi_then_garbage.size()},
                                            {nullptr, 0},
                                            {cmyk.data(), cmyk.size()},
                                            {png.data(), png.size()}};
  Fixture f;
  NvjpegBatchDecoder decoder(8, kDefaultMaxImagePixels, f.stream);
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(images, refused, reasons);
  ASSERT_EQ(out.size(), images.size());
  for (size_t i : {0u, 2u, 3u, 4u, 5u, 6u}) {
    EXPECT_TRUE(refused[i]) << "image " << i;
    EXPECT_FALSE(reasons[i].empty()) << "image " << i;
    EXPECT_EQ(out[i].pixels, nullptr) << "image " << i;
    std::printf("image %zu refused: %s\n", i, reasons[i].c_str());
  }
  EXPECT_NE(reasons[0].find("EOI"), std::string::npos) << reasons[0];
  // CMYK: the header parse counts its 4 components, or refuses the stream itself.
  EXPECT_TRUE(reasons[5].find("4 components") != std::string::npos ||
              reasons[5].find("nvjpegJpegStreamParseHeader") != std::string::npos)
      << reasons[5];
  ASSERT_FALSE(refused[1]) << reasons[1];
  expect_like_cpu(good, out[1], f.stream);
  EXPECT_EQ(cudaStreamSynchronize(f.stream), cudaSuccess);
}

TEST(NvjpegDecoder, AnImageOverThePixelLimitIsRefusedWithTheLimit) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {make_case("over the limit", 64, 48, false, 0, false),
                                   make_case("under the limit", 24, 16, false, 0, false)};
  Fixture f;
  NvjpegBatchDecoder decoder(2, 1000, f.stream);
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(encoded(cases), refused, reasons);
  ASSERT_TRUE(refused[0]);
  EXPECT_NE(reasons[0].find("64 x 48 = 3072 pixels, over the limit of 1000"), std::string::npos) << reasons[0];
  ASSERT_FALSE(refused[1]) << reasons[1];
  expect_like_cpu(cases[1], out[1], f.stream);
}

TEST(NvjpegDecoder, LaterBatchesOfOtherSizesLandInTheirOwnPlaces) {
  SKIP_WITHOUT_GPU();
  Fixture f;
  NvjpegBatchDecoder decoder(6, kDefaultMaxImagePixels, f.stream);
  // Small images first, then more and larger ones: the arena and, on the JPEG engines, their buffers allocated
  // ahead grow between the calls.
  const std::vector<std::vector<std::pair<int, int>>> batches = {
      {{16, 16}, {24, 8}, {8, 40}},
      {{120, 90}, {17, 200}, {256, 32}, {64, 64}, {31, 33}, {200, 150}}};
  for (const auto& sizes : batches) {
    std::vector<Case> cases;
    for (auto [w, h] : sizes) cases.push_back(make_case("batch image", w, h, (w + h) % 2 == 0, 0, false));
    std::vector<uint8_t> refused;
    std::vector<std::string> reasons;
    const std::vector<DeviceImage> out = decoder.decode(encoded(cases), refused, reasons);
    ASSERT_EQ(out.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      ASSERT_FALSE(refused[i]) << reasons[i];
      expect_like_cpu(cases[i], out[i], f.stream);
    }
  }
}

// Regions of a width x height image: the corners, odd offsets and sizes, a single pixel, full-width and
// full-height strips, and the whole image less its border.
std::vector<CropBox> regions_of(int width, int height) {
  return {CropBox{0, 0, 17, 11},
          CropBox{width - 23, 0, 23, 9},
          CropBox{0, height - 13, 31, 13},
          CropBox{width - 5, height - 7, 5, 7},
          CropBox{7, 5, 1, 1},
          CropBox{13, 9, width / 2 + 1, height / 3 + 3},
          CropBox{0, height / 2 - 3, width, 9},
          CropBox{width / 2 - 1, 0, 3, height},
          CropBox{1, 1, width - 2, height - 2}};
}

// The window `r` of a whole image's pixels.
Bytes window(const Bytes& whole, int width, const CropBox& r) {
  Bytes out;
  for (int y = r.y; y < r.y + r.height; ++y)
    out.insert(out.end(), whole.begin() + (static_cast<std::ptrdiff_t>(y) * width + r.x) * 3,
               whole.begin() + (static_cast<std::ptrdiff_t>(y) * width + r.x + r.width) * 3);
  return out;
}

// Each case's whole decode, downloaded (before the next decode() replaces the arena).
std::vector<Bytes> whole_decodes(NvjpegBatchDecoder& decoder, const std::vector<Case>& cases, cudaStream_t stream) {
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(encoded(cases), refused, reasons);
  std::vector<Bytes> pixels;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_FALSE(refused[i]) << cases[i].name << ": " << reasons[i];
    EXPECT_EQ(out[i].x, 0);
    EXPECT_EQ(out[i].y, 0);
    pixels.push_back(refused[i] ? Bytes{} : download(out[i], stream));
  }
  return pixels;
}

TEST(NvjpegDecoder, ARegionOnTheEnginesIsByteForByteTheWindowOfTheWholeDecode) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {make_case("baseline 4:2:0", 203, 157, false, 0, false),
                                   make_case("baseline 4:4:4", 130, 97, true, 0, false), make_grey_case(90, 66),
                                   make_case("restart markers every 2 MCUs", 161, 120, false, 2, false)};
  Fixture f;
  const size_t per_case = regions_of(100, 100).size();
  NvjpegBatchDecoder decoder(static_cast<int>(per_case), kDefaultMaxImagePixels, f.stream);
  if (std::string(decoder.backend()) != "hardware")
    GTEST_SKIP() << "this device has no JPEG engines (nvJPEG backend " << decoder.backend()
                 << "): region decoding is theirs alone";
  const std::vector<Bytes> whole = whole_decodes(decoder, cases, f.stream);
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(cases[c].name);
    const std::vector<CropBox> regions = regions_of(cases[c].width, cases[c].height);
    // One batch of the same file, each entry with a region of its own.
    const std::vector<EncodedImage> images(regions.size(), EncodedImage{cases[c].jpeg.data(), cases[c].jpeg.size()});
    std::vector<JpegProbe> probes;
    for (const CropBox& region : regions) {
      probes.push_back(decoder.probe(images[0], [&](int width, int height) {
        EXPECT_EQ(width, cases[c].width);
        EXPECT_EQ(height, cases[c].height);
        return region;
      }));
      ASSERT_TRUE(probes.back().on_hardware);
      const CropBox& got = probes.back().region;
      if (got.empty()) {  // nvjpegDecodeBatchedSupportedEx said no: decoded whole, checked below
        std::printf("%s: the engines decode region %dx%d at %d,%d only as the whole image\n", cases[c].name.c_str(),
                    region.width, region.height, region.x, region.y);
        // Baseline 4:2:0, the usual photograph, must have its regions on the engines.
        EXPECT_NE(c, 0u) << "the engines refused the region";
      } else {
        EXPECT_TRUE(got.x == region.x && got.y == region.y && got.width == region.width && got.height == region.height);
      }
    }
    std::vector<uint8_t> refused;
    std::vector<std::string> reasons;
    const std::vector<DeviceImage> out = decoder.decode(images, probes, refused, reasons);
    for (size_t k = 0; k < regions.size(); ++k) {
      const CropBox& r = regions[k];
      SCOPED_TRACE("region " + std::to_string(r.width) + "x" + std::to_string(r.height) + " at " + std::to_string(r.x) +
                   "," + std::to_string(r.y));
      ASSERT_FALSE(refused[k]) << reasons[k];
      const CropBox held = probes[k].region.empty() ? CropBox{0, 0, cases[c].width, cases[c].height} : r;
      ASSERT_EQ(out[k].x, held.x);
      ASSERT_EQ(out[k].y, held.y);
      ASSERT_EQ(out[k].width, held.width);
      ASSERT_EQ(out[k].height, held.height);
      EXPECT_TRUE(download(out[k], f.stream) == window(whole[c], cases[c].width, held)) << "not the whole decode's window";
    }
  }
}

TEST(NvjpegDecoder, AnImageTheEnginesDoNotTakeDecodesWholeWhateverItsRegion) {
  SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {make_case("progressive 4:2:0", 120, 90, false, 0, true),
                                   make_case("baseline beside it", 96, 64, false, 0, false)};
  Fixture f;
  NvjpegBatchDecoder decoder(2, kDefaultMaxImagePixels, f.stream);
  const bool engines = std::string(decoder.backend()) == "hardware";
  const std::vector<EncodedImage> images = encoded(cases);
  const CropBox region{10, 20, 30, 40};
  std::vector<JpegProbe> probes;
  for (const EncodedImage& image : images) probes.push_back(decoder.probe(image, [&](int, int) { return region; }));
  EXPECT_FALSE(probes[0].on_hardware);
  EXPECT_TRUE(probes[0].region.empty()) << "a region for the default backend";
  EXPECT_EQ(probes[1].region.empty(), !engines);
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(images, probes, refused, reasons);
  if (refused[0]) {
    std::printf("progressive refused: %s\n", reasons[0].c_str());
  } else {
    EXPECT_EQ(out[0].x, 0);
    EXPECT_EQ(out[0].y, 0);
    expect_like_cpu(cases[0], out[0], f.stream);  // the whole image
  }
  ASSERT_FALSE(refused[1]) << reasons[1];
  EXPECT_EQ(out[1].width, engines ? region.width : cases[1].width);
  EXPECT_EQ(out[1].x, engines ? region.x : 0);
}

// A baseline file with each component in a scan of its own: the header alone does not show it, the engines
// may fail it, and then it is decoded alone on the default backend, whole. Whichever way it went, the
// result says which part it holds and that part is the image's.
TEST(NvjpegDecoder, ARegionTheEnginesFailComesBackWholeFromTheDefaultBackend) {
  SKIP_WITHOUT_GPU();
  test::JpegSpec spec;
  spec.width = 120;
  spec.height = 80;
  spec.scan_per_component = true;
  const Case several_scans{"baseline, a scan per component", test::encode_jpeg(spec, smooth_rgb(120, 80)), 120, 80, 12};
  const Case plain = make_case("baseline, one scan", 100, 70, false, 0, false);
  const std::vector<Case> cases = {several_scans, plain, several_scans};
  Fixture f;
  NvjpegBatchDecoder decoder(3, kDefaultMaxImagePixels, f.stream);
  const std::vector<CropBox> regions = {CropBox{8, 16, 40, 24}, CropBox{0, 30, 50, 40}, CropBox{100, 70, 20, 10}};
  const std::vector<EncodedImage> images = encoded(cases);
  std::vector<JpegProbe> probes;
  for (size_t i = 0; i < images.size(); ++i) probes.push_back(decoder.probe(images[i], [&](int, int) { return regions[i]; }));
  std::vector<uint8_t> refused;
  std::vector<std::string> reasons;
  const std::vector<DeviceImage> out = decoder.decode(images, probes, refused, reasons);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name + " #" + std::to_string(i));
    if (refused[i]) {
      std::printf("%s refused: %s\n", cases[i].name.c_str(), reasons[i].c_str());
      continue;
    }
    const bool whole = out[i].width == cases[i].width && out[i].height == cases[i].height;
    std::printf("%s #%zu: %s\n", cases[i].name.c_str(), i, whole ? "whole" : "its region");
    if (whole) {
      EXPECT_EQ(out[i].x, 0);
      EXPECT_EQ(out[i].y, 0);
      expect_like_cpu(cases[i], out[i], f.stream);
      continue;
    }
    const CropBox& r = regions[i];
    ASSERT_TRUE(out[i].x == r.x && out[i].y == r.y && out[i].width == r.width && out[i].height == r.height);
    // Against the CPU decoder's window, as expect_like_cpu bounds whole images.
    const DecodedImage cpu = decode_jpeg(cases[i].jpeg);
    const Bytes want = window(cpu.pixels, cpu.width, r), got = download(out[i], f.stream);
    ASSERT_EQ(got.size(), want.size());
    int worst = 0;
    for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::abs(int{got[k]} - int{want[k]}));
    EXPECT_LE(worst, cases[i].max_difference);
  }
}

}  // namespace

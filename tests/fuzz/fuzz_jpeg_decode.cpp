// Fuzzes the JPEG decoder (libjpeg-turbo behind decode_jpeg's error manager) on hostile bytes.
//
// Input: one mode byte, then the file's bytes.
//   mode bits 0-1  the DCT-scaling minimum: 0 none (full size), 1: 1x1, 2: 8x8, 3: 33x17
//   mode bit 2     crop to a box in the middle (from read_jpeg_size's size), so that the row skipping and
//                  the iMCU column crop run too
// Allowed outcomes: an RGB image of the size the header gave (or its DCT-scaled size), or
// sb::ImageDecodeError (a sb::UserError). Anything else is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "data/image/jpeg_decoder.h"
#include "fuzz_util.h"

using namespace sb;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr int kMinimum[4][2] = {{0, 0}, {1, 1}, {8, 8}, {33, 17}};
  DecodeOptions options;
  options.max_pixels = int64_t{1} << 22;  // bounds each input's memory and time well under libFuzzer's limits
  options.min_width = kMinimum[data[0] & 3][0];
  options.min_height = kMinimum[data[0] & 3][1];
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  try {
    if (data[0] & 4) {
      const ImageSize full = read_jpeg_size(bytes);
      options.crop = CropBox{full.width / 4, full.height / 3, std::max(1, full.width / 2), std::max(1, full.height / 3)};
    }
    const DecodedImage image = decode_jpeg(bytes, options);
    SB_FUZZ_REQUIRE(image.width > 0 && image.height > 0);
    SB_FUZZ_REQUIRE(static_cast<int64_t>(image.width) * image.height <= options.max_pixels);
    SB_FUZZ_REQUIRE(image.pixels.size() == static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  } catch (const UserError& e) {
    fuzz::expected(e);
  }
  return 0;
}

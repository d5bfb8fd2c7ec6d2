// Fuzzes the PNG decoder (libpng behind decode_png's error handler) on hostile bytes.
//
// Input: the file's bytes.
// Allowed outcomes: an RGB image within the pixel limit, or sb::ImageDecodeError (a sb::UserError).
// Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "data/image/png_decoder.h"
#include "fuzz_util.h"

using namespace sb;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  DecodeOptions options;
  options.max_pixels = int64_t{1} << 22;  // bounds each input's memory and time well under libFuzzer's limits
  try {
    const DecodedImage image = decode_png(std::span(data, size), options);
    SB_FUZZ_REQUIRE(image.width > 0 && image.height > 0);
    SB_FUZZ_REQUIRE(static_cast<int64_t>(image.width) * image.height <= options.max_pixels);
    SB_FUZZ_REQUIRE(image.pixels.size() == static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  } catch (const UserError& e) {
    fuzz::expected(e);
  }
  return 0;
}

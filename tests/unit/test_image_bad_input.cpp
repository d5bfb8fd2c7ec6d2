// What each bad image file gets: an ImageDecodeError whose message names the cause.
#include <gtest/gtest.h>

#include <string>

#include "data/image/image_decoder.h"
#include "image_test_files.h"

namespace sb {
namespace {

using test::Bytes;

std::string decode_error(const Bytes& bytes, const DecodeOptions& options = {}) {
  try {
    decode_image(bytes, options);
  } catch (const ImageDecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(ImageBadInput, ZeroBytes) {
  EXPECT_EQ(decode_error({}), "not a JPEG or PNG image: the content is empty (0 bytes) (formats are told by content, not by "
                              "the file's extension; only JPEG and PNG are decoded)");
}

TEST(ImageBadInput, TextNamedJpg) {
  const std::string text = "<html>404 Not Found</html>\n";
  EXPECT_NE(decode_error(Bytes(text.begin(), text.end())).find("the content is text"), std::string::npos);
}

TEST(ImageBadInput, UnknownFormat) {
  EXPECT_NE(decode_error(Bytes{'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0}).find("the content is a GIF image"), std::string::npos);
  EXPECT_NE(decode_error(Bytes{0, 1, 2, 3, 4}).find("unrecognised bytes 00 01 02 03"), std::string::npos);
}

TEST(ImageBadInput, TruncatedJpegIsAnErrorNotGreyRows) {
  for (bool progressive : {false, true}) {
    const Bytes jpeg = test::encode_rgb_jpeg(64, 64, progressive);
    for (size_t keep : {jpeg.size() / 2, jpeg.size() - 2}) {
      const std::string message = decode_error(Bytes(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(keep)));
      EXPECT_EQ(message, "invalid JPEG: Premature end of JPEG file (the file is cut short)")
          << (progressive ? "progressive" : "baseline") << ", " << keep << " bytes";
    }
  }
}

TEST(ImageBadInput, JpegWithOnlyItsStartIsLibjpegsMessage) {
  EXPECT_EQ(decode_error(Bytes{0xFF, 0xD8, 0xFF}), "invalid JPEG: Premature end of JPEG file (the file is cut short)");
  const std::string message = decode_error(Bytes{0xFF, 0xD8, 0xFF, 0x00, 0x12, 0x34, 0x56, 0x78});
  EXPECT_EQ(message.rfind("invalid JPEG: ", 0), 0u) << message;
}

TEST(ImageBadInput, SixteenBitPng) {
  const std::string message = decode_error(test::png_header_only(4, 4, 16));
  EXPECT_EQ(message, "PNG is 16 bits per channel (4 x 4); only 8-bit PNGs are decoded: convert it to 8 bits (e.g. PIL's "
                     "convert('RGB'))");
}

TEST(ImageBadInput, PngBombIsRefusedFromItsHeader) {
  EXPECT_EQ(decode_error(test::png_header_only(100000, 100000)),
            "PNG header claims 100000 x 100000 = 10000000000 pixels, over the limit of 178956970 (a decompression bomb, "
            "or raise the pixel limit if the image is genuine)");
}

TEST(ImageBadInput, JpegBombIsRefusedFromItsHeader) {
  Bytes jpeg = test::encode_rgb_jpeg(16, 16);
  test::set_jpeg_size(jpeg, 65000, 65000);
  EXPECT_EQ(decode_error(jpeg), "JPEG header claims 65000 x 65000 = 4225000000 pixels, over the limit of 178956970 (a "
                                "decompression bomb, or raise the pixel limit if the image is genuine)");
}

TEST(ImageBadInput, PixelLimitIsConfigurable) {
  DecodeOptions options;
  options.max_pixels = 255;
  EXPECT_NE(decode_error(test::encode_rgb_jpeg(16, 16), options).find("16 x 16 = 256 pixels, over the limit of 255"),
            std::string::npos);
  options.max_pixels = 256;
  EXPECT_EQ(decode_error(test::encode_rgb_jpeg(16, 16), options), "");
}

TEST(ImageBadInput, TruncatedPng) {
  const Bytes png = test::encode_png(test::PngSpec{}, test::gradient_rgb(16, 12));
  EXPECT_EQ(decode_error(Bytes(png.begin(), png.end() - 20)), "invalid PNG: premature end of PNG data (the file is cut short)");
  EXPECT_EQ(decode_error(Bytes(png.begin(), png.begin() + 20)), "invalid PNG: premature end of PNG data (the file is cut short)");
}

TEST(ImageBadInput, PngWithABadCrc) {
  Bytes png = test::encode_png(test::PngSpec{}, test::gradient_rgb(16, 12));
  png[29] ^= 0xFF;  // IHDR's CRC
  EXPECT_EQ(decode_error(png), "invalid PNG: IHDR: CRC error");
}

TEST(ImageBadInput, ErrorsAreUserErrors) {
  EXPECT_THROW(decode_image({}), UserError);
}

}  // namespace
}  // namespace sb

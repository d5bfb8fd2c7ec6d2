// The JPEG and PNG decoders against images of known pixels written with libjpeg and libpng.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "data/image/dct_scale.h"
#include "data/image/image_decoder.h"
#include "data/image/image_format.h"
#include "image_test_files.h"

namespace sb {
namespace {

using test::Bytes;

// The mean and the largest absolute difference of two images of the same size.
struct Difference {
  double mean = 0;
  int max = 0;
};

Difference difference(const Bytes& a, const Bytes& b) {
  EXPECT_EQ(a.size(), b.size());
  Difference d;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const int diff = std::abs(int{a[i]} - int{b[i]});
    d.mean += diff;
    d.max = std::max(d.max, diff);
  }
  d.mean /= static_cast<double>(a.size());
  return d;
}

Bytes grey_of(const Bytes& rgb) {
  Bytes grey(rgb.size() / 3);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>((rgb[3 * i] + rgb[3 * i + 1] + rgb[3 * i + 2]) / 3);
  return grey;
}

Bytes rgb_of_grey(const Bytes& grey) {
  Bytes rgb(grey.size() * 3);
  for (size_t i = 0; i < grey.size(); ++i) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = grey[i];
  return rgb;
}

TEST(ImageFormat, IsToldByContent) {
  EXPECT_EQ(sniff_image_format(test::encode_rgb_jpeg(8, 8)), ImageFormat::Jpeg);
  EXPECT_EQ(sniff_image_format(test::png_header_only(4, 4)), ImageFormat::Png);
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 0, 0};
  EXPECT_EQ(sniff_image_format(gif), ImageFormat::Unknown);
  EXPECT_EQ(describe_unknown_bytes(gif), "a GIF image");
  EXPECT_EQ(describe_unknown_bytes({}), "empty (0 bytes)");
}

TEST(JpegDecode, BaselineRgbIsCloseToItsPixels) {
  const Bytes pixels = test::gradient_rgb(64, 48);
  const DecodedImage image = decode_image(test::encode_rgb_jpeg(64, 48));
  ASSERT_EQ(image.width, 64);
  ASSERT_EQ(image.height, 48);
  const Difference d = difference(image.pixels, pixels);
  EXPECT_LT(d.mean, 2.0);
  EXPECT_LT(d.max, 24);
}

TEST(JpegDecode, ProgressiveGivesTheSamePixelsAsBaseline) {
  const DecodedImage baseline = decode_image(test::encode_rgb_jpeg(40, 30, false));
  const DecodedImage progressive = decode_image(test::encode_rgb_jpeg(40, 30, true));
  ASSERT_EQ(progressive.width, 40);
  ASSERT_EQ(progressive.height, 30);
  EXPECT_LT(difference(progressive.pixels, baseline.pixels).mean, 1.0);
}

// The test writer's 4:4:4 and restart-marker files (the GPU decoder's tests use them) are what they say
// and decode as closely as the 4:2:0 one.
TEST(JpegDecode, FullChromaWithRestartMarkersIsCloseToItsPixels) {
  test::JpegSpec spec;
  spec.full_chroma = true;
  spec.restart_interval = 2;
  const Bytes pixels = test::gradient_rgb(spec.width, spec.height);
  const Bytes jpeg = test::encode_jpeg(spec, pixels);
  bool restart_interval = false, restart_marker = false;
  for (size_t i = 2; i + 11 < jpeg.size(); ++i) {
    if (jpeg[i] != 0xFF) continue;
    if (jpeg[i + 1] == 0xC0) {
      EXPECT_EQ(jpeg[i + 11], 0x11) << "the luma component's sampling factors (SOF0)";
    }
    restart_interval |= jpeg[i + 1] == 0xDD;  // DRI
    restart_marker |= jpeg[i + 1] >= 0xD0 && jpeg[i + 1] <= 0xD7;
  }
  EXPECT_TRUE(restart_interval);
  EXPECT_TRUE(restart_marker);
  const DecodedImage image = decode_image(jpeg);
  ASSERT_EQ(image.width, spec.width);
  ASSERT_EQ(image.height, spec.height);
  const Difference d = difference(image.pixels, pixels);
  EXPECT_LT(d.mean, 2.0);
  EXPECT_LT(d.max, 24);
}

TEST(JpegDecode, GreyComesOutAsEqualRgbChannels) {
  test::JpegSpec spec;
  spec.components = 1;
  spec.in_space = JCS_GRAYSCALE;
  const Bytes grey = grey_of(test::gradient_rgb(spec.width, spec.height));
  const DecodedImage image = decode_image(test::encode_jpeg(spec, grey));
  ASSERT_EQ(image.pixels.size(), grey.size() * 3);
  for (size_t i = 0; i < grey.size(); ++i) {
    ASSERT_EQ(image.pixels[3 * i], image.pixels[3 * i + 1]);
    ASSERT_EQ(image.pixels[3 * i], image.pixels[3 * i + 2]);
  }
  EXPECT_LT(difference(image.pixels, rgb_of_grey(grey)).mean, 2.0);
}

// Adobe's CMYK stores inverted inks: (c, m, y, k) stored as (R, G, B, 255) is the colour (R, G, B).
Bytes adobe_cmyk_of(const Bytes& rgb) {
  Bytes cmyk(rgb.size() / 3 * 4);
  for (size_t i = 0; i < rgb.size() / 3; ++i) {
    for (int c = 0; c < 3; ++c) cmyk[4 * i + c] = rgb[3 * i + c];
    cmyk[4 * i + 3] = 255;
  }
  return cmyk;
}

TEST(JpegDecode, AdobeInvertedCmykAndYcckConvertToRgb) {
  const Bytes rgb = test::gradient_rgb(48, 32);
  for (J_COLOR_SPACE space : {JCS_CMYK, JCS_YCCK}) {
    test::JpegSpec spec;
    spec.width = 48;
    spec.height = 32;
    spec.components = 4;
    spec.in_space = JCS_CMYK;
    spec.file_space = space;
    const DecodedImage image = decode_image(test::encode_jpeg(spec, adobe_cmyk_of(rgb)));
    ASSERT_EQ(image.width, 48);
    const Difference d = difference(image.pixels, rgb);
    EXPECT_LT(d.mean, 3.0) << (space == JCS_CMYK ? "CMYK" : "YCCK");
    EXPECT_LT(d.max, 40) << (space == JCS_CMYK ? "CMYK" : "YCCK");
  }
}

TEST(JpegDecode, PlainCmykWithoutAdobeMarkerIsNotInverted) {
  // No ink at all (0, 0, 0, 0) is white; full black ink (0, 0, 0, 255) is black.
  test::JpegSpec spec;
  spec.width = 16;
  spec.height = 16;
  spec.components = 4;
  spec.in_space = JCS_CMYK;
  spec.file_space = JCS_CMYK;
  spec.adobe_marker = false;
  Bytes cmyk(16 * 16 * 4, 0);
  for (size_t i = 0; i < 16 * 8; ++i) cmyk[4 * i + 3] = 255;  // the top half black
  const DecodedImage image = decode_image(test::encode_jpeg(spec, cmyk));
  EXPECT_LT(image.pixels[0], 8);                               // top left: black
  EXPECT_GT(image.pixels[(15 * 16 + 15) * 3], 247);           // bottom right: white
}

TEST(DctScale, PicksTheLargestFactorThatStillCoversTheMinimum) {
  EXPECT_EQ(choose_dct_denominator(640, 480, 0, 0), 1);
  EXPECT_EQ(choose_dct_denominator(640, 480, 80, 60), 8);
  EXPECT_EQ(choose_dct_denominator(640, 480, 81, 60), 4);
  EXPECT_EQ(choose_dct_denominator(640, 480, 160, 121), 2);
  EXPECT_EQ(choose_dct_denominator(640, 480, 320, 240), 2);
  EXPECT_EQ(choose_dct_denominator(640, 480, 321, 10), 1);
  EXPECT_EQ(choose_dct_denominator(500, 375, 63, 47), 8);  // ceil(500/8) = 63, ceil(375/8) = 47
  EXPECT_EQ(dct_scaled_size(375, 8), 47);
}

// The mean of each denominator x denominator box (partial boxes at the edges).
Bytes box_downscale(const Bytes& rgb, int width, int height, int denominator) {
  const int w = dct_scaled_size(width, denominator), h = dct_scaled_size(height, denominator);
  Bytes out(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        int sum = 0, n = 0;
        for (int yy = y * denominator; yy < std::min(height, (y + 1) * denominator); ++yy)
          for (int xx = x * denominator; xx < std::min(width, (x + 1) * denominator); ++xx, ++n)
            sum += rgb[(static_cast<size_t>(yy) * width + xx) * 3 + c];
        out[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>((sum + n / 2) / n);
      }
  return out;
}

TEST(JpegDecode, DctScalingGivesTheScaledSizeAndABoxDownscalesPixels) {
  const int width = 200, height = 120;
  const Bytes jpeg = test::encode_rgb_jpeg(width, height);
  const DecodedImage full = decode_image(jpeg);
  for (int denominator : {2, 4, 8}) {
    DecodeOptions options;
    options.min_width = dct_scaled_size(width, denominator);
    options.min_height = dct_scaled_size(height, denominator) - 1;
    const DecodedImage scaled = decode_image(jpeg, options);
    ASSERT_EQ(scaled.width, dct_scaled_size(width, denominator));
    ASSERT_EQ(scaled.height, dct_scaled_size(height, denominator));
    const Difference d = difference(scaled.pixels, box_downscale(full.pixels, width, height, denominator));
    EXPECT_LT(d.mean, 2.0) << "1/" << denominator;
    EXPECT_LT(d.max, 24) << "1/" << denominator;
  }
}

TEST(JpegDecode, MinimumOverHalfTheSizeDecodesFullSize) {
  DecodeOptions options;
  options.min_width = 101;
  const DecodedImage image = decode_image(test::encode_rgb_jpeg(200, 120), options);
  EXPECT_EQ(image.width, 200);
  EXPECT_EQ(image.height, 120);
}

// PNG: each colour type decodes to exactly the RGB it stands for.
TEST(PngDecode, RgbAndInterlacedRgbAreExact) {
  const Bytes rgb = test::gradient_rgb(16, 12);
  for (bool interlaced : {false, true}) {
    test::PngSpec spec;
    spec.interlaced = interlaced;
    const DecodedImage image = decode_image(test::encode_png(spec, rgb));
    ASSERT_EQ(image.width, 16);
    ASSERT_EQ(image.height, 12);
    EXPECT_EQ(image.pixels, rgb) << (interlaced ? "interlaced" : "plain");
  }
}

TEST(PngDecode, RgbaDropsAlphaWithoutCompositing) {
  const Bytes rgb = test::gradient_rgb(16, 12);
  Bytes rgba;
  for (size_t i = 0; i < rgb.size() / 3; ++i) {
    rgba.insert(rgba.end(), rgb.begin() + 3 * i, rgb.begin() + 3 * i + 3);
    rgba.push_back(static_cast<uint8_t>(i % 2 ? 0 : 255));  // half the pixels fully transparent
  }
  test::PngSpec spec;
  spec.color_type = PNG_COLOR_TYPE_RGBA;
  EXPECT_EQ(decode_image(test::encode_png(spec, rgba)).pixels, rgb);
}

TEST(PngDecode, GreyAndGreyAlphaBecomeRgb) {
  const Bytes grey = grey_of(test::gradient_rgb(16, 12));
  test::PngSpec spec;
  spec.color_type = PNG_COLOR_TYPE_GRAY;
  EXPECT_EQ(decode_image(test::encode_png(spec, grey)).pixels, rgb_of_grey(grey));
  Bytes grey_alpha;
  for (uint8_t g : grey) grey_alpha.insert(grey_alpha.end(), {g, uint8_t{7}});
  spec.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
  EXPECT_EQ(decode_image(test::encode_png(spec, grey_alpha)).pixels, rgb_of_grey(grey));
}

TEST(PngDecode, OneBitGreyExpandsToBlackAndWhite) {
  test::PngSpec spec;
  spec.width = 8;
  spec.height = 2;
  spec.color_type = PNG_COLOR_TYPE_GRAY;
  spec.bit_depth = 1;
  const Bytes rows = {0xF0, 0x0F};  // row 0: 4 white then 4 black; row 1 the reverse
  const DecodedImage image = decode_image(test::encode_png(spec, rows));
  EXPECT_EQ(image.pixels[0], 255);
  EXPECT_EQ(image.pixels[4 * 3], 0);
  EXPECT_EQ(image.pixels[8 * 3], 0);
  EXPECT_EQ(image.pixels[(8 + 7) * 3 + 2], 255);
}

TEST(PngDecode, PaletteWithTransparencyGivesThePaletteColours) {
  test::PngSpec spec;
  spec.width = 4;
  spec.height = 1;
  spec.color_type = PNG_COLOR_TYPE_PALETTE;
  spec.palette = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
  spec.trns = {0, 128};  // entry 0 transparent, entry 1 half: their colours stay
  const DecodedImage image = decode_image(test::encode_png(spec, Bytes{3, 2, 1, 0}));
  EXPECT_EQ(image.pixels, (Bytes{10, 20, 30, 0, 0, 255, 0, 255, 0, 255, 0, 0}));
}

TEST(PngDecode, DctMinimumIsIgnoredForPng) {
  DecodeOptions options;
  options.min_width = 2;
  options.min_height = 2;
  const DecodedImage image = decode_image(test::encode_png(test::PngSpec{}, test::gradient_rgb(16, 12)), options);
  EXPECT_EQ(image.width, 16);
}

}  // namespace
}  // namespace sb

// Crop-only decoding (DecodeOptions::crop) against the same region of a whole decode, and header-only
// size reads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "data/image/dct_scale.h"
#include "data/image/image_crop.h"
#include "data/image/image_decoder.h"
#include "image_test_files.h"

namespace sb {
namespace {

using test::Bytes;

// Pixels of `box` cut from a whole image.
Bytes region(const DecodedImage& image, const CropBox& box) {
  Bytes out;
  for (int y = box.y; y < box.y + box.height; ++y) {
    const auto* row = image.pixels.data() + (static_cast<size_t>(y) * image.width + box.x) * 3;
    out.insert(out.end(), row, row + static_cast<size_t>(box.width) * 3);
  }
  return out;
}

int max_difference(const Bytes& a, const Bytes& b) {
  EXPECT_EQ(a.size(), b.size());
  int worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(int{a[i]} - int{b[i]}));
  return worst;
}

TEST(ImageCrop, ScaledBoxCoversTheBox) {
  const CropBox box = scaled_crop_box(CropBox{13, 7, 50, 21}, 8);
  EXPECT_EQ(box.x, 1);       // floor(13 / 8)
  EXPECT_EQ(box.y, 0);       // floor(7 / 8)
  EXPECT_EQ(box.width, 7);   // ceil(63 / 8) - 1
  EXPECT_EQ(box.height, 4);  // ceil(28 / 8) - 0
}

// A cropped decode gives the same pixels as the same box of a whole decode at the same scale: the decoded
// columns and the skipped rows keep their neighbours' context for the upsampling.
TEST(ImageCrop, JpegCropMatchesTheWholeDecodesRegion) {
  const int width = 203, height = 157;
  for (bool progressive : {false, true}) {
    const Bytes jpeg = test::encode_rgb_jpeg(width, height, progressive);
    for (const CropBox& box : {CropBox{0, 0, 203, 157}, CropBox{37, 21, 100, 80}, CropBox{16, 32, 64, 48},
                               CropBox{150, 100, 53, 57}, CropBox{1, 1, 1, 1}}) {
      for (int asked : {1, 2, 4, 8}) {
        DecodeOptions options;
        options.crop = box;
        options.min_width = asked == 1 ? 0 : dct_scaled_size(box.width, asked);
        const DecodedImage cropped = decode_image(jpeg, options);
        // A box of a few pixels scales further than asked: 1/8 of it still covers the minimum.
        const int denominator = choose_dct_denominator(box.width, box.height, options.min_width, 0);
        DecodeOptions whole_options;
        whole_options.min_width = denominator == 1 ? 0 : dct_scaled_size(width, denominator);
        const DecodedImage whole = decode_image(jpeg, whole_options);
        ASSERT_EQ(whole.scale_denominator, denominator);
        const std::string what = std::string(progressive ? "progressive" : "baseline") + " box at (" + std::to_string(box.x) +
                                 ", " + std::to_string(box.y) + ") 1/" + std::to_string(denominator);
        ASSERT_EQ(cropped.scale_denominator, denominator) << what;
        const CropBox scaled = scaled_crop_box(box, denominator);
        ASSERT_EQ(cropped.width, scaled.width) << what;
        ASSERT_EQ(cropped.height, scaled.height) << what;
        EXPECT_EQ(max_difference(cropped.pixels, region(whole, scaled)), 0) << what;
      }
    }
  }
}

TEST(ImageCrop, AWideJpegCropHoldsTheExactCropWhereItsCornerSays) {
  const Bytes jpeg = test::encode_rgb_jpeg(203, 157);
  for (const CropBox& box : {CropBox{37, 21, 100, 80}, CropBox{150, 100, 53, 57}, CropBox{0, 0, 203, 157}}) {
    for (int asked : {1, 2, 4}) {
      DecodeOptions options;
      options.crop = box;
      options.min_width = asked == 1 ? 0 : dct_scaled_size(box.width, asked);
      const DecodedImage exact = decode_image(jpeg, options);
      options.exact_crop = false;
      DecodedImage wide;
      decode_image_into(jpeg, options, wide);
      ASSERT_EQ(wide.scale_denominator, exact.scale_denominator);
      ASSERT_EQ(wide.y, exact.y);
      ASSERT_EQ(wide.height, exact.height);
      ASSERT_LE(wide.x, exact.x);
      ASSERT_GE(wide.x + wide.width, exact.x + exact.width);
      const CropBox inside{exact.x - wide.x, 0, exact.width, exact.height};
      EXPECT_EQ(max_difference(exact.pixels, region(wide, inside)), 0) << box.x << " 1/" << asked;
    }
  }
}

TEST(ImageCrop, CmykAndGreyJpegCrops) {
  test::JpegSpec spec;
  spec.width = 64;
  spec.height = 40;
  spec.components = 4;
  spec.in_space = JCS_CMYK;
  Bytes cmyk(64 * 40 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>(i * 7 / 5);
  const Bytes cmyk_jpeg = test::encode_jpeg(spec, cmyk);
  spec.components = 1;
  spec.in_space = JCS_GRAYSCALE;
  const Bytes grey_jpeg = test::encode_jpeg(spec, Bytes(cmyk.begin(), cmyk.begin() + 64 * 40));
  const CropBox box{19, 9, 30, 20};
  for (const Bytes* jpeg : {&cmyk_jpeg, &grey_jpeg}) {
    DecodeOptions options;
    options.crop = box;
    EXPECT_EQ(max_difference(decode_image(*jpeg, options).pixels, region(decode_image(*jpeg), box)), 0);
  }
}

TEST(ImageCrop, JpegCutShortBelowTheBoxStillDecodesTheBox) {
  const Bytes jpeg = test::encode_rgb_jpeg(64, 256);
  const Bytes cut(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(jpeg.size() * 3 / 4));
  DecodeOptions options;
  options.crop = CropBox{8, 8, 32, 32};
  EXPECT_EQ(decode_image(cut, options).pixels, decode_image(jpeg, options).pixels);
  EXPECT_THROW(decode_image(cut), ImageDecodeError);
}

TEST(ImageCrop, PngCropIsExact) {
  const Bytes rgb = test::gradient_rgb(16, 12);
  const Bytes png = test::encode_png(test::PngSpec{}, rgb);
  DecodeOptions options;
  options.crop = CropBox{3, 2, 9, 7};
  const DecodedImage image = decode_image(png, options);
  ASSERT_EQ(image.width, 9);
  ASSERT_EQ(image.height, 7);
  DecodedImage whole;
  whole.width = 16;
  whole.height = 12;
  whole.pixels = rgb;
  EXPECT_EQ(image.pixels, region(whole, options.crop));
}

TEST(ImageCrop, BoxOutsideTheImageIsRefused) {
  DecodeOptions options;
  options.crop = CropBox{10, 0, 60, 8};
  for (const Bytes& file : {test::encode_rgb_jpeg(64, 48), test::encode_png(test::PngSpec{64, 48, PNG_COLOR_TYPE_RGB, 8, false, {}, {}},
                                                                             test::gradient_rgb(64, 48))}) {
    try {
      decode_image(file, options);
      ADD_FAILURE() << "no error";
    } catch (const ImageDecodeError& e) {
      EXPECT_STREQ(e.what(), "crop box 60 x 8 at (10, 0) lies outside the 64 x 48 image");
    }
  }
}

TEST(ImageCrop, SizeFromTheHeaderAlone) {
  const ImageSize jpeg = read_image_size(test::encode_rgb_jpeg(37, 21));
  EXPECT_EQ(jpeg.width, 37);
  EXPECT_EQ(jpeg.height, 21);
  const ImageSize png = read_image_size(test::png_header_only(100000, 3));
  EXPECT_EQ(png.width, 100000);
  EXPECT_EQ(png.height, 3);
  EXPECT_THROW(read_image_size(Bytes{'h', 'i'}), ImageDecodeError);
}

}  // namespace
}  // namespace sb

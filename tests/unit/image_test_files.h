// Small JPEG and PNG files written in memory with libjpeg and libpng, for the decoder tests: the
// pixels that went in are known, so the decoded ones can be checked against them.
#pragma once
// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on
#include <png.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace sb::test {

using Bytes = std::vector<uint8_t>;

// A smooth RGB test pattern (JPEG keeps it to within a few levels): red grows with x, green with y.
inline Bytes gradient_rgb(int width, int height) {
  Bytes p(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint8_t* px = &p[(static_cast<size_t>(y) * width + x) * 3];
      px[0] = static_cast<uint8_t>(x * 255 / (width > 1 ? width - 1 : 1));
      px[1] = static_cast<uint8_t>(y * 255 / (height > 1 ? height - 1 : 1));
      px[2] = static_cast<uint8_t>(128 + (x + y) % 32);
    }
  return p;
}

struct JpegSpec {
  int width = 64, height = 48;
  int components = 3;                 // of `pixels`
  J_COLOR_SPACE in_space = JCS_RGB;   // JCS_RGB, JCS_GRAYSCALE or JCS_CMYK
  J_COLOR_SPACE file_space = JCS_UNKNOWN;  // jpeg_set_colorspace's argument; UNKNOWN keeps the default
  bool adobe_marker = true;           // for CMYK/YCCK: false writes no Adobe marker (plain CMYK)
  bool progressive = false;
  int quality = 95;
  bool full_chroma = false;           // 4:4:4 (chroma at full resolution) instead of libjpeg's 4:2:0
  int restart_interval = 0;           // MCUs between restart markers; 0 writes none
  bool scan_per_component = false;    // sequential (baseline), each component in a scan of its own
};

[[noreturn]] inline void jpeg_test_error(j_common_ptr cinfo) {
  char message[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, message);
  std::fprintf(stderr, "test JPEG writer: %s\n", message);
  std::abort();
}

inline Bytes encode_jpeg(const JpegSpec& spec, const Bytes& pixels) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  err.error_exit = jpeg_test_error;
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = static_cast<JDIMENSION>(spec.width);
  cinfo.image_height = static_cast<JDIMENSION>(spec.height);
  cinfo.input_components = spec.components;
  cinfo.in_color_space = spec.in_space;
  jpeg_set_defaults(&cinfo);
  if (spec.file_space != JCS_UNKNOWN) jpeg_set_colorspace(&cinfo, spec.file_space);
  if (!spec.adobe_marker) cinfo.write_Adobe_marker = FALSE;
  jpeg_set_quality(&cinfo, spec.quality, TRUE);
  if (spec.full_chroma) {
    cinfo.comp_info[0].h_samp_factor = 1;
    cinfo.comp_info[0].v_samp_factor = 1;
  }
  cinfo.restart_interval = static_cast<unsigned>(spec.restart_interval);
  if (spec.progressive) jpeg_simple_progression(&cinfo);
  jpeg_scan_info scans[4];
  if (spec.scan_per_component) {
    for (int c = 0; c < cinfo.num_components; ++c) scans[c] = jpeg_scan_info{1, {c}, 0, 63, 0, 0};
    cinfo.scan_info = scans;
    cinfo.num_scans = cinfo.num_components;
  }
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(spec.width) * spec.components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes bytes(out, out + size);
  std::free(out);
  return bytes;
}

inline Bytes encode_rgb_jpeg(int width, int height, bool progressive = false) {
  JpegSpec spec;
  spec.width = width;
  spec.height = height;
  spec.progressive = progressive;
  return encode_jpeg(spec, gradient_rgb(width, height));
}

struct PngSpec {
  int width = 16, height = 12;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<png_color> palette;  // for PNG_COLOR_TYPE_PALETTE
  std::vector<png_byte> trns;      // palette transparency
};

inline Bytes encode_png(const PngSpec& spec, const Bytes& rows_data) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) throw std::runtime_error("test PNG writer failed");
  Bytes out;
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, size_t n) {
        auto* o = static_cast<Bytes*>(png_get_io_ptr(p));
        o->insert(o->end(), data, data + n);
      },
      nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(spec.width), static_cast<png_uint_32>(spec.height), spec.bit_depth,
               spec.color_type, spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!spec.palette.empty()) png_set_PLTE(png, info, spec.palette.data(), static_cast<int>(spec.palette.size()));
  if (!spec.trns.empty()) png_set_tRNS(png, info, spec.trns.data(), static_cast<int>(spec.trns.size()), nullptr);
  png_write_info(png, info);
  const size_t stride = rows_data.size() / static_cast<size_t>(spec.height);
  std::vector<png_bytep> rows(static_cast<size_t>(spec.height));
  for (int y = 0; y < spec.height; ++y) rows[static_cast<size_t>(y)] = const_cast<png_bytep>(rows_data.data() + y * stride);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

// A PNG signature, an IHDR chunk claiming width x height (8-bit RGB) and an empty IDAT, with valid CRCs:
// enough for the header checks, which come before the image data is read.
inline Bytes png_header_only(uint32_t width, uint32_t height, uint8_t bit_depth = 8, uint8_t color_type = 2) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (uint32_t v : {width, height})
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  for (uint8_t b : {bit_depth, color_type, uint8_t{0}, uint8_t{0}, uint8_t{0}}) out.push_back(b);
  const uint32_t crc = static_cast<uint32_t>(crc32(0, out.data() + 12, 17));
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(crc >> s));
  const uint8_t idat[] = {0, 0, 0, 0, 'I', 'D', 'A', 'T'};
  out.insert(out.end(), idat, idat + 8);
  const uint32_t idat_crc = static_cast<uint32_t>(crc32(0, idat + 4, 4));
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(idat_crc >> s));
  return out;
}

// Sets the frame size in a JPEG's SOF0/SOF2 marker (for the pixel-limit tests).
inline void set_jpeg_size(Bytes& jpeg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return;
    }
  }
  throw std::runtime_error("no SOF marker");
}

}  // namespace sb::test

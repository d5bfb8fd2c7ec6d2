#include "data/image/jpeg_decoder.h"

// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <string>

#include "data/image/dct_scale.h"
#include "data/image/image_crop.h"
#include "data/image/pixel_limit.h"

namespace sb {
namespace {

// libjpeg reports errors through error_exit, which must not return: it jumps back to decode_frame's
// setjmp with libjpeg's message kept here. C++ exceptions must not cross libjpeg's C frames.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int code;
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  err->code = cinfo->err->msg_code;
  std::longjmp(err->jump, 1);
}

// Warnings are tolerated (e.g. extraneous bytes between markers, common in real datasets), except a
// file cut short: libjpeg would pad it with grey rows and carry on.
void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) on_error(cinfo);
  cinfo->err->num_warnings++;
}

// The libjpeg state, destroyed on every path (jpeg_destroy_decompress is safe on a zeroed struct).
struct Decompressor {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  Decompressor() {
    std::memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    err.message[0] = '\0';
    err.code = 0;
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
};

// Adobe's CMYK JPEGs store the inks inverted (255 = no ink); others store them as they are.
void cmyk_row_to_rgb(const uint8_t* cmyk, uint8_t* rgb, int width, bool inverted) {
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int k = inverted ? cmyk[3] : 255 - cmyk[3];
    for (int c = 0; c < 3; ++c) {
      const int ink = inverted ? cmyk[c] : 255 - cmyk[c];
      rgb[c] = static_cast<uint8_t>((ink * k + 127) / 255);
    }
  }
}

// The helpers below run inside decode_frame's setjmp: like it, they hold no object with a destructor.

// Asks libjpeg for RGB, or for CMYK (libjpeg converts YCCK to CMYK; CMYK to RGB is ours); true for CMYK.
bool ask_for_rgb_or_cmyk(jpeg_decompress_struct& cinfo) {
  switch (cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB: cinfo.out_color_space = JCS_RGB; return false;
    case JCS_CMYK:
    case JCS_YCCK: cinfo.out_color_space = JCS_CMYK; return true;
    default:
      throw ImageDecodeError("JPEG has an unsupported colour space (" + std::to_string(cinfo.num_components) +
                             " components, neither grey, YCbCr, RGB, CMYK nor YCCK)");
  }
}

// Where the box's pixels start in the decoded rows: the first decoded column and the bytes before the box.
struct DecodedColumns {
  JDIMENSION xoffset;
  size_t skip_bytes;
};

// Decode only the iMCU columns that cover the box: libjpeg widens [xoffset, xoffset + width) to them.
// One more pixel on each side (where the image has one) keeps the chroma upsampling's neighbours, so
// that the box's edge columns match a whole decode's even when the box starts on an iMCU boundary.
// Then skips to the box's first row.
DecodedColumns narrow_to_box(jpeg_decompress_struct& cinfo, const CropBox& box, int components) {
  const int first = box.x > 0 ? box.x - 1 : 0;
  const int end = std::min(box.x + box.width + 1, static_cast<int>(cinfo.output_width));
  JDIMENSION xoffset = static_cast<JDIMENSION>(first), decoded_width = static_cast<JDIMENSION>(end - first);
  if (end - first < static_cast<int>(cinfo.output_width)) jpeg_crop_scanline(&cinfo, &xoffset, &decoded_width);
  const size_t skip_bytes = static_cast<size_t>(box.x - static_cast<int>(xoffset)) * components;
  if (box.y > 0 && jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(box.y)) != static_cast<JDIMENSION>(box.y))
    throw ImageDecodeError("JPEG decoder could not skip to row " + std::to_string(box.y));
  return DecodedColumns{xoffset, skip_bytes};
}

// Reads the box's rows into out (sized here): straight into it where they need no cropping or colour
// conversion of ours, else through a row buffer. Without an exact crop the decoded columns are the output.
void read_box_rows(jpeg_decompress_struct& cinfo, const CropBox& box, const DecodedColumns& columns, bool cmyk, bool inverted,
                   bool exact_crop, DecodedImage& out) {
  const bool wide = !exact_crop && !cmyk;
  out.width = wide ? static_cast<int>(cinfo.output_width) : box.width;
  out.height = box.height;
  out.x = wide ? static_cast<int>(columns.xoffset) : box.x;
  out.y = box.y;
  out.pixels.resize(static_cast<size_t>(out.width) * static_cast<size_t>(box.height) * 3);
  const size_t stride = static_cast<size_t>(out.width) * 3;
  const bool direct = wide || (!cmyk && columns.skip_bytes == 0 && static_cast<int>(cinfo.output_width) == box.width);
  JSAMPARRAY buffer = direct ? nullptr
                             : (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                                          cinfo.output_width * static_cast<JDIMENSION>(cinfo.output_components), 1);
  const JDIMENSION end_row = static_cast<JDIMENSION>(box.y + box.height);
  while (cinfo.output_scanline < end_row) {
    uint8_t* row = out.pixels.data() + static_cast<size_t>(cinfo.output_scanline - static_cast<JDIMENSION>(box.y)) * stride;
    JSAMPROW target = direct ? row : buffer[0];
    if (jpeg_read_scanlines(&cinfo, &target, 1) != 1) throw ImageDecodeError("JPEG decoder returned no row");
    if (cmyk) cmyk_row_to_rgb(buffer[0] + columns.skip_bytes, row, box.width, inverted);
    else if (!direct) std::memcpy(row, buffer[0] + columns.skip_bytes, stride);
  }
}

// Everything that calls libjpeg. Returns false after a libjpeg error (the message is in d.err). No
// object with a destructor lives in this frame, so the longjmp skips none; ImageDecodeError and
// std::bad_alloc thrown from here leave through C++ frames only.
bool decode_frame(Decompressor& d, std::span<const uint8_t> bytes, const DecodeOptions& options, DecodedImage& out) {
  jpeg_decompress_struct& cinfo = d.cinfo;
  if (setjmp(d.err.jump)) return false;
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) throw ImageDecodeError("JPEG holds no image (tables only)");
  check_pixel_limit("JPEG", cinfo.image_width, cinfo.image_height, options.max_pixels);
  const int image_width = static_cast<int>(cinfo.image_width), image_height = static_cast<int>(cinfo.image_height);
  const bool cropped = !options.crop.empty();
  if (cropped) check_crop_box(options.crop, image_width, image_height);

  const bool cmyk = ask_for_rgb_or_cmyk(cinfo);
  const bool inverted = cmyk && cinfo.saw_Adobe_marker;
  const int denominator = cropped ? choose_dct_denominator(options.crop.width, options.crop.height, options.min_width, options.min_height)
                                  : choose_dct_denominator(image_width, image_height, options.min_width, options.min_height);
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(denominator);

  if (!jpeg_start_decompress(&cinfo)) throw ImageDecodeError("JPEG decoder suspended on in-memory input");
  const int components = cmyk ? 4 : 3;
  if (cinfo.output_components != components)
    throw ImageDecodeError("JPEG decoder gave " + std::to_string(cinfo.output_components) + " components per pixel");
  const CropBox box = cropped ? scaled_crop_box(options.crop, denominator)
                              : CropBox{0, 0, static_cast<int>(cinfo.output_width), static_cast<int>(cinfo.output_height)};
  const DecodedColumns columns = narrow_to_box(cinfo, box, components);
  out.scale_denominator = denominator;
  read_box_rows(cinfo, box, columns, cmyk, inverted, options.exact_crop, out);
  if (cinfo.output_scanline < cinfo.output_height) jpeg_abort_decompress(&cinfo);  // the rows below the box: not needed
  else jpeg_finish_decompress(&cinfo);  // reads up to EOI: a file cut short after its last row still fails
  return true;
}

bool read_size_frame(Decompressor& d, std::span<const uint8_t> bytes, ImageSize& size) {
  if (setjmp(d.err.jump)) return false;
  jpeg_create_decompress(&d.cinfo);
  jpeg_mem_src(&d.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  if (jpeg_read_header(&d.cinfo, TRUE) != JPEG_HEADER_OK) throw ImageDecodeError("JPEG holds no image (tables only)");
  size.width = static_cast<int>(d.cinfo.image_width);
  size.height = static_cast<int>(d.cinfo.image_height);
  return true;
}

[[noreturn]] void throw_libjpeg_error(const Decompressor& d) {
  std::string message = std::string("invalid JPEG: ") + d.err.message;
  if (d.err.code == JWRN_JPEG_EOF) message += " (the file is cut short)";
  throw ImageDecodeError(message);
}

}  // namespace

DecodedImage decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  DecodedImage out;
  decode_jpeg_into(bytes, options, out);
  return out;
}

void decode_jpeg_into(std::span<const uint8_t> bytes, const DecodeOptions& options, DecodedImage& out) {
  Decompressor d;
  if (!decode_frame(d, bytes, options, out)) throw_libjpeg_error(d);
}

ImageSize read_jpeg_size(std::span<const uint8_t> bytes) {
  Decompressor d;
  ImageSize size;
  if (!read_size_frame(d, bytes, size)) throw_libjpeg_error(d);
  return size;
}

}  // namespace sb

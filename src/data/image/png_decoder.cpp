#include "data/image/png_decoder.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "data/image/image_crop.h"
#include "data/image/pixel_limit.h"

namespace sb {
namespace {

// libpng reports errors through the error function, which must not return: it keeps the message and
// jumps back to decode_frame's setjmp (png_jmpbuf). C++ exceptions must not cross libpng's C frames.
struct ReadState {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  char message[256] = {};
};

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<ReadState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // e.g. a bad ancillary chunk, which libpng skips

void read_bytes(png_structp png, png_bytep data, size_t length) {
  auto* state = static_cast<ReadState*>(png_get_io_ptr(png));
  if (length > state->bytes.size() - state->offset) png_error(png, "premature end of PNG data (the file is cut short)");
  std::memcpy(data, state->bytes.data() + state->offset, length);
  state->offset += length;
}

// The libpng state, destroyed on every path.
struct Reader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~Reader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

// Everything that calls libpng after the structs exist. Returns false after a libpng error (the message
// is in state). No object with a destructor is created in this frame, so the longjmp skips none;
// `rows` lives in the caller.
bool decode_frame(Reader& r, ReadState& state, const DecodeOptions& options, DecodedImage& out,
                  std::vector<png_bytep>& rows) {
  png_structp png = r.png;
  png_infop info = r.info;
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, &state, read_bytes);
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // the pixel limit below decides, with its own message
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, nullptr, nullptr);
  check_pixel_limit("PNG", width, height, options.max_pixels);
  if (!options.crop.empty()) check_crop_box(options.crop, static_cast<int>(width), static_cast<int>(height));
  if (bit_depth == 16) {
    throw ImageDecodeError("PNG is 16 bits per channel (" + std::to_string(width) + " x " + std::to_string(height) +
                           "); only 8-bit PNGs are decoded: convert it to 8 bits (e.g. PIL's convert('RGB'))");
  }
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  // Expanding a palette also turns tRNS into alpha: strip it as well.
  if ((color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(width) * 3 || png_get_channels(png, info) != 3)
    throw ImageDecodeError("PNG transforms did not give 8-bit RGB rows");

  out.width = static_cast<int>(width);
  out.height = static_cast<int>(height);
  out.pixels.resize(static_cast<size_t>(width) * height * 3);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = out.pixels.data() + static_cast<size_t>(y) * width * 3;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);  // checks the chunks after the image data (their CRCs) up to IEND
  return true;
}

bool read_size_frame(Reader& r, ReadState& state, ImageSize& size) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_set_read_fn(r.png, &state, read_bytes);
  png_set_user_limits(r.png, 0x7fffffff, 0x7fffffff);
  png_read_info(r.png, r.info);
  size.width = static_cast<int>(png_get_image_width(r.png, r.info));
  size.height = static_cast<int>(png_get_image_height(r.png, r.info));
  return true;
}

// The libpng state for `state`; throws when libpng can't allocate it.
void create_reader(Reader& r, ReadState& state) {
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning);
  if (r.png == nullptr) throw ImageDecodeError("libpng could not create its read state (out of memory?)");
  r.info = png_create_info_struct(r.png);
  if (r.info == nullptr) throw ImageDecodeError("libpng could not create its info state (out of memory?)");
}

}  // namespace

DecodedImage decode_png(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  ReadState state;
  state.bytes = bytes;
  Reader r;
  create_reader(r, state);
  DecodedImage out;
  std::vector<png_bytep> rows;
  if (!decode_frame(r, state, options, out, rows)) throw ImageDecodeError(std::string("invalid PNG: ") + state.message);
  if (!options.crop.empty()) crop_decoded(out, options.crop);
  return out;
}

ImageSize read_png_size(std::span<const uint8_t> bytes) {
  ReadState state;
  state.bytes = bytes;
  Reader r;
  create_reader(r, state);
  ImageSize size;
  if (!read_size_frame(r, state, size)) throw ImageDecodeError(std::string("invalid PNG: ") + state.message);
  return size;
}

}  // namespace sb

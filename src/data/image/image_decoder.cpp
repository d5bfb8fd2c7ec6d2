#include "data/image/image_decoder.h"

#include "data/image/image_format.h"
#include "data/image/jpeg_decoder.h"
#include "data/image/png_decoder.h"

namespace sb {

namespace {

[[noreturn]] void refuse_unknown(std::span<const uint8_t> bytes) {
  throw ImageDecodeError("not a JPEG or PNG image: the content is " + describe_unknown_bytes(bytes) +
                         " (formats are told by content, not by the file's extension; only JPEG and PNG are decoded)");
}

}  // namespace

DecodedImage decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::Jpeg: return decode_jpeg(bytes, options);
    case ImageFormat::Png: return decode_png(bytes, options);
    case ImageFormat::Unknown: break;
  }
  refuse_unknown(bytes);
}

void decode_image_into(std::span<const uint8_t> bytes, const DecodeOptions& options, DecodedImage& out) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::Jpeg: return decode_jpeg_into(bytes, options, out);
    case ImageFormat::Png: out = decode_png(bytes, options); return;
    case ImageFormat::Unknown: break;
  }
  refuse_unknown(bytes);
}

ImageSize read_image_size(std::span<const uint8_t> bytes) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::Jpeg: return read_jpeg_size(bytes);
    case ImageFormat::Png: return read_png_size(bytes);
    case ImageFormat::Unknown: break;
  }
  refuse_unknown(bytes);
}

}  // namespace sb

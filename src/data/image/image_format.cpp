#include "data/image/image_format.h"

#include <cstdio>
#include <cstring>

namespace sb {
namespace {

bool starts_with(std::span<const uint8_t> bytes, const char* magic, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

bool looks_like_text(std::span<const uint8_t> bytes) {
  const size_t n = bytes.size() < 512 ? bytes.size() : 512;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = bytes[i];
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
    if (c == 0x7F) return false;
  }
  return true;
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\xFF\xD8\xFF", 3)) return ImageFormat::Jpeg;
  if (starts_with(bytes, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::Png;
  return ImageFormat::Unknown;
}

std::string describe_unknown_bytes(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return "empty (0 bytes)";
  if (starts_with(bytes, "GIF8", 4)) return "a GIF image";
  if (starts_with(bytes, "BM", 2)) return "a BMP image";
  if (starts_with(bytes, "II*\0", 4) || starts_with(bytes, "MM\0*", 4)) return "a TIFF image";
  if (bytes.size() >= 12 && starts_with(bytes, "RIFF", 4) && std::memcmp(bytes.data() + 8, "WEBP", 4) == 0)
    return "a WebP image";
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6') return "a PNM (PPM/PGM/PBM) image";
  if (looks_like_text(bytes)) return "text";
  std::string out = "unrecognised bytes";
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, " %02X", bytes[i]);
    out += hex;
  }
  return out;
}

const char* image_format_extension(ImageFormat format) {
  switch (format) {
    case ImageFormat::Jpeg: return "jpg";
    case ImageFormat::Png: return "png";
    case ImageFormat::Unknown: break;
  }
  return "";
}

}  // namespace sb

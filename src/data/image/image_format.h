// Which image format a file holds, told from its first bytes (never from its name).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace sb {

enum class ImageFormat { Jpeg, Png, Unknown };

// JPEG: the SOI marker FF D8 FF. PNG: its 8-byte signature.
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

// For an error message about bytes that are neither JPEG nor PNG: what they look like ("empty (0 bytes)",
// "a GIF image", "text", "unrecognised bytes 00 01 02 03").
std::string describe_unknown_bytes(std::span<const uint8_t> bytes);

// The file-name extension of a format's member in a shard: "jpg" or "png".
const char* image_format_extension(ImageFormat format);

}  // namespace sb

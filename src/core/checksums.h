// zlib's checksums as the on-disk caches use them (their byte format, core/byte_format.h, and their file
// names): a CRC-32 of a buffer of any size, and a file name that follows a text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sb {

// The CRC-32 (zlib's crc32) of `size` bytes; zlib takes lengths as unsigned int, so large buffers go in pieces.
uint32_t crc32_of(const void* data, size_t size);

// 16 lower-case hex digits naming a file after `text`: its CRC-32, then its Adler-32.
std::string name_digest(std::string_view text);

}  // namespace sb

#include "core/checksums.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace sb {

uint32_t crc32_of(const void* data, size_t size) {
  const auto* p = static_cast<const Bytef*>(data);
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t kPiece = size_t{1} << 30;
  for (size_t done = 0; done < size; done += kPiece)
    crc = crc32(crc, p + done, static_cast<uInt>(std::min(kPiece, size - done)));
  return static_cast<uint32_t>(crc);
}

std::string name_digest(std::string_view text) {
  const auto* p = reinterpret_cast<const Bytef*>(text.data());
  const auto adler = static_cast<uint32_t>(adler32(adler32(0L, Z_NULL, 0), p, static_cast<uInt>(text.size())));
  char digits[17];
  std::snprintf(digits, sizeof digits, "%08x%08x", crc32_of(text.data(), text.size()), adler);
  return digits;
}

}  // namespace sb

#include "data/image/tar_header.h"

#include <cstdio>
#include <cstring>

namespace sb {
namespace {

// Field offsets and lengths of the ustar header.
constexpr size_t kNameAt = 0, kModeAt = 100, kUidAt = 108, kGidAt = 116, kSizeAt = 124, kSizeLen = 12;
constexpr size_t kMtimeAt = 136, kChecksumAt = 148, kChecksumLen = 8, kTypeAt = 156;
constexpr size_t kMagicAt = 257, kVersionAt = 263, kPrefixAt = 345, kPrefixLen = 155;

std::string field_string(const uint8_t* block, size_t at, size_t len) {
  const char* p = reinterpret_cast<const char*>(block + at);
  return std::string(p, strnlen(p, len));
}

// An octal field (spaces or NULs around the digits), or GNU's base-256 (the top bit of the first byte
// set) for values that do not fit. False when it is neither.
bool parse_number(const uint8_t* field, size_t len, uint64_t& value) {
  value = 0;
  if (field[0] & 0x80) {
    if (field[0] != 0x80) return false;  // negative, or beyond 64 bits
    for (size_t i = 1; i < len; ++i) {
      if (value >> 56) return false;
      value = (value << 8) | field[i];
    }
    return true;
  }
  size_t i = 0;
  while (i < len && field[i] == ' ') ++i;
  bool digits = false;
  for (; i < len && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (value >> 60) return false;
    value = value * 8 + static_cast<uint64_t>(field[i] - '0');
    digits = true;
  }
  for (; i < len; ++i)
    if (field[i] != ' ' && field[i] != '\0') return false;
  return digits;
}

// The sum of the header's bytes with the checksum field counted as spaces.
uint64_t header_checksum(const uint8_t* block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i) sum += (i >= kChecksumAt && i < kChecksumAt + kChecksumLen) ? ' ' : block[i];
  return sum;
}

void put_octal(uint8_t* block, size_t at, size_t len, uint64_t value) {
  // len-1 digits, zero-padded, then a NUL
  char text[32];
  std::snprintf(text, sizeof text, "%0*llo", static_cast<int>(len - 1), static_cast<unsigned long long>(value));
  std::memcpy(block + at, text, len - 1);
  block[at + len - 1] = '\0';
}

}  // namespace

bool tar_block_is_zero(const uint8_t* block) {
  for (size_t i = 0; i < kTarBlock; ++i)
    if (block[i] != 0) return false;
  return true;
}

std::string parse_tar_header(const uint8_t* block, TarHeader& header) {
  uint64_t stored = 0;
  if (!parse_number(block + kChecksumAt, kChecksumLen, stored)) return "a header block with no valid checksum field (not a tar file?)";
  if (stored != header_checksum(block)) return "a header block whose checksum does not match (not a tar file, or damaged)";
  if (!parse_number(block + kSizeAt, kSizeLen, header.size)) return "a header whose size field is not a number";
  header.type = static_cast<char>(block[kTypeAt]);
  header.name = field_string(block, kNameAt, kTarNameField);
  // POSIX ustar only: GNU's magic ("ustar  ") keeps other fields where the prefix would be.
  if (std::memcmp(block + kMagicAt, "ustar\0", 6) == 0) {
    const std::string prefix = field_string(block, kPrefixAt, kPrefixLen);
    if (!prefix.empty()) header.name = prefix + "/" + header.name;
  }
  return "";
}

void format_tar_header(uint8_t* block, const std::string& name, uint64_t size, char type) {
  std::memset(block, 0, kTarBlock);
  std::memcpy(block + kNameAt, name.data(), name.size() < kTarNameField ? name.size() : kTarNameField);
  put_octal(block, kModeAt, 8, 0644);
  put_octal(block, kUidAt, 8, 0);
  put_octal(block, kGidAt, 8, 0);
  put_octal(block, kSizeAt, kSizeLen, size);
  put_octal(block, kMtimeAt, 12, 0);  // no time: the same input packs to the same bytes
  block[kTypeAt] = static_cast<uint8_t>(type);
  std::memcpy(block + kMagicAt, "ustar\0", 6);
  std::memcpy(block + kVersionAt, "00", 2);
  // The checksum: six octal digits, a NUL and a space.
  char text[8];
  std::snprintf(text, sizeof text, "%06llo", static_cast<unsigned long long>(header_checksum(block)));
  std::memcpy(block + kChecksumAt, text, 6);
  block[kChecksumAt + 6] = '\0';
  block[kChecksumAt + 7] = ' ';
}

}  // namespace sb

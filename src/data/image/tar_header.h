// The 512-byte header block of a POSIX ustar tar file (also GNU's and pax's extensions of it), as the
// tar reader and writer use it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sb {

inline constexpr size_t kTarBlock = 512;
inline constexpr size_t kTarNameField = 100;  // bytes of the name field (the ustar prefix adds 155)

// Member types the reader acts on; others (links, devices) are skipped.
inline constexpr char kTarRegular = '0';
inline constexpr char kTarRegularOld = '\0';
inline constexpr char kTarContiguous = '7';
inline constexpr char kTarDirectory = '5';
inline constexpr char kTarGnuLongName = 'L';  // the data is the next member's name
inline constexpr char kTarPaxHeader = 'x';    // the data is "LEN key=value\n" records for the next member
inline constexpr char kTarPaxGlobal = 'g';

struct TarHeader {
  std::string name;  // ustar prefix + "/" + name when a prefix is present
  uint64_t size = 0;
  char type = kTarRegular;
};

// The round-up of `size` to whole blocks.
inline uint64_t tar_padded_size(uint64_t size) { return (size + kTarBlock - 1) / kTarBlock * kTarBlock; }

bool tar_block_is_zero(const uint8_t* block);

// Parses a header block. Returns an empty string on success, or what is wrong (a bad checksum, a size
// field that is not a number), for the caller to place in its shard.
std::string parse_tar_header(const uint8_t* block, TarHeader& header);

// Writes a ustar header for a member of `size` bytes and type `type`; `name` must fit the 100-byte
// name field (longer names go first through a GNU long-name member, tar_writer.h).
void format_tar_header(uint8_t* block, const std::string& name, uint64_t size, char type);

}  // namespace sb

// Replacing a file atomically, for the caches that several processes (ranks, nodes) read and write at
// once: a reader sees the old file or the new one, never a part of either.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

// Whether the bytes reach the disk before the rename: a file whose loss costs work that a checksum can't
// reveal is flushed; one whose damage the reader detects by its checksum (and then rebuilds) need not be.
enum class Flush { ToDisk, NotNeeded };

// Creates the folder of `path` where it is missing, writes bytes to a unique temporary next to `path`,
// flushes them to disk (Flush::ToDisk) and renames it over `path`. Returns an empty string on success,
// else what failed and why (the temporary is removed then).
std::string replace_file(const std::string& path, const std::vector<uint8_t>& bytes, Flush flush = Flush::ToDisk);

}  // namespace sb

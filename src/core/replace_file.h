// Replacing a file atomically, for the caches that several processes (ranks, nodes) read and write at
// once: a reader sees the old file or the new one, never a part of either.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

// Writes bytes to a unique temporary next to `path`, flushes them to disk and renames it over `path`.
// Returns an empty string on success, else what failed and why (the temporary is removed then).
std::string replace_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace sb

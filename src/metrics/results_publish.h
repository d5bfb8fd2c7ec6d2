// Results files are written at PATH.writing and published to PATH by copy and atomic rename after every
// flush, so a job killed at any moment leaves PATH holding everything flushed before (docs/decisions.md).
#pragma once
#include <string>

namespace sb {
// Replaces `to` with a copy of `from` (copy to `to`.publishing, then rename); aborts the job on failure.
void publish_copy(const std::string& from, const std::string& to);
}  // namespace sb

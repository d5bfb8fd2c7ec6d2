// What the on-disk caches (the cuDNN plan cache, the peak-rate cache, the decoded-data cache) share around
// their byte formats (core/byte_format.h): a file is read whole and refused, never trusted, when it is too
// large, unreadable, damaged or foreign, with one warning naming it, and the run then rebuilds what the
// file held; a file is written atomically, and a failure to write it warns and lets the run go on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/byte_format.h"

namespace sb {

// How one cache speaks of itself in its warnings.
struct CacheFileKind {
  const char* name;      // e.g. "peak-rate cache"
  const char* instead;   // what the run does without the file, e.g. "measuring the GPU's peak GEMM rate instead"
  const char* unsaved;   // what a failed write costs, e.g. "the next run measures again"
  uint64_t max_bytes;    // a larger file is refused unread
};

// A file mapped read-only: its bytes without a copy. The size is the opened file's own, since a writer may
// have renamed another over the path since it was seen.
class MappedFile {
 public:
  MappedFile(const std::string& path, uint64_t max_bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool missing() const { return missing_; }  // there is no file at the path (a failed write says why)
  const std::string& error() const { return error_; }  // why it can't be read; empty when it can
  const uint8_t* data() const { return data_; }
  size_t size() const { return data_ != nullptr ? size_ : 0; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool missing_ = false;
  std::string error_;
};

// Reads and decodes the cache file at `path` with decode(data, size, &why), which returns
// std::optional<T>. Nothing, with *why empty, when there is no file; nothing, with the reason in *why,
// when it can't be read or decode refuses it.
template <class T, class Decode>
std::optional<T> read_cache_file(const CacheFileKind& kind, const std::string& path, Decode&& decode, std::string* why) {
  why->clear();
  const MappedFile file(path, kind.max_bytes);
  if (file.missing()) return std::nullopt;
  if (!file.error().empty()) {
    *why = file.error();
    return std::nullopt;
  }
  std::optional<T> value = decode(file.data(), file.size(), why);
  if (!value && why->empty()) *why = "refused";
  return value;
}

// The one line that says a file was ignored, without "warning: " or the newline:
// "<name> ignores <path>: <why>; <instead>".
std::string ignored_cache_file(const CacheFileKind& kind, const std::string& path, const std::string& why);
// Logs it as a warning (every rank).
void warn_ignored_cache_file(const CacheFileKind& kind, const std::string& path, const std::string& why);

// The line that says a write failed: "<name> cannot save <path>: <error> (<unsaved>)".
std::string unsaved_cache_file(const CacheFileKind& kind, const std::string& path, const std::string& error);

// Replaces the file atomically (ByteWriter::publish). A failure logs unsaved_cache_file as a warning and
// returns false.
bool save_cache_file(const CacheFileKind& kind, const std::string& path, const ByteWriter& bytes, Flush flush);

}  // namespace sb

// The decoded-data cache: a data set's decoded tensors kept in one file per set of source files, so that
// a later run reads them instead of inflating and parsing the gzip IDX or CIFAR files again. The file
// lives in the plan cache's folder (--plan-cache; --no-plan-cache: no cache) and is:
//   "SBDATA01"  magic, 8 bytes
//   u32         format version (kDataCacheVersion)
//   u32 + bytes the key: the data set's kind and each source file's absolute path, size, mtime and CRC-32
//   u64         payload length
//   u32         CRC-32 of the payload
//   payload     per split (train, test): name, channels, height, width, classes, mean, std, count,
//               count x C x H x W pixel bytes, count int32 labels
// all little-endian. A file is used only when every field checks out and its key is the key of the files
// on disk now; anything else is ignored after one warning, and the files are decoded again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace sb {

inline constexpr uint32_t kDataCacheVersion = 1;

// The key of a data set's source files: its kind, then per file its absolute path, size, modification
// time (ns) and the CRC-32 of its bytes (the files are read at once, one thread each). Throws a
// UserError naming a file that can't be read.
std::string data_cache_key(const std::string& kind, const std::vector<std::string>& files);

std::vector<uint8_t> encode_data_cache(const std::string& key, const TrainTest& data);

struct DataCacheFile {
  std::string key;
  TrainTest data;
};
// The file's key and data, or nothing with the reason in *why. The data then holds every invariant of
// check_dataset (data/dataset.h), whatever the bytes were.
std::optional<DataCacheFile> decode_data_cache(const uint8_t* bytes, size_t size, std::string* why);

// The cache file of one set of source paths in one folder, read only under the key of the files now.
class DataCache {
 public:
  DataCache(const std::string& folder, std::string key);
  const std::string& path() const { return path_; }
  // The cached data; nothing when there is no file (silently) or it is refused (after one warning naming
  // the file and the reason).
  std::optional<TrainTest> read() const;
  // Writes the data atomically (a temporary file renamed over the cache file, so that ranks and nodes
  // that write at once leave one whole file), without waiting for the disk: a file that a crash damages
  // fails its checksum and is written again. A failure warns and the run goes on.
  void write(const TrainTest& data) const;

 private:
  std::string key_, path_;
};

}  // namespace sb

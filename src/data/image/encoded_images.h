// The encoded images of one split of an image data set, read again every epoch: a file each (an image
// folder, image_folder.h) or a member each of WebDataset tar shards (shard_samples.h). Only where each
// image is and its name are held in memory, never the pixels. Reads are thread-safe: workers read
// concurrently (pread on shards held open).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/image/image_folder.h"

namespace sb {

// A file that can't be read (missing, unreadable, shorter than its index says): its message names it.
class ImageReadError : public UserError {
 public:
  using UserError::UserError;
};

class EncodedImages {
 public:
  // The files of a folder split, in the listing's order; labels come from the listing.
  static EncodedImages from_folder(const std::vector<ImageFile>& files);
  // The samples of `shards`, in order, indexed by their headers (no image is read); each sample's class
  // goes into `labels`. Throws UserError naming the shard for a damaged or cut-short shard.
  static EncodedImages from_shards(const std::vector<std::string>& shards, std::vector<int32_t>& labels);

  EncodedImages() = default;
  ~EncodedImages();
  EncodedImages(EncodedImages&& other) noexcept;
  EncodedImages& operator=(EncodedImages&& other) noexcept;
  EncodedImages(const EncodedImages&) = delete;
  EncodedImages& operator=(const EncodedImages&) = delete;

  int64_t size() const { return static_cast<int64_t>(locations_.size()); }
  // Shards: the samples of each shard, in order (shard s holds the samples after those of shards < s).
  // Empty for a folder, whose samples are independent files.
  const std::vector<int64_t>& shard_sizes() const { return shard_sizes_; }
  // The file (and member) of sample i, for messages: "DIR/train/cat/001.jpg" or "SHARD.tar, member 'KEY.jpg'".
  std::string name(int64_t i) const;
  // The file that holds sample i: its own file in a folder, its shard.
  const std::string& file_of(int64_t i) const { return files_[static_cast<size_t>(locations_[static_cast<size_t>(i)].file)]; }
  // Keeps the first n samples (n <= 0 or n >= size keeps all).
  void keep_first(int64_t n);

  // Reads the images of `samples` into `buffer` and points images[j] at sample j's bytes. Consecutive
  // samples that lie close together in one shard are read in one large read. A sample that can't be read
  // gets errors[j] (naming it) and an empty span; the others are read. Returns the bytes read.
  uint64_t read(std::span<const int64_t> samples, std::vector<uint8_t>& buffer, std::vector<std::span<const uint8_t>>& images,
                std::vector<std::string>& errors) const;

 private:
  struct Location {
    int32_t file = 0;     // into files_
    uint64_t offset = 0;  // of the image's bytes in the file (0 for a folder's files)
    uint64_t size = 0;    // its bytes (a folder's file: found when it is read)
  };
  void close_all();

  std::vector<std::string> files_;    // a folder: one per sample; shards: one per shard
  std::vector<Location> locations_;   // per sample
  std::vector<std::string> members_;  // shards: each sample's image member
  std::vector<int64_t> shard_sizes_;
  std::vector<int> shard_fds_;  // shards: open for the data set's life
};

}  // namespace sb

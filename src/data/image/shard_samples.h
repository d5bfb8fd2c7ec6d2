// The samples of a WebDataset shard: its members grouped by key, WebDataset's rule, where a member's key
// is its name up to the first dot of its base name and the rest is its extension ("a/0001.jpg": key
// "a/0001", extension "jpg"). A sample is consecutive members of one key with one image (KEY.jpg,
// KEY.jpeg or KEY.png) and a class index (KEY.cls, decimal text); other extensions are ignored.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image/tar_reader.h"

namespace sb {

struct ShardSample {
  std::string key;
  std::string image_member;  // the image's member name (for messages)
  uint64_t offset = 0;       // of the sample's first member in the shard
  uint64_t image_offset = 0;  // of the image's bytes in the shard
  uint64_t image_size = 0;
  std::vector<uint8_t> image;  // empty when the reader only indexes
  int32_t label = -1;
};

// Splits a member name into key and extension; false for a name whose base name has no dot.
bool split_sample_name(const std::string& name, std::string& key, std::string& extension);

// A .cls member's text as a class index: decimal digits, optional white space around them, at most
// 2^31 - 1. Throws sb::UserError naming `where` (the shard and member) otherwise.
int32_t parse_class_index(const std::vector<uint8_t>& text, const std::string& where);

class ShardSampleReader {
 public:
  explicit ShardSampleReader(const std::string& path, size_t buffer_bytes = kTarReadBuffer);
  // index_only: the images' bytes are not read, only where they are (image_offset, image_size); the
  // reader then reads a header block at a time and seeks past each image.
  ShardSampleReader(const std::string& path, bool index_only);
  // The next sample; false at the end. Throws sb::UserError naming the shard, the key and the byte offset
  // for a sample without an image or a label, or with two images.
  bool next(ShardSample& sample);

 private:
  TarReader tar_;
  bool index_only_ = false;
  TarMember pending_;
  bool has_pending_ = false;
};

}  // namespace sb

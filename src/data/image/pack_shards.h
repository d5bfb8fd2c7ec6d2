// Packs an image folder (image_folder.h) into WebDataset tar shards:
//   DST/train-000000.tar ...  DST/val-000000.tar ...  DST/classes.txt
// Each sample is KEY.jpg or KEY.png (the file's bytes as they are, its extension from its content) and
// KEY.cls (its class index in decimal), KEY a zero-padded running index within the split. Each split's
// samples are shuffled with a fixed seed before packing, so that every shard mixes classes. classes.txt
// holds one class name per line, in index order. Every image is decoded before any shard is written
// (pack_check.h): one that can't be is refused (BadImages::Fail) or left out and named (Skip).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/image_decoding.h"

namespace sb {

struct PackOptions {
  std::string source;       // the image folder
  std::string destination;  // absent, or an empty folder
  int64_t shard_size = 1000;  // samples per shard
  uint64_t seed = 0;          // of the shuffle
  BadImages bad_images = BadImages::Fail;  // a file that can't be read or decoded: refused, or left out
  int workers = 1;                         // threads that decode the images before writing
};

struct PackSummary {
  int64_t classes = 0;
  int64_t train_samples = 0, val_samples = 0;
  int64_t train_shards = 0, val_shards = 0;
  std::string left_out;               // the listing's lines on what it left out (image_folder.h), or ""
  std::vector<std::string> skipped;   // BadImages::Skip: each file left out, with its cause
};

// The shard file name of split `split` ("train", "val") number `index`: "train-000000.tar".
std::string shard_file_name(const std::string& split, int64_t index);

// Checks everything first (the source's layout, the destination absent or an empty folder, the shard
// size at least 1, every image decoding), then writes. Never overwrites; on a failure after writing began, removes what it
// wrote. Throws sb::UserError naming the file or option at fault. `progress` gets a line per shard.
PackSummary pack_image_folder(const PackOptions& options, const std::function<void(const std::string&)>& progress = {});

}  // namespace sb

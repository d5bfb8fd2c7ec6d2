// Image folders and tar shards written on disk for the data-set and batch tests: class c's images are
// (c + 1) * 8 + i pixels wide, so a decoded image tells its class and its place.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include "data/image/pack_shards.h"
#include "image_test_files.h"

namespace sb::test {

inline void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline int image_width(int label, int i) { return (label + 1) * 8 + i; }

// ROOT/train/classC/I.jpg (every third a PNG) and ROOT/val/classC/I.jpg, 24 pixels high.
inline void make_image_folder(const std::filesystem::path& root, int classes, int train_per_class, int val_per_class) {
  for (int c = 0; c < classes; ++c) {
    const std::string name = "class" + std::to_string(c);
    for (int i = 0; i < train_per_class; ++i) {
      const int w = image_width(c, i);
      const bool png = i % 3 == 2;
      write_file(root / "train" / name / (std::to_string(10 + i) + (png ? ".png" : ".jpg")),
                 png ? encode_png(PngSpec{w, 24, PNG_COLOR_TYPE_RGB, 8, false, {}, {}}, gradient_rgb(w, 24))
                     : encode_rgb_jpeg(w, 24));
    }
    for (int i = 0; i < val_per_class; ++i)
      write_file(root / "val" / name / (std::to_string(10 + i) + ".jpg"), encode_rgb_jpeg(image_width(c, i), 24));
  }
}

// The same folder packed into shards of `shard_size` samples in `shards`.
inline void make_image_shards(const std::filesystem::path& folder, const std::filesystem::path& shards, int classes,
                              int train_per_class, int val_per_class, int64_t shard_size) {
  make_image_folder(folder, classes, train_per_class, val_per_class);
  pack_image_folder(PackOptions{folder.string(), shards.string(), shard_size, 0});
}

}  // namespace sb::test

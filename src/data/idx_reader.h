// Readers for the IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/): a
// big-endian header (magic 0x00000803 for images with 3 dimensions, 0x00000801 for labels with 1)
// followed by unsigned bytes. Files may be gzip-compressed or plain. Every problem with a file is a
// UserError that names the file, says what is wrong and how to fix it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

// Refuse headers that claim more than this many data bytes before allocating anything (MNIST's
// largest file holds 47 MB).
inline constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 31;
inline constexpr uint32_t kMaxIdxSide = 65536;  // rows and columns

struct IdxImages {
  int64_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols
};

IdxImages read_idx_images(const std::string& path);

// Labels as int32, each checked to be below num_classes.
std::vector<int32_t> read_idx_labels(const std::string& path, int num_classes = 10);

}  // namespace sb

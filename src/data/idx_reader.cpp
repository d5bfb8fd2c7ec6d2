#include "data/idx_reader.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/error.h"
#include "data/gz_file.h"

namespace sb {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", v);
  return text;
}

// Reads the magic number and the dimension sizes (big-endian uint32 each) and checks the magic.
std::vector<uint32_t> read_header(GzFile& file, uint32_t expected_magic, const char* kind, const char* dims_meaning) {
  const int expected_dims = static_cast<int>(expected_magic & 0xFF);
  const size_t header_bytes = 4 * (1 + static_cast<size_t>(expected_dims));
  unsigned char header[16] = {};
  const size_t got = file.read(header, header_bytes);
  auto word = [&](size_t i) {
    return (uint32_t{header[4 * i]} << 24) | (uint32_t{header[4 * i + 1]} << 16) | (uint32_t{header[4 * i + 2]} << 8) |
           uint32_t{header[4 * i + 3]};
  };
  if (got >= 4 && word(0) != expected_magic) {
    const uint32_t magic = word(0);
    if ((magic & 0xFFFFFF00u) == (expected_magic & 0xFFFFFF00u))
      throw UserError(file.path() + " has " + std::to_string(magic & 0xFF) + " dimensions in its header, but an IDX " +
                      kind + " file has " + std::to_string(expected_dims) + " (" + dims_meaning +
                      "); check that it is the right file");
    throw UserError(file.path() + " is not an IDX " + kind + " file: its magic number is " + hex32(magic) +
                    ", expected " + hex32(expected_magic) + "; check that it is the right file (MNIST format)");
  }
  if (got < header_bytes)
    throw UserError(file.path() + " is truncated: it ends inside the " + std::to_string(header_bytes) +
                    "-byte IDX header after " + std::to_string(got) + " bytes; re-download it");
  std::vector<uint32_t> dims;
  for (int i = 1; i <= expected_dims; ++i) dims.push_back(word(static_cast<size_t>(i)));
  return dims;
}

// Reads exactly `bytes` data bytes into `out` and checks that nothing follows them. The header alone
// says how many bytes to expect, and a hostile one says up to kMaxIdxBytes in 16 bytes: memory grows
// with the data that actually arrives (a chunk at a time, doubling), never with what the header claims.
void read_body(GzFile& file, std::vector<uint8_t>& out, uint64_t bytes, const std::string& header_says) {
  constexpr uint64_t kFirstChunk = uint64_t{64} << 10;
  std::error_code ec;
  const uint64_t on_disk = std::filesystem::file_size(file.path(), ec);  // all of a plain file's body in one go
  uint64_t got = 0;
  out.clear();
  while (got < bytes) {
    const uint64_t want = std::min(bytes - got, std::max({kFirstChunk, got, ec ? 0 : on_disk}));
    out.reserve(static_cast<size_t>(got + want));  // exact: the last step ends at `bytes`, not beyond
    out.resize(static_cast<size_t>(got + want));
    const size_t n = file.read(out.data() + got, static_cast<size_t>(want));
    got += n;
    if (n < want) break;
  }
  out.resize(static_cast<size_t>(got));
  if (got < bytes) {
    const std::string follow = file.cut_short() ? "its gzip stream is cut short after " + std::to_string(got) + " bytes"
                                                : "only " + std::to_string(got) + " bytes follow";
    throw UserError(file.path() + " is truncated: header says " + header_says + " but " + follow + "; re-download it");
  }
  if (!file.at_end())
    throw UserError(file.path() + " is longer than its header says: header says " + header_says +
                    " but more bytes follow; the file is corrupt or not the file its name says");
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  GzFile file(path);
  const std::vector<uint32_t> dims = read_header(file, kImagesMagic, "image", "count, rows, columns");
  const std::string header_says =
      std::to_string(dims[0]) + " images of " + std::to_string(dims[1]) + "x" + std::to_string(dims[2]);
  if (dims[0] == 0 || dims[1] == 0 || dims[2] == 0)
    throw UserError(path + " has an empty dimension: header says " + header_says +
                    "; the file is corrupt, re-download it");
  // Each factor is below 2^32, so rows*cols fits in 64 bits, and once it is bounded so does the count.
  const uint64_t per_image = uint64_t{dims[1]} * dims[2];
  if (per_image > kMaxIdxBytes || per_image * dims[0] > kMaxIdxBytes)
    throw UserError(path + " has an implausible header: it says " + header_says + ", more than the " +
                    std::to_string(kMaxIdxBytes) +
                    " bytes an IDX file may hold; the file is corrupt or not in MNIST format");
  // Rows and columns become int image sizes; no real image side comes near this.
  if (dims[1] > kMaxIdxSide || dims[2] > kMaxIdxSide)
    throw UserError(path + " has an implausible header: it says " + header_says + ", images wider or taller than " +
                    std::to_string(kMaxIdxSide) + " pixels; the file is corrupt or not in MNIST format");
  IdxImages images;
  images.count = dims[0];
  images.rows = static_cast<int>(dims[1]);
  images.cols = static_cast<int>(dims[2]);
  read_body(file, images.pixels, per_image * dims[0], header_says);
  return images;
}

std::vector<int32_t> read_idx_labels(const std::string& path, int num_classes) {
  GzFile file(path);
  const std::vector<uint32_t> dims = read_header(file, kLabelsMagic, "label", "count");
  const std::string header_says = std::to_string(dims[0]) + " labels";
  if (dims[0] == 0)
    throw UserError(path + " holds no labels: header says 0 labels; the file is corrupt, re-download it");
  if (dims[0] > kMaxIdxBytes)
    throw UserError(path + " has an implausible header: it says " + header_says + ", more than the " +
                    std::to_string(kMaxIdxBytes) +
                    " bytes an IDX file may hold; the file is corrupt or not in MNIST format");
  std::vector<uint8_t> raw;
  read_body(file, raw, dims[0], header_says);
  std::vector<int32_t> labels(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= num_classes)
      throw UserError(path + " has label " + std::to_string(raw[i]) + " at index " + std::to_string(i) +
                      ", outside 0.." + std::to_string(num_classes - 1) +
                      "; the file is corrupt or not a labels file of this dataset");
    labels[i] = raw[i];
  }
  return labels;
}

}  // namespace sb

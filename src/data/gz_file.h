// Reading files through zlib, which serves gzip-compressed and plain files alike (gzopen/gzread pass
// plain files through), so every reader accepts "x" and "x.gz" with one code path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

class GzFile {
 public:
  // Throws a UserError naming the path when it does not exist, is a directory or can't be opened.
  explicit GzFile(const std::string& path);
  ~GzFile();
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes and returns how many were read: fewer only where the data ends (a plain
  // file's end, or a gzip stream cut short). A corrupt gzip stream throws a UserError.
  size_t read(void* destination, size_t n);
  // True when not one more byte can be read.
  bool at_end();
  // True when the data ended because the gzip stream was cut short (zlib still returns everything
  // it could decompress before the cut).
  bool cut_short() const { return cut_short_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* file_ = nullptr;  // gzFile, kept opaque so that zlib.h stays out of our headers
  bool cut_short_ = false;
};

// The whole (decompressed) content of a file. More than max_bytes is refused with a UserError before
// it is all held, so a huge or hostile file can't exhaust memory.
std::vector<uint8_t> read_whole_file(const std::string& path, uint64_t max_bytes);

// The path itself when it exists, else path + ".gz" when that exists, else "" (for readers that
// accept both the plain and the compressed name).
std::string plain_or_gz(const std::string& path);

}  // namespace sb

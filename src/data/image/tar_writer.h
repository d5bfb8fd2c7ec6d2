// Writes a tar file (a WebDataset shard): ustar headers, data padded to 512-byte blocks, two zero blocks
// at the end. Names over 100 bytes go through a GNU long-name member first, which the reader (and GNU
// tar, Python's tarfile) read back.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace sb {

class TarWriter {
 public:
  // Creates `path`; throws sb::UserError when it exists already (never overwrites) or can't be created.
  explicit TarWriter(const std::string& path);
  ~TarWriter();  // closes an unfinished file as it is
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  void add(const std::string& name, std::span<const uint8_t> data);
  // The two zero blocks that end the archive, then close. Throws sb::UserError on a failed write.
  void finish();
  const std::string& path() const { return path_; }

 private:
  void write(const void* data, size_t n);
  void pad(uint64_t size);

  std::string path_;
  int fd_ = -1;
};

}  // namespace sb

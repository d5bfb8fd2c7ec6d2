// Reads the members of a tar file (a WebDataset shard) in order, in large sequential reads. Handles
// ustar, GNU long names ('L' members) and pax headers ('x' members: path= and size=); skips directories,
// links and pax global headers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sb {

struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of its header block in the file (of the first one, for long names and pax)
  uint64_t data_offset = 0;  // of its first data byte in the file
  uint64_t size = 0;         // of its data
  std::vector<uint8_t> data;  // empty when the caller did not want it (next's wants_data)
};

inline constexpr size_t kTarReadBuffer = size_t{8} << 20;

class TarReader {
 public:
  // Opens the file; throws sb::UserError naming it when it can't. Reads in buffer_bytes (at most the
  // file's size).
  explicit TarReader(const std::string& path, size_t buffer_bytes = kTarReadBuffer);
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  // The next regular file into `member`; false at the end of the archive (a zero block, or the end of
  // the file at a header's place). Throws sb::UserError naming the file and the byte offset when it is
  // cut short (a header or a member's data past its end) or a header is not valid.
  bool next(TarMember& member);
  // The same, reading the data only of the members `wants_data` accepts by name: an index of a shard reads
  // its headers and small members and seeks past the rest (pair it with a small buffer_bytes).
  bool next(TarMember& member, const std::function<bool(const std::string&)>& wants_data);
  const std::string& path() const { return path_; }

 private:
  size_t read(uint8_t* out, size_t n);  // up to n bytes; fewer only at the end of the file
  void skip(uint64_t n);                // n bytes the caller checked lie inside the file
  [[noreturn]] void fail(uint64_t offset, const std::string& what) const;

  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint64_t position_ = 0;  // bytes consumed
  std::vector<uint8_t> buffer_;
  size_t buffer_begin_ = 0, buffer_end_ = 0;
  bool ended_ = false;
};

}  // namespace sb

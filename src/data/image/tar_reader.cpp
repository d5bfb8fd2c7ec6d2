#include "data/image/tar_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "data/image/tar_header.h"

namespace sb {
namespace {

// Long names and pax records are short; a bigger one is a damaged file, not a name.
constexpr uint64_t kMaxMetadataBytes = uint64_t{1} << 20;

struct PaxOverrides {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// "LEN key=value\n" records; returns what is wrong, or "" on success.
std::string parse_pax_records(const std::vector<uint8_t>& data, PaxOverrides& out) {
  size_t at = 0;
  while (at < data.size()) {
    if (data[at] == '\0') break;  // padding some writers leave
    size_t len = 0, i = at;
    while (i < data.size() && data[i] >= '0' && data[i] <= '9' && len < data.size()) len = len * 10 + (data[i++] - '0');
    if (i == at || i >= data.size() || data[i] != ' ' || len <= i - at || len > data.size() - at || data[at + len - 1] != '\n')
      return "a pax header record with a bad length";
    const std::string record(reinterpret_cast<const char*>(data.data()) + i + 1, at + len - 1 - (i + 1));
    const size_t eq = record.find('=');
    if (eq == std::string::npos) return "a pax header record without '='";
    const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") out.path = value;
    if (key == "size") {
      uint64_t size = 0;
      if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos)
        return "a pax size that is not a number";
      for (char c : value) size = size * 10 + static_cast<uint64_t>(c - '0');
      out.size = size;
    }
    at += len;
  }
  return "";
}

// What the long-name and pax headers before a member say of it, and where its first header starts.
struct PendingHeaders {
  static constexpr uint64_t kUnset = UINT64_MAX;
  PaxOverrides pax;
  std::optional<std::string> long_name;
  uint64_t first_offset = kUnset;

  bool any() const { return long_name || pax.path || pax.size; }
  void start_at(uint64_t offset) {
    if (first_offset == kUnset) first_offset = offset;
  }
  // Takes in the data of a long-name or pax header; returns what is wrong, or "" on success.
  std::string take(char type, const std::vector<uint8_t>& data) {
    if (type == kTarGnuLongName) long_name = std::string(data.begin(), std::find(data.begin(), data.end(), uint8_t{0}));  // up to its NUL
    else if (type == kTarPaxHeader) return parse_pax_records(data, pax);
    return "";
  }
  const std::string& name_for(const TarHeader& header) const { return pax.path ? *pax.path : long_name ? *long_name : header.name; }
};

}  // namespace

TarReader::TarReader(const std::string& path, size_t buffer_bytes) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw UserError("cannot open tar shard '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw UserError("tar shard '" + path + "' is not a regular file");
  }
  file_size_ = static_cast<uint64_t>(st.st_size);
  // No bigger than the file: a small shard needs no 8 MiB buffer.
  buffer_.resize(std::max<size_t>(kTarBlock, std::min<uint64_t>(buffer_bytes, file_size_)));
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
}

TarReader::~TarReader() {
  if (fd_ >= 0) ::close(fd_);
}

void TarReader::fail(uint64_t offset, const std::string& what) const {
  throw UserError("tar shard '" + path_ + "' at byte " + std::to_string(offset) + ": " + what);
}

size_t TarReader::read(uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    if (buffer_begin_ == buffer_end_) {
      ssize_t got;
      do got = ::read(fd_, buffer_.data(), buffer_.size());
      while (got < 0 && errno == EINTR);
      if (got < 0) fail(position_, std::string("read failed: ") + std::strerror(errno));
      if (got == 0) break;
      buffer_begin_ = 0;
      buffer_end_ = static_cast<size_t>(got);
    }
    const size_t take = std::min(n - done, buffer_end_ - buffer_begin_);
    if (out != nullptr) std::memcpy(out + done, buffer_.data() + buffer_begin_, take);
    buffer_begin_ += take;
    done += take;
  }
  position_ += done;
  return done;
}

void TarReader::skip(uint64_t n) {
  const uint64_t buffered = buffer_end_ - buffer_begin_;
  if (n <= buffered) {
    buffer_begin_ += static_cast<size_t>(n);
  } else {
    if (::lseek(fd_, static_cast<off_t>(position_ + n), SEEK_SET) < 0) fail(position_, std::string("seek failed: ") + std::strerror(errno));
    buffer_begin_ = buffer_end_ = 0;
  }
  position_ += n;
}

bool TarReader::next(TarMember& member) { return next(member, {}); }

bool TarReader::next(TarMember& member, const std::function<bool(const std::string&)>& wants_data) {
  if (ended_) return false;
  PendingHeaders pending;
  uint8_t block[kTarBlock];
  for (;;) {
    const uint64_t header_at = position_;
    const size_t got = read(block, kTarBlock);
    if (got == 0 || (got == kTarBlock && tar_block_is_zero(block))) {
      if (pending.any())
        fail(header_at, "the archive ends after a long-name or pax header, before the member it names (the shard is cut short)");
      ended_ = true;
      return false;
    }
    if (got < kTarBlock)
      fail(header_at, "a header block is cut short (" + std::to_string(got) + " of 512 bytes; the shard is truncated)");
    TarHeader header;
    const std::string problem = parse_tar_header(block, header);
    if (!problem.empty()) fail(header_at, problem);
    pending.start_at(header_at);
    const bool metadata = header.type == kTarGnuLongName || header.type == kTarPaxHeader || header.type == kTarPaxGlobal;
    const uint64_t size = !metadata && pending.pax.size ? *pending.pax.size : header.size;
    const uint64_t padded = tar_padded_size(size);
    if (padded > file_size_ - position_) {
      fail(header_at, "member '" + header.name + "' claims " + std::to_string(size) + " bytes but the file ends " +
                          std::to_string(file_size_ - position_) + " bytes after its header (the shard is cut short)");
    }
    if (metadata) {
      if (size > kMaxMetadataBytes) fail(header_at, "a long-name or pax header of " + std::to_string(size) + " bytes");
      std::vector<uint8_t> data(size);
      read(data.data(), size);
      read(nullptr, padded - size);
      if (const std::string bad = pending.take(header.type, data); !bad.empty()) fail(header_at, bad);
      continue;
    }
    const bool regular = header.type == kTarRegular || header.type == kTarRegularOld || header.type == kTarContiguous;
    if (!regular) {  // directories, links, devices: nothing a sample needs
      skip(padded);
      pending = {};
      continue;
    }
    member.name = pending.name_for(header);
    member.offset = pending.first_offset;
    member.data_offset = position_;
    member.size = size;
    if (wants_data && !wants_data(member.name)) {
      member.data.clear();
      skip(padded);
      return true;
    }
    member.data.resize(size);
    if (read(member.data.data(), size) + read(nullptr, padded - size) != padded)
      fail(header_at, "member '" + member.name + "' ends early (the file shrank while it was read)");
    return true;
  }
}

}  // namespace sb

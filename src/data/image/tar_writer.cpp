#include "data/image/tar_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/os_error.h"
#include "data/image/tar_header.h"

namespace sb {
namespace {
// The name GNU tar gives its long-name members.
constexpr const char* kLongLinkName = "././@LongLink";
// The ustar size field holds 11 octal digits.
constexpr uint64_t kMaxMemberBytes = (uint64_t{1} << 33) - 1;
}  // namespace

TarWriter::TarWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int e = errno;
    if (e == EEXIST) throw UserError("'" + path + "' exists already; scalebench never overwrites a shard");
    throw UserError("cannot create '" + path + "': " + std::strerror(e) + "; " + write_error_hint(e));
  }
}

TarWriter::~TarWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TarWriter::write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = w < 0 ? errno : EIO;
      throw UserError("writing '" + path_ + "' failed: " + std::strerror(e) + "; " + write_error_hint(e));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void TarWriter::pad(uint64_t size) {
  static const uint8_t zeros[kTarBlock] = {};
  const uint64_t rest = tar_padded_size(size) - size;
  if (rest > 0) write(zeros, rest);
}

void TarWriter::add(const std::string& name, std::span<const uint8_t> data) {
  if (name.empty()) throw UserError("a tar member needs a name");
  if (data.size() > kMaxMemberBytes)
    throw UserError("'" + name + "' is " + std::to_string(data.size()) + " bytes, over the 8 GiB a ustar member holds");
  uint8_t block[kTarBlock];
  if (name.size() > kTarNameField) {
    format_tar_header(block, kLongLinkName, name.size() + 1, kTarGnuLongName);
    write(block, kTarBlock);
    write(name.c_str(), name.size() + 1);  // with its NUL, as GNU tar writes it
    pad(name.size() + 1);
  }
  format_tar_header(block, name, data.size(), kTarRegular);
  write(block, kTarBlock);
  write(data.data(), data.size());
  pad(data.size());
}

void TarWriter::finish() {
  static const uint8_t zeros[2 * kTarBlock] = {};
  write(zeros, sizeof zeros);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int e = errno;
    throw UserError("closing '" + path_ + "' failed: " + std::strerror(e) + "; " + write_error_hint(e));
  }
}

}  // namespace sb

#include "core/cache_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace sb {

namespace {
std::string byte_count(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}
}  // namespace

MappedFile::MappedFile(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    missing_ = errno == ENOENT || errno == ENOTDIR;  // no such file, or a folder on its path is a file
    error_ = std::string("cannot open it: ") + std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error_ = std::string("cannot stat it: ") + std::strerror(errno);
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    error_ = "larger than " + byte_count(max_bytes);
  } else if (st.st_size > 0) {
    size_ = static_cast<size_t>(st.st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) error_ = std::string("cannot map it: ") + std::strerror(errno);
    else data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid; a read-only descriptor loses nothing if close fails
}

MappedFile::~MappedFile() {
  if (data_ != nullptr && ::munmap(const_cast<uint8_t*>(data_), size_) != 0)
    log_all("warning: munmap of a cache file failed (%s)\n", std::strerror(errno));
}

std::string ignored_cache_file(const CacheFileKind& kind, const std::string& path, const std::string& why) {
  std::string line = std::string(kind.name) + " ignores " + path + ": " + why;
  if (kind.instead[0] != '\0') line += std::string("; ") + kind.instead;
  return line;
}

void warn_ignored_cache_file(const CacheFileKind& kind, const std::string& path, const std::string& why) {
  log_all("warning: %s\n", ignored_cache_file(kind, path, why).c_str());
}

std::string unsaved_cache_file(const CacheFileKind& kind, const std::string& path, const std::string& error) {
  return std::string(kind.name) + " cannot save " + path + ": " + error + " (" + kind.unsaved + ")";
}

bool save_cache_file(const CacheFileKind& kind, const std::string& path, const ByteWriter& bytes, Flush flush) {
  const std::string error = bytes.publish(path, flush);
  if (error.empty()) return true;
  log_all("warning: %s\n", unsaved_cache_file(kind, path, error).c_str());
  return false;
}

}  // namespace sb

#include "core/replace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace sb {

std::string replace_file(const std::string& path, const std::vector<uint8_t>& bytes, Flush flush) {
  if (const std::filesystem::path folder = std::filesystem::path(path).parent_path(); !folder.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) return "cannot create the folder: " + ec.message();
  }
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return "cannot create a temporary next to it: " + std::string(std::strerror(errno));
  std::string error;
  size_t done = 0;
  while (error.empty() && done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = "write failed: " + std::string(std::strerror(errno));
    else done += static_cast<size_t>(n);
  }
  if (error.empty() && ::fchmod(fd, 0644) != 0) error = "chmod failed: " + std::string(std::strerror(errno));
  if (error.empty() && flush == Flush::ToDisk && ::fsync(fd) != 0) error = "fsync failed: " + std::string(std::strerror(errno));
  if (::close(fd) != 0 && error.empty()) error = "close failed: " + std::string(std::strerror(errno));
  if (error.empty() && ::rename(temporary.c_str(), path.c_str()) != 0)
    error = "rename failed: " + std::string(std::strerror(errno));
  if (!error.empty()) ::unlink(temporary.c_str());
  return error;
}

}  // namespace sb

#include "metrics/results_output_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace sb {
namespace {

struct Refusal {
  const std::string& what;
  [[noreturn]] void operator()(const std::string& path, const std::string& reason) const {
    throw UserError("cannot write " + what + " '" + path + "': " + reason);
  }
};

}  // namespace

void check_output_writable(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  const Refusal cannot_write{what};
  if (path.empty()) cannot_write(path, "the path is empty");
  const fs::path target(path);
  if (!target.has_filename()) cannot_write(path, "the path names a directory, not a file");
  const fs::path directory = target.parent_path().empty() ? fs::path(".") : target.parent_path();

  std::error_code error;
  const fs::file_status directory_status = fs::status(directory, error);
  if (!fs::exists(directory_status))
    cannot_write(path, "the directory '" + directory.string() + "' does not exist");
  if (!fs::is_directory(directory_status))
    cannot_write(path, "'" + directory.string() + "' is not a directory");

  const fs::file_status target_status = fs::status(target, error);
  if (fs::is_directory(target_status)) cannot_write(path, "it is a directory");
  if (fs::exists(target_status)) {
    if (!fs::is_regular_file(target_status)) cannot_write(path, "it exists and is not a regular file");
    // Opening for writing without O_TRUNC changes nothing, and answers for permissions and read-only mounts.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) cannot_write(path, std::strerror(errno));
    ::close(fd);
  }

  // A new file must be creatable in the directory (the results file is created, or replaced, there).
  std::string probe_name = target.filename().string();  // appended, not '+'-chained: GCC 12 misfires -Wrestrict
  probe_name.insert(0, 1, '.');
  probe_name += ".probe-";
  probe_name += std::to_string(::getpid());
  const fs::path probe = directory / probe_name;
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) cannot_write(path, "cannot create files in '" + directory.string() + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace sb

#include "metrics/results_publish.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/host_name.h"
#include "core/os_error.h"

namespace sb {
namespace {

// Working files of this process, removed by the abort hook. A name whose file was renamed into place or
// never created is simply not found then.
struct WorkingFiles {
  std::mutex mutex;
  std::set<std::string> paths;  // a set: publish_copy asks for its staging name at every publish
};

WorkingFiles& working_files() {
  static WorkingFiles files;
  return files;
}

void remember_working_file(const std::string& path) {
  static std::once_flag once;
  std::call_once(once, [] {
    add_abort_hook([] {
      WorkingFiles& files = working_files();
      std::lock_guard lock(files.mutex);
      for (const std::string& path : files.paths) ::unlink(path.c_str());
    });
  });
  WorkingFiles& files = working_files();
  std::lock_guard lock(files.mutex);
  files.paths.insert(path);
}

// Writes all of `data`, resuming after partial writes and interruptions. Returns false with errno set.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

// Copies `from` to a new file `to`. Returns 0, or the errno of the first failure with `what` saying
// which step failed. Every error is kept: std::filesystem::copy_file reports a failed write (a full disk)
// as EIO, which hides the reason.
int copy_contents(const std::string& from, const std::string& to, std::string& what) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    what = "reading " + from;
    return errno;
  }
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (out < 0) {
    const int error = errno;
    ::close(in);
    what = "creating " + to;
    return error;
  }
  int error = 0;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t got = ::read(in, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      error = errno;
      what = "reading " + from;
      break;
    }
    if (got == 0) break;
    if (!write_all(out, buffer.data(), static_cast<size_t>(got))) {
      error = errno;
      what = "writing " + to;
      break;
    }
  }
  ::close(in);
  // A network file system may report a full disk only when the file is closed.
  if (::close(out) != 0 && error == 0) {
    error = errno;
    what = "writing " + to;
  }
  return error;
}

}  // namespace

std::string working_path_of(const std::string& path, const std::string& suffix, const std::string& host, long long pid) {
  return path + "." + suffix + "." + host + "." + std::to_string(pid);
}

std::string unique_working_path(const std::string& path, const std::string& suffix) {
  std::string name = working_path_of(path, suffix, this_host_name(), ::getpid());
  remember_working_file(name);
  return name;
}

void publish_copy(const std::string& from, const std::string& to) {
  const std::string staging = unique_working_path(to, "publishing");
  std::string what;
  int error = copy_contents(from, staging, what);
  if (error == 0 && ::rename(staging.c_str(), to.c_str()) != 0) {
    error = errno;
    what = "renaming " + staging + " to " + to;
  }
  if (error == 0) return;
  ::unlink(staging.c_str());
  fatal("could not publish the results file " + to + ": " + what + " failed: " + std::strerror(error) + "; " +
        write_error_hint(error));
}

}  // namespace sb

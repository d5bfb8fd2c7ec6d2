// Shared helpers of the fuzz targets: scratch files the readers (which take paths) can open, gzip
// compression of an input, and turning the job-abort path into a crash libFuzzer records.
#pragma once
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"

namespace sb::fuzz {

using Bytes = std::vector<uint8_t>;

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "fuzz harness: %s\n", what);
  std::abort();
}

// A finding that is not a sanitizer report: an invariant of a reader's result that does not hold.
#define SB_FUZZ_REQUIRE(condition)                                                          \
  do {                                                                                      \
    if (!(condition)) ::sb::fuzz::die("reader returned a result that breaks: " #condition); \
  } while (0)

// sb::fatal and sb::fatal_call end the process with std::_Exit(3), which libFuzzer would not see as a
// crash (no reproducer is written). An abort hook registered first runs last: after the others (HDF5's
// error stack) have printed, it turns the job abort into abort(), a crash libFuzzer records.
inline void abort_on_fatal() {
  static bool done = false;
  if (done) return;
  done = true;
  sb::add_abort_hook([] { die("sb::fatal / CHECK_* aborted the job: a reader must throw sb::UserError instead"); });
}

// The expected outcome for a bad file. With SB_FUZZ_VERBOSE=1 in the environment (to triage or to
// run one input: `fuzz_x_reader FILE`), prints the message the user would see.
inline void expected(const sb::UserError& e) {
  static const bool verbose = [] {
    const char* v = std::getenv("SB_FUZZ_VERBOSE");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  if (verbose) std::fprintf(stderr, "UserError: %s\n", e.what());
}

// Writes all of `n` bytes at fd's start and cuts the file there.
inline void write_all(int fd, const uint8_t* data, size_t n) {
  if (ftruncate(fd, 0) != 0) die("ftruncate failed");
  size_t done = 0;
  while (done < n) {
    const ssize_t w = pwrite(fd, data + done, n - done, static_cast<off_t>(done));
    if (w <= 0) die("pwrite failed");
    done += static_cast<size_t>(w);
  }
}

// An anonymous in-memory file (memfd) reachable by path as /proc/self/fd/N: no disk, nothing left
// behind, one per process (so parallel fuzzers never share one).
class ScratchFile {
 public:
  explicit ScratchFile(const char* name) {
    fd_ = memfd_create(name, 0);
    if (fd_ < 0) die("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~ScratchFile() { close(fd_); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  void write(const uint8_t* data, size_t n) { write_all(fd_, data, n); }
  void write(const Bytes& b) { write(b.data(), b.size()); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A per-process directory under $TMPDIR (or /tmp), removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sb_fuzz_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) die("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const uint8_t* data, size_t n) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) die("open for writing failed");
  write_all(fd, data, n);
  close(fd);
}
inline void write_file(const std::string& path, const Bytes& b) { write_file(path, b.data(), b.size()); }

// The gzip (RFC 1952) compression of data, as gzip(1) or gzopen(.., "wb") would write it.
inline Bytes gzip(const uint8_t* data, size_t n) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) die("deflateInit2 failed");
  Bytes out(deflateBound(&z, static_cast<uLong>(n)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) die("deflate failed");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace sb::fuzz

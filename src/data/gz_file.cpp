#include "data/gz_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace sb {

namespace {
gzFile as_gz(void* f) { return static_cast<gzFile>(f); }

// zlib's message for the file's last error, without the "path: " it puts in front.
std::string zlib_message(void* f, const std::string& path, int* errnum) {
  const char* raw = gzerror(as_gz(f), errnum);
  std::string message = raw ? raw : "unknown error";
  if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
  return message;
}
}  // namespace

GzFile::GzFile(const std::string& path) : path_(path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw UserError(path + " does not exist; check the dataset directory given to --data");
  if (std::filesystem::is_directory(status))
    throw UserError(path + " is a directory, not a data file; check the dataset directory given to --data");
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    const int err = errno;
    throw UserError(path + " could not be opened (" + (err ? std::strerror(err) : "out of memory") +
                    "); check its permissions");
  }
  gzbuffer(as_gz(file_), 1 << 17);  // larger than zlib's 8 KiB default: fewer syscalls on big files
}

GzFile::~GzFile() {
  if (file_ != nullptr) gzclose(as_gz(file_));
}

size_t GzFile::read(void* destination, size_t n) {
  auto* out = static_cast<unsigned char*>(destination);
  size_t total = 0;
  while (total < n) {
    // gzread takes an unsigned int length, so large reads go in chunks.
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - total, size_t{1} << 30));
    const int got = gzread(as_gz(file_), out + total, chunk);
    if (got < 0) {
      int errnum = 0;
      throw UserError(path_ + " is not a valid gzip file (zlib: " + zlib_message(file_, path_, &errnum) +
                      "); re-download it");
    }
    total += static_cast<size_t>(got);
    if (static_cast<unsigned>(got) < chunk) {
      // A short read is the end of the data; zlib flags a cut-short gzip stream as Z_BUF_ERROR, which
      // the caller reports as truncation. Anything else is corruption.
      int errnum = 0;
      const std::string message = zlib_message(file_, path_, &errnum);
      if (errnum != Z_OK && errnum != Z_BUF_ERROR)
        throw UserError(path_ + " is not a valid gzip file (zlib: " + message + "); re-download it");
      cut_short_ = errnum == Z_BUF_ERROR;
      break;
    }
  }
  return total;
}

bool GzFile::at_end() {
  unsigned char probe;
  return read(&probe, 1) == 0;
}

std::vector<uint8_t> read_whole_file(const std::string& path, uint64_t max_bytes) {
  GzFile file(path);
  std::vector<uint8_t> bytes;
  std::error_code ec;
  const auto on_disk = std::filesystem::file_size(path, ec);
  constexpr size_t kChunk = size_t{1} << 20;
  // Room for a plain file and the final probing chunk, so it is read without reallocating.
  if (!ec && on_disk <= max_bytes) bytes.reserve(on_disk + kChunk);
  // A plain file's first read asks for one byte more than it holds, so that its end shows at once
  // without a whole chunk to allocate and clear; a gzip file's data goes on in chunks.
  size_t chunk = (!ec && on_disk < kChunk) ? static_cast<size_t>(on_disk) + 1 : kChunk;
  for (;;) {
    const size_t old_size = bytes.size();
    if (old_size > max_bytes)
      throw UserError(path + " is larger than the " + std::to_string(max_bytes) +
                      " bytes a file of this dataset can have; check that it is the right file");
    bytes.resize(old_size + chunk);
    const size_t got = file.read(bytes.data() + old_size, chunk);
    bytes.resize(old_size + got);
    if (got < chunk) break;
    chunk = kChunk;
  }
  if (bytes.size() > max_bytes)
    throw UserError(path + " is larger than the " + std::to_string(max_bytes) +
                    " bytes a file of this dataset can have; check that it is the right file");
  return bytes;
}

std::string plain_or_gz(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  if (std::filesystem::exists(path + ".gz", ec)) return path + ".gz";
  return "";
}

}  // namespace sb

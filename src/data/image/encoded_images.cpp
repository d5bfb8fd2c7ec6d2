#include "data/image/encoded_images.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "data/image/shard_samples.h"

namespace sb {
namespace {

// Samples of one shard are read together while the run stays below this and the gaps (their labels'
// members and headers) stay small: one read instead of one per image.
constexpr uint64_t kMaxRunBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxGapBytes = uint64_t{64} << 10;

std::string errno_text() { return std::strerror(errno); }

// Reads exactly n bytes at offset; false with errno set (0 for a file shorter than expected).
bool read_at(int fd, uint8_t* out, uint64_t n, uint64_t offset) {
  uint64_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      return false;
    }
    done += static_cast<uint64_t>(got);
  }
  return true;
}

// A folder's file, whole, appended to buffer; "" or what went wrong.
std::string read_whole_file(const std::string& path, std::vector<uint8_t>& buffer, uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open image file '" + path + "': " + errno_text();
  std::string problem;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat image file '" + path + "': " + errno_text();
  } else {
    size = static_cast<uint64_t>(st.st_size);
    const size_t at = buffer.size();
    buffer.resize(at + size);
    if (!read_at(fd, buffer.data() + at, size, 0)) {
      problem = "cannot read image file '" + path + "': " + (errno ? errno_text() : "it shrank while it was read");
      buffer.resize(at);
      size = 0;
    }
  }
  ::close(fd);
  return problem;
}

}  // namespace

EncodedImages EncodedImages::from_folder(const std::vector<ImageFile>& files) {
  EncodedImages out;
  out.files_.reserve(files.size());
  out.locations_.reserve(files.size());
  for (const ImageFile& f : files) {
    out.locations_.push_back(Location{static_cast<int32_t>(out.files_.size()), 0, 0});
    out.files_.push_back(f.path);
  }
  return out;
}

EncodedImages EncodedImages::from_shards(const std::vector<std::string>& shards, std::vector<int32_t>& labels) {
  EncodedImages out;
  for (const std::string& shard : shards) {
    ShardSampleReader reader(shard, true);
    ShardSample sample;
    int64_t count = 0;
    const auto file = static_cast<int32_t>(out.files_.size());
    while (reader.next(sample)) {
      out.locations_.push_back(Location{file, sample.image_offset, sample.image_size});
      out.members_.push_back(sample.image_member);
      labels.push_back(sample.label);
      ++count;
    }
    out.files_.push_back(shard);
    out.shard_sizes_.push_back(count);
    const int fd = ::open(shard.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ImageReadError("cannot open tar shard '" + shard + "': " + errno_text());
    out.shard_fds_.push_back(fd);
  }
  return out;
}

EncodedImages::~EncodedImages() { close_all(); }

EncodedImages::EncodedImages(EncodedImages&& other) noexcept { *this = std::move(other); }

EncodedImages& EncodedImages::operator=(EncodedImages&& other) noexcept {
  if (this != &other) {
    close_all();
    files_ = std::move(other.files_);
    locations_ = std::move(other.locations_);
    members_ = std::move(other.members_);
    shard_sizes_ = std::move(other.shard_sizes_);
    shard_fds_ = std::move(other.shard_fds_);
    other.shard_fds_.clear();
  }
  return *this;
}

void EncodedImages::close_all() {
  for (int fd : shard_fds_) ::close(fd);
  shard_fds_.clear();
}

std::string EncodedImages::name(int64_t i) const {
  const Location& at = locations_[static_cast<size_t>(i)];
  const std::string& file = files_[static_cast<size_t>(at.file)];
  if (members_.empty()) return file;
  return file + ", member '" + members_[static_cast<size_t>(i)] + "'";
}

void EncodedImages::keep_first(int64_t n) {
  if (n <= 0 || n >= size()) return;
  locations_.resize(static_cast<size_t>(n));
  if (!members_.empty()) members_.resize(static_cast<size_t>(n));
  if (shard_sizes_.empty()) {
    files_.resize(static_cast<size_t>(n));
    return;
  }
  int64_t left = n;
  size_t kept = 0;
  while (kept < shard_sizes_.size() && left > 0) {
    shard_sizes_[kept] = std::min(shard_sizes_[kept], left);
    left -= shard_sizes_[kept++];
  }
  shard_sizes_.resize(kept);
}

uint64_t EncodedImages::read(std::span<const int64_t> samples, std::vector<uint8_t>& buffer,
                             std::vector<std::span<const uint8_t>>& images, std::vector<std::string>& errors) const {
  const size_t n = samples.size();
  buffer.clear();
  images.assign(n, {});
  errors.assign(n, {});
  std::vector<std::pair<uint64_t, uint64_t>> placed(n, {0, 0});  // (start in buffer, size)
  uint64_t bytes = 0;
  for (size_t j = 0; j < n;) {
    const Location& first = locations_[static_cast<size_t>(samples[j])];
    if (shard_fds_.empty()) {  // a folder: a file each
      uint64_t size = 0;
      const uint64_t start = buffer.size();
      errors[j] = read_whole_file(files_[static_cast<size_t>(first.file)], buffer, size);
      placed[j] = {start, size};
      bytes += size;
      ++j;
      continue;
    }
    // A run of samples of the same shard, in file order and close together.
    size_t end = j + 1;
    uint64_t run_end = first.offset + first.size;
    while (end < n) {
      const Location& next = locations_[static_cast<size_t>(samples[end])];
      if (next.file != first.file || next.offset < run_end || next.offset - run_end > kMaxGapBytes ||
          next.offset + next.size - first.offset > kMaxRunBytes)
        break;
      run_end = next.offset + next.size;
      ++end;
    }
    const uint64_t start = buffer.size();
    const uint64_t length = run_end - first.offset;
    buffer.resize(start + length);
    if (read_at(shard_fds_[static_cast<size_t>(first.file)], buffer.data() + start, length, first.offset)) {
      for (size_t k = j; k < end; ++k) {
        const Location& at = locations_[static_cast<size_t>(samples[k])];
        placed[k] = {start + (at.offset - first.offset), at.size};
      }
      bytes += length;
    } else {
      const std::string why = errno ? errno_text() : "the shard is shorter than when it was indexed";
      buffer.resize(start);
      for (size_t k = j; k < end; ++k) errors[k] = "cannot read " + name(samples[k]) + ": " + why;
    }
    j = end;
  }
  for (size_t j = 0; j < n; ++j)
    if (errors[j].empty()) images[j] = std::span<const uint8_t>(buffer.data() + placed[j].first, placed[j].second);
  return bytes;
}

}  // namespace sb

#include "data/cold_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sb {
namespace {

// Pages of `path` in the page cache, and its pages in all; {-1, 0} when it can't be mapped.
std::pair<int64_t, int64_t> resident_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {-1, 0};
  struct stat st {};
  std::pair<int64_t, int64_t> out{-1, 0};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> in_core((size + page - 1) / page);
      if (::mincore(map, size, in_core.data()) == 0) {
        out = {0, static_cast<int64_t>(in_core.size())};
        for (unsigned char c : in_core) out.first += c & 1;
      }
      ::munmap(map, size);
    }
  }
  ::close(fd);
  return out;
}

bool read_whole(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::vector<char> buffer(1 << 16);
  ssize_t got = 0;
  while ((got = ::read(fd, buffer.data(), buffer.size())) > 0) {
  }
  ::close(fd);
  return got == 0;
}

class DroppingSource : public BatchSource {
 public:
  DroppingSource(const BatchSource& inner, const EncodedImages& images) : inner_(inner), images_(images) {}
  int64_t sample_bytes() const override { return inner_.sample_bytes(); }
  void fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position, int64_t row_begin,
            int64_t row_end, std::byte* images, int32_t* labels, SkippedFiles* skipped = nullptr) const override {
    inner_.fill(indices, key, first_position, row_begin, row_end, images, labels, skipped);
    for (int64_t j = row_begin; j < row_end; ++j) drop_cached_pages(images_.file_of(indices[static_cast<size_t>(j)]));
  }

 private:
  const BatchSource& inner_;
  const EncodedImages& images_;
};

}  // namespace

bool drop_cached_pages(const std::string& path, bool write_back_first) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (write_back_first) ::fdatasync(fd);  // dirty pages (a file just written) are not dropped
  const bool dropped = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return dropped;
}

ColdCacheCheck check_cold_cache(const std::string& path) {
  if (!read_whole(path)) return {false, "not defeated (cannot read " + path + ": " + std::strerror(errno) + ")"};
  if (!drop_cached_pages(path, true))
    return {false, "not defeated (posix_fadvise(DONTNEED) refused on " + path + ")"};
  const auto [resident, pages] = resident_pages(path);
  if (resident < 0) return {false, "not defeated (cannot tell: mincore failed on " + path + ")"};
  if (resident > 0)
    return {false, "not defeated (the file system kept " + std::to_string(resident) + " of " + std::to_string(pages) +
                       " pages of " + path + " after posix_fadvise(DONTNEED))"};
  return {true, "dropped after each read (fadvise)"};
}

void drop_files_of_rank(const EncodedImages& images, int ranks, int rank) {
  const std::string* last = nullptr;
  for (int64_t i = rank; i < images.size(); i += ranks) {
    const std::string& file = images.file_of(i);
    if (last && *last == file) continue;  // a shard's samples share a file
    drop_cached_pages(file, true);
    last = &file;
  }
}

std::unique_ptr<BatchSource> dropping_pages_after_reads(const BatchSource& inner, const EncodedImages& images) {
  return std::make_unique<DroppingSource>(inner, images);
}

}  // namespace sb

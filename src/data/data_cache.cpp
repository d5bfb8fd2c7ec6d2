#include "data/data_cache.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <system_error>

#include "core/byte_format.h"
#include "core/cache_file.h"
#include "core/checksums.h"
#include "core/error.h"
#include "data/parallel_decode.h"

namespace sb {

namespace {

constexpr char kMagic[8] = {'S', 'B', 'D', 'A', 'T', 'A', '0', '1'};
// Bounds that no honest file comes near; a field beyond them marks the file as damaged before any
// allocation.
constexpr uint32_t kMaxKeyBytes = 1 << 16;
constexpr uint32_t kMaxNameBytes = 256;
constexpr int32_t kMaxChannels = 64;
constexpr int32_t kMaxSide = 65536;
constexpr int32_t kMaxClasses = 1 << 20;

constexpr CacheFileKind kDataCache{"data cache", "decoding the data set's files instead", "the next run decodes the files again",
                                   uint64_t{16} << 30};

std::string hex8(uint32_t v) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", v);
  return text;
}

void write_split(ByteWriter& w, const Dataset& d) {
  w.text(d.name);
  w.i32(d.channels);
  w.i32(d.height);
  w.i32(d.width);
  w.i32(d.num_classes);
  for (float m : d.mean) w.f32(m);
  for (float s : d.std) w.f32(s);
  w.u64(static_cast<uint64_t>(d.size()));
  w.raw(d.images.data(), d.images.size());
  for (int32_t label : d.labels) w.i32(label);
}

// One split, checked field by field; false with the reason in *why.
bool read_split(ByteReader& r, Dataset& d, const char* split, std::string* why) {
  const std::string at = std::string(split) + " split: ";
  auto fail = [&](const std::string& reason) {
    *why = at + reason + (r.error().empty() ? "" : " (" + r.error() + ")");
    return false;
  };
  if (!r.text(&d.name, kMaxNameBytes)) return fail("bad name field");
  if (!r.i32(&d.channels) || !r.i32(&d.height) || !r.i32(&d.width) || !r.i32(&d.num_classes))
    return fail("cut short in its shape");
  if (d.channels < 1 || d.channels > kMaxChannels || d.height < 1 || d.height > kMaxSide || d.width < 1 ||
      d.width > kMaxSide || d.num_classes < 1 || d.num_classes > kMaxClasses)
    return fail("implausible shape");
  d.mean.resize(static_cast<size_t>(d.channels));
  d.std.resize(static_cast<size_t>(d.channels));
  for (float& m : d.mean)
    if (!r.f32(&m) || !std::isfinite(m)) return fail("bad mean");
  for (float& s : d.std)
    if (!r.f32(&s) || !std::isfinite(s) || !(s > 0.0f)) return fail("bad standard deviation");
  uint64_t count;
  if (!r.u64(&count)) return fail("cut short before its sample count");
  const uint64_t sample_bytes = static_cast<uint64_t>(d.sample_bytes());
  // Each sample takes its pixels and a 4-byte label: the bytes left bound the count before any product.
  if (count == 0 || count > r.left() / (sample_bytes + 4)) return fail("sample count that the file can't hold");
  // The bound above leaves room for the pixels and the labels: these reads can't run out.
  const uint8_t* pixels = nullptr;
  r.view(count * sample_bytes, &pixels);
  d.images.assign(pixels, pixels + count * sample_bytes);
  d.labels.resize(count);
  for (int32_t& label : d.labels) {
    r.i32(&label);
    if (label < 0 || label >= d.num_classes) return fail("label outside 0.." + std::to_string(d.num_classes - 1));
  }
  return true;
}

std::optional<DataCacheFile> refuse(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return std::nullopt;
}

// A file's size, modification time and CRC-32, for the key.
std::string describe_source(const std::string& path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec).string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UserError(path + " can't be read (" + std::strerror(errno) + "); check the dataset directory given to --data");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + " can't be opened; check its permissions");
  std::vector<char> chunk(size_t{1} << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(in.gcount()));
  }
  if (in.bad()) throw UserError(path + " could not be read to its end; check the file system");
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return (ec ? std::filesystem::absolute(path).string() : absolute) + "\t" + std::to_string(st.st_size) + "\t" +
         std::to_string(mtime_ns) + "\t" + hex8(static_cast<uint32_t>(crc)) + "\n";
}

ByteWriter data_cache_file(const std::string& key, const TrainTest& data) {
  ByteWriter w;
  w.reserve(data.train.images.size() + data.test.images.size() + 4 * static_cast<size_t>(data.train.size() + data.test.size()) +
            key.size() + 1024);
  w.raw(kMagic, sizeof kMagic);
  w.u32(kDataCacheVersion);
  w.text(key);
  const size_t length_at = w.size();
  w.u64(0);  // the payload's length and CRC-32, filled in below
  w.u32(0);
  const size_t payload_at = w.size();
  write_split(w, data.train);
  write_split(w, data.test);
  const size_t payload = w.size() - payload_at;
  w.u64_at(length_at, payload);
  w.u32_at(length_at + 8, crc32_of(w.bytes().data() + payload_at, payload));
  return w;
}

}  // namespace

std::string data_cache_key(const std::string& kind, const std::vector<std::string>& files) {
  std::vector<std::string> lines(files.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < files.size(); ++i) tasks.emplace_back([&, i] { lines[i] = describe_source(files[i]); });
  run_decode_tasks(tasks, Decode::Parallel);
  std::string key = kind + "\n";
  for (const std::string& line : lines) key += line;
  return key;
}

std::vector<uint8_t> encode_data_cache(const std::string& key, const TrainTest& data) { return data_cache_file(key, data).take(); }

std::optional<DataCacheFile> decode_data_cache(const uint8_t* bytes, size_t size, std::string* why) {
  ByteReader r(bytes, size);
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    return refuse(why, "not a scalebench data cache file (bad magic)");
  r.skip(sizeof kMagic);
  uint32_t version;
  if (!r.u32(&version)) return refuse(why, "cut short in its header (" + r.error() + ")");
  if (version != kDataCacheVersion)
    return refuse(why, "format version " + std::to_string(version) + ", this scalebench reads " + std::to_string(kDataCacheVersion));
  DataCacheFile file;
  uint64_t payload_bytes;
  uint32_t crc;
  if (!r.text(&file.key, kMaxKeyBytes) || !r.u64(&payload_bytes) || !r.u32(&crc)) return refuse(why, "bad header (" + r.error() + ")");
  if (payload_bytes != r.left())
    return refuse(why, "the header says " + std::to_string(payload_bytes) + " payload bytes but " + std::to_string(r.left()) +
                           " follow (cut short or appended to)");
  if (crc32_of(r.here(), r.left()) != crc) return refuse(why, "the payload's checksum does not match (damaged)");
  std::string reason;
  if (!read_split(r, file.data.train, "train", &reason) || !read_split(r, file.data.test, "test", &reason))
    return refuse(why, reason);
  if (r.left() != 0) return refuse(why, std::to_string(r.left()) + " unexpected bytes after the test split");
  return file;
}

DataCache::DataCache(const std::string& folder, std::string key) : key_(std::move(key)) {
  // The file is named by the kind and the source paths alone (each key line up to its first tab): files
  // that change in place meet their old cache file, refuse it with a warning and replace it.
  std::string paths;
  for (size_t line = 0; line < key_.size();) {
    const size_t end = std::min(key_.find('\n', line), key_.size());
    paths.append(key_, line, std::min(key_.find('\t', line), end) - line).push_back('\n');
    line = end + 1;
  }
  const std::string kind = key_.substr(0, key_.find('\n'));
  path_ = (std::filesystem::path(folder) / ("data-" + kind + "-" + name_digest(paths) + ".sbdata")).string();
}

std::optional<TrainTest> DataCache::read() const {
  std::string why;
  std::optional<DataCacheFile> file = read_cache_file<DataCacheFile>(kDataCache, path_, decode_data_cache, &why);
  if (file && file->key == key_) return std::move(file->data);
  if (file) why = "written for other source files (" + file->key.substr(0, file->key.find('\n')) + ", or files changed since)";
  if (!why.empty()) warn_ignored_cache_file(kDataCache, path_, why);  // empty: no file yet, the files are decoded
  return std::nullopt;
}

void DataCache::write(const TrainTest& data) const { save_cache_file(kDataCache, path_, data_cache_file(key_, data), Flush::NotNeeded); }

}  // namespace sb

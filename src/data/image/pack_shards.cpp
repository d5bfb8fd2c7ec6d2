#include "data/image/pack_shards.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/os_error.h"
#include "data/image/image_folder.h"
#include "data/image/image_format.h"
#include "data/image/pack_check.h"
#include "data/image/tar_writer.h"
#include "data/shuffle.h"

namespace fs = std::filesystem;

namespace sb {
namespace {

// Splits shuffle apart: the same seed gives unrelated orders to train and val.
constexpr uint64_t kValSeedOffset = 0x76616C;  // "val"

void check_destination(const std::string& destination) {
  std::error_code ec;
  const fs::file_status status = fs::status(destination, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw UserError("cannot check the destination '" + destination + "': " + ec.message());
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status))
    throw UserError("the destination '" + destination + "' exists and is not a folder; give a new path or an empty folder");
  if (!fs::is_empty(destination, ec) || ec)
    throw UserError("the destination '" + destination + "' is not empty; pack never overwrites: give a new path or an empty folder");
}

std::vector<uint8_t> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot open '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError("reading '" + path + "' failed");
  return bytes;
}

std::string zero_padded(int64_t value, int width) {
  char text[32];
  std::snprintf(text, sizeof text, "%0*lld", width, static_cast<long long>(value));
  return text;
}

// What the run wrote, removed again when it fails part-way.
struct Written {
  bool created_folder = false;
  std::vector<std::string> files;
  void remove_all(const std::string& destination) const {
    std::error_code ec;
    for (const std::string& f : files) fs::remove(f, ec);
    if (created_folder) fs::remove(destination, ec);
  }
};

int64_t pack_split(const std::string& split, const std::vector<ImageFile>& images, const PackOptions& options, uint64_t seed,
                   Written& written, const std::function<void(const std::string&)>& progress) {
  const std::vector<int64_t> order = philox_permutation(static_cast<int64_t>(images.size()), seed);
  const int key_width = std::max<int>(8, static_cast<int>(std::to_string(images.size()).size()));
  int64_t shards = 0;
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(options.shard_size), ++shards) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(options.shard_size));
    const std::string path = (fs::path(options.destination) / shard_file_name(split, shards)).string();
    TarWriter tar(path);
    written.files.push_back(path);
    for (size_t i = begin; i < end; ++i) {
      const ImageFile& image = images[static_cast<size_t>(order[i])];
      const std::vector<uint8_t> bytes = read_whole_file(image.path);
      const ImageFormat format = sniff_image_format(bytes);
      if (format == ImageFormat::Unknown) {
        throw UserError("'" + image.path + "' is not a JPEG or PNG image (its content is " + describe_unknown_bytes(bytes) +
                        "); pack copies JPEG and PNG files only: convert or remove it");
      }
      const std::string key = zero_padded(static_cast<int64_t>(i), key_width);
      tar.add(key + "." + image_format_extension(format), bytes);
      const std::string label = std::to_string(image.label);
      tar.add(key + ".cls", std::span(reinterpret_cast<const uint8_t*>(label.data()), label.size()));
    }
    tar.finish();
    if (progress) progress(path + ": " + std::to_string(end - begin) + " samples");
  }
  return shards;
}

void write_class_names(const std::string& path, const std::vector<std::string>& classes, Written& written) {
  std::FILE* f = std::fopen(path.c_str(), "wx");  // x: never overwrite
  if (f == nullptr) {
    const int e = errno;
    throw UserError("cannot create '" + path + "': " + std::strerror(e) + "; " + write_error_hint(e));
  }
  written.files.push_back(path);
  bool ok = true;
  for (const std::string& name : classes) ok = ok && std::fprintf(f, "%s\n", name.c_str()) >= 0;
  const int e = errno;
  if (std::fclose(f) != 0 || !ok) throw UserError("writing '" + path + "' failed: " + std::strerror(e) + "; " + write_error_hint(e));
}

// Decodes the split's images; refuses the first that fails (fail), or leaves the failures out and records
// them (skip).
std::vector<ImageFile> decodable(const std::vector<ImageFile>& images, const PackOptions& options, PackSummary& summary) {
  const std::vector<std::string> problems = undecodable_images(images, options.workers);
  std::vector<ImageFile> kept;
  std::vector<std::string> failed;
  for (size_t i = 0; i < images.size(); ++i) {
    if (problems[i].empty()) kept.push_back(images[i]);
    else failed.push_back(problems[i]);
  }
  if (!failed.empty() && options.bad_images == BadImages::Fail) {
    const std::string others = failed.size() > 1 ? " (and " + std::to_string(failed.size() - 1) + " other file(s))" : "";
    throw UserError(failed.front() + others + "; nothing was written: remove or repair it, or give --bad-images skip to "
                    "pack without such files");
  }
  summary.skipped.insert(summary.skipped.end(), failed.begin(), failed.end());
  return kept;
}

}  // namespace

std::string shard_file_name(const std::string& split, int64_t index) { return split + "-" + zero_padded(index, 6) + ".tar"; }

PackSummary pack_image_folder(const PackOptions& options, const std::function<void(const std::string&)>& progress) {
  if (options.shard_size < 1)
    throw UserError("--shard-size " + std::to_string(options.shard_size) + ": a shard holds at least 1 sample");
  const ImageFolder folder = list_image_folder(options.source, options.bad_images);
  check_destination(options.destination);
  PackSummary summary;
  summary.left_out = left_out_lines(folder);
  const std::vector<ImageFile> train = decodable(folder.train, options, summary);
  const std::vector<ImageFile> val = decodable(folder.val, options, summary);
  if (train.empty() || val.empty())
    throw UserError("image folder '" + options.source + "' has no " + (train.empty() ? "train" : "val") +
                    " image that decodes; nothing was written");

  Written written;
  try {
    std::error_code ec;
    written.created_folder = fs::create_directories(options.destination, ec);
    if (ec) throw UserError("cannot create the destination '" + options.destination + "': " + ec.message());
    summary.classes = static_cast<int64_t>(folder.classes.size());
    summary.train_samples = static_cast<int64_t>(train.size());
    summary.val_samples = static_cast<int64_t>(val.size());
    summary.train_shards = pack_split("train", train, options, options.seed, written, progress);
    summary.val_shards = pack_split("val", val, options, options.seed + kValSeedOffset, written, progress);
    write_class_names((fs::path(options.destination) / "classes.txt").string(), folder.classes, written);
    return summary;
  } catch (...) {
    written.remove_all(options.destination);
    throw;
  }
}

}  // namespace sb

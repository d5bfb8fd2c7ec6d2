#include "data/image/shard_samples.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "data/image/tar_header.h"

namespace sb {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_image_extension(const std::string& ext) { return ext == "jpg" || ext == "jpeg" || ext == "png"; }

}  // namespace

bool split_sample_name(const std::string& name, std::string& key, std::string& extension) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string::npos || dot == base) return false;
  key = name.substr(0, dot);
  extension = name.substr(dot + 1);
  return true;
}

int32_t parse_class_index(const std::vector<uint8_t>& text, const std::string& where) {
  size_t i = 0, end = text.size();
  while (i < end && std::isspace(text[i])) ++i;
  while (end > i && std::isspace(text[end - 1])) --end;
  int64_t value = 0;
  bool ok = i < end && end - i <= 10;
  for (size_t j = i; ok && j < end; ++j) {
    ok = text[j] >= '0' && text[j] <= '9';
    value = value * 10 + (text[j] - '0');
  }
  if (!ok || value > INT32_MAX) {
    const std::string shown(reinterpret_cast<const char*>(text.data()), std::min<size_t>(text.size(), 20));
    throw UserError(where + ": the class label '" + shown + "' is not a non-negative decimal integer (a .cls member holds e.g. '3')");
  }
  return static_cast<int32_t>(value);
}

ShardSampleReader::ShardSampleReader(const std::string& path, size_t buffer_bytes) : tar_(path, buffer_bytes) {}

ShardSampleReader::ShardSampleReader(const std::string& path, bool index_only)
    : tar_(path, index_only ? 2 * kTarBlock : kTarReadBuffer), index_only_(index_only) {}

bool ShardSampleReader::next(ShardSample& sample) {
  sample = ShardSample{};
  std::string key, extension;
  bool started = false;
  for (;;) {
    const auto wanted = [this](const std::string& name) {
      std::string k, ext;
      return !index_only_ || !split_sample_name(name, k, ext) || !is_image_extension(lower(ext));
    };
    if (!has_pending_ && !tar_.next(pending_, wanted)) break;
    has_pending_ = true;
    std::string member_key;
    if (!split_sample_name(pending_.name, member_key, extension)) {
      has_pending_ = false;  // no key (no dot): not part of any sample
      continue;
    }
    if (started && member_key != key) break;  // the next sample's first member stays pending
    if (!started) {
      started = true;
      key = member_key;
      sample.key = key;
      sample.offset = pending_.offset;
    }
    has_pending_ = false;
    const std::string where = "tar shard '" + tar_.path() + "', member '" + pending_.name + "' at byte " + std::to_string(pending_.offset);
    const std::string ext = lower(extension);
    if (is_image_extension(ext)) {
      if (!sample.image_member.empty())
        throw UserError(where + ": sample '" + key + "' has a second image (after '" + sample.image_member + "'); a sample holds one");
      sample.image_member = pending_.name;
      sample.image_offset = pending_.data_offset;
      sample.image_size = pending_.size;
      sample.image = std::move(pending_.data);
    } else if (ext == "cls") {
      sample.label = parse_class_index(pending_.data, where);
    }
  }
  if (!started) return false;
  const std::string where = "tar shard '" + tar_.path() + "', sample '" + key + "' at byte " + std::to_string(sample.offset);
  if (sample.image_member.empty()) throw UserError(where + " has no image (" + key + ".jpg, .jpeg or .png)");
  if (sample.label < 0) throw UserError(where + " has no class label (" + key + ".cls)");
  return true;
}

}  // namespace sb

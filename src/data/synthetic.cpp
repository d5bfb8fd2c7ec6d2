#include "data/synthetic.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/philox.h"

namespace sb {

namespace {

constexpr uint64_t kSyntheticTag = 0x53594E5448000000ULL;  // "SYNTH" in the high bytes

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw UserError("synthetic shape '" + text + "' is malformed: " + why +
                  "; expected CxHxW:classes such as 3x32x32:100");
}

int parse_bounded(const std::string& text, std::string_view field, const char* what, long lo, long hi) {
  long value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec == std::errc::result_out_of_range)
    malformed(text, std::string(what) + " '" + std::string(field) + "' is too large");
  if (field.empty() || ec != std::errc() || end != field.data() + field.size())
    malformed(text, std::string(what) + " '" + std::string(field) + "' is not a whole number");
  if (value < lo || value > hi)
    malformed(text, std::string(what) + " " + std::to_string(value) + " is outside " + std::to_string(lo) + ".." +
                        std::to_string(hi));
  return static_cast<int>(value);
}

}  // namespace

SyntheticShape parse_synthetic_shape(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) malformed(text, "the ':classes' part is missing");
  const std::string_view dims(text.data(), colon);
  const std::string_view classes(text.data() + colon + 1, text.size() - colon - 1);
  const size_t x1 = dims.find('x');
  const size_t x2 = x1 == std::string_view::npos ? x1 : dims.find('x', x1 + 1);
  if (x2 == std::string_view::npos || dims.find('x', x2 + 1) != std::string_view::npos)
    malformed(text, std::string(dims).append(" is not three sizes CxHxW"));
  SyntheticShape shape;
  shape.channels = parse_bounded(text, dims.substr(0, x1), "channel count", 1, 4096);
  shape.height = parse_bounded(text, dims.substr(x1 + 1, x2 - x1 - 1), "height", 1, 65536);
  shape.width = parse_bounded(text, dims.substr(x2 + 1), "width", 1, 65536);
  shape.num_classes = parse_bounded(text, classes, "class count", 2, 1000000);
  return shape;
}

std::string to_string(const SyntheticShape& s) {
  return std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width) + ":" +
         std::to_string(s.num_classes);
}

Dataset make_synthetic_split(const SyntheticShape& shape, int64_t count, int split, uint64_t seed) {
  const uint64_t sample_bytes = uint64_t(shape.channels) * uint64_t(shape.height) * uint64_t(shape.width);
  if (count < 1) throw UserError("a synthetic dataset needs at least one sample, not " + std::to_string(count));
  if (sample_bytes > kMaxSyntheticBytes || uint64_t(count) > kMaxSyntheticBytes / sample_bytes)
    throw UserError("synthetic data of " + std::to_string(count) + " samples of " + to_string(shape) +
                    " would need more than " + std::to_string(kMaxSyntheticBytes >> 30) +
                    " GiB; ask for fewer samples or smaller images");
  Dataset d;
  d.name = std::string("synthetic/") + (split == 0 ? "train" : "test");
  d.channels = shape.channels;
  d.height = shape.height;
  d.width = shape.width;
  d.num_classes = shape.num_classes;
  const float stdev = static_cast<float>(std::sqrt((256.0 * 256.0 - 1.0) / 12.0) / 255.0);  // 0.2898
  d.mean.assign(shape.channels, 0.5f);
  d.std.assign(shape.channels, stdev);

  const uint64_t pixel_stream = kSyntheticTag + 2 * uint64_t(split);
  d.images.resize(sample_bytes * uint64_t(count));
  for (uint64_t k = 0; k < d.images.size(); k += 16) {
    const Philox4 block = philox4x32(pixel_stream, k / 16, seed);
    for (uint64_t b = 0; b < 16 && k + b < d.images.size(); ++b)
      d.images[k + b] = static_cast<uint8_t>(block.v[b / 4] >> (8 * (b % 4)));
  }
  d.labels.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    d.labels[i] =
        static_cast<int32_t>(philox4x32(pixel_stream + 1, uint64_t(i), seed).v[0] % uint32_t(shape.num_classes));
  return d;
}

TrainTest make_synthetic(const SyntheticShape& shape, int64_t train_count, int64_t test_count, uint64_t seed) {
  return TrainTest{make_synthetic_split(shape, train_count, 0, seed), make_synthetic_split(shape, test_count, 1, seed)};
}

}  // namespace sb

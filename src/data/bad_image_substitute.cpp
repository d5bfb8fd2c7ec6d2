#include "data/bad_image_substitute.h"

#include <vector>

#include "data/image/decoded_image.h"
#include "data/image/encoded_images.h"

namespace sb {

int64_t substitute_sample(const Dataset& data, int64_t bad,
                          const std::function<bool(int64_t index, std::span<const uint8_t> bytes)>& decodes) {
  std::vector<uint8_t> buffer;
  std::vector<std::span<const uint8_t>> images;
  std::vector<std::string> errors;
  const int64_t n = data.size();
  for (int64_t k = 1; k < n; ++k) {
    const int64_t other = (bad + k) % n;
    data.encoded->read(std::span<const int64_t>(&other, 1), buffer, images, errors);
    if (errors[0].empty() && decodes(other, images[0])) return other;
  }
  return -1;
}

BadImagePolicy::BadImagePolicy(const Dataset& data, BadImages mode, int rank, InputCounters& counters)
    : data_(data), mode_(mode), rank_(rank), counters_(counters) {}

int32_t BadImagePolicy::replace(int64_t bad, const std::string& problem,
                                const std::function<bool(std::span<const uint8_t> bytes)>& decodes,
                                SkippedFiles* skipped) const {
  const std::string rank = "rank " + std::to_string(rank_) + ": ";
  if (mode_ == BadImages::Fail)
    throw ImageDecodeError(rank + problem + "; --bad-images skip trains on past such files and counts them");
  const std::string name = data_.encoded->name(bad);
  if (skipped) skipped->add(name);
  else counters_.add_skipped(name);
  const int64_t other = substitute_sample(data_, bad, [&](int64_t, std::span<const uint8_t> bytes) { return decodes(bytes); });
  if (other < 0)
    throw ImageDecodeError(rank + problem + ", and no other image of the " + std::to_string(data_.size()) + " of '" +
                           data_.name + "' decodes either");
  return data_.labels[static_cast<size_t>(other)];
}

}  // namespace sb

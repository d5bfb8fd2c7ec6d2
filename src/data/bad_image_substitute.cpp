#include "data/bad_image_substitute.h"

#include <string>
#include <vector>

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

}  // namespace sb

#include "data/upscaling_note.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"

namespace sb {

std::string upscaling_note(const Dataset& data) {
  if (!data.streamed() || data.size() == 0) return "";
  constexpr int64_t kSampled = 32;
  const int64_t n = std::min(kSampled, data.size());
  std::vector<int64_t> samples;
  for (int64_t k = 0; k < n; ++k) samples.push_back(k * data.size() / n);  // a folder's first files are one class's
  std::vector<uint8_t> buffer;
  std::vector<std::span<const uint8_t>> images;
  std::vector<std::string> errors;
  data.encoded->read(samples, buffer, images, errors);
  std::map<std::pair<int, int>, int> smaller;  // the sizes of the images smaller than the crop, counted
  int read = 0, small = 0;
  for (size_t j = 0; j < samples.size(); ++j) {
    if (!errors[j].empty()) continue;
    try {
      const ImageSize size = read_image_size(images[j]);
      ++read;
      if (std::min(size.width, size.height) < data.width) {
        ++small;
        ++smaller[{size.width, size.height}];
      }
    } catch (const ImageDecodeError&) {
    }
  }
  if (read == 0 || 2 * small <= read) return "";
  const auto commonest = std::max_element(smaller.begin(), smaller.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto [w, h] = commonest->first;
  const std::string crop = std::to_string(data.width);
  return "upscaling: most images are " + std::to_string(w) + "x" + std::to_string(h) + ", smaller than the " + crop + "x" +
         crop + " crop; give --image-size " + std::to_string(std::min(w, h)) + " (or a model made for that size) to train at their size";
}

}  // namespace sb
